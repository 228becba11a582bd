"""RAGTool: Hello-Agents' knowledge-base tool on Mnemo's pipeline.

    from knowledge.tools import RAGTool
    rag = RAGTool(rag_namespace="default", user_id="user123")
    rag.run({"action": "add_text", "text": "Python是一种高级编程语言…", "document_id": "python_intro"})
    rag.run({"action": "search", "query": "Python编程语言的历史"})

The six actions and their defaults are Hello-Agents'. add_document and add_text return once the document is
searchable. Everything is scoped to the tool's user, and `clear` clears only the namespace it names.
"""

import time
from pathlib import Path

from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils.translation import gettext as _

from core import stores
from core.limits import MAX_DOCUMENT_TEXT_CHARS, InputRejected, check_text
from core.llm import Budget, get_llm
from core.tooling import ActionTool, Params, ToolInputError, ToolReply, tool_user
from knowledge import services
from knowledge.models import Chunk, Document, DocumentStatus
from knowledge.search import ask, search_chunks

ACTIONS = ("add_document", "add_text", "search", "ask", "stats", "clear")
# The actions that change the knowledge base: over the API and MCP they need a key with the write scope.
WRITE_ACTIONS = frozenset({"add_document", "add_text", "clear"})


class RAGTool(ActionTool):
    actions = ACTIONS
    write_actions = WRITE_ACTIONS
    refusals = (InputRejected, services.KnowledgeError)
    name = "rag"
    description = (
        "Knowledge base tool: add documents and texts, search, answer with citations, stats and clear (Mnemo)"
    )

    def __init__(
        self,
        knowledge_base_path: str = "./knowledge_base",
        qdrant_url: str | None = None,
        qdrant_api_key: str | None = None,
        collection_name: str = "rag_knowledge_base",
        rag_namespace: str = "default",
        user_id: str = "default_user",
        allow_file_paths: bool = True,
        budget: Budget | None = None,
    ):
        # qdrant_url/qdrant_api_key are accepted for compatibility; Mnemo's settings choose the vector store.
        self.knowledge_base_path = Path(knowledge_base_path)
        self.collection_name = collection_name
        self.rag_namespace = services.check_namespace(rag_namespace)
        self.user_id = user_id
        self.user = tool_user(user_id)
        # Over the API a file path would read the server's disk: there, documents come as uploads instead.
        self.allow_file_paths = allow_file_paths
        # `ask` and the advanced search stop when the request's client leaves (core.llm.Budget.for_request).
        self.budget = budget

    def _namespace(self, params: Params) -> str:
        return services.check_namespace(params.text("namespace", self.rag_namespace))

    def _chunking(self, params: Params) -> tuple[int, int]:
        return params.integer("chunk_size", 800, low=50, high=8000), params.integer(
            "chunk_overlap", 100, low=0, high=4000
        )

    def _added(
        self,
        accepted: services.Accepted,
        started: float,
        label: str,
        namespace: str,
        *,
        as_text: bool = False,
    ) -> ToolReply:
        document = Document.objects.get(pk=accepted.document.pk)
        data = {
            "document_id": str(document.pk),
            "status": document.status,
            "chunks": document.chunks.count(),
            "duplicate": not accepted.created,
            "namespace": namespace,
            "notice": document.notice,
        }
        if document.status == DocumentStatus.FAILED:
            text = _("⚠️ Could not read the content of: %(label)s (%(error)s)") % {
                "label": label,
                "error": document.error_shown,
            }
            return ToolReply(False, text, data)
        elapsed = round((time.perf_counter() - started) * 1000)
        added = (
            _("✅ Text added to the knowledge base: %(label)s")
            if as_text
            else _("✅ Document added to the knowledge base: %(label)s")
        )
        lines = [
            added % {"label": label},
            _("📊 Chunks: %(chunks)d") % {"chunks": data["chunks"]},
            _("⏱️ Processing time: %(ms)dms") % {"ms": elapsed},
            _("📝 Namespace: %(namespace)s") % {"namespace": namespace},
            _("🆔 Document ID: %(id)s") % {"id": document.pk},
        ]
        if not accepted.created:
            lines.append(_("♻️ This content is already in the namespace; not added again"))
        if document.notice:
            lines.append(f"⚠️ {document.notice_shown}")
        return ToolReply(True, "\n".join(lines), {**data, "elapsed_ms": elapsed})

    def _add_document(self, params: Params) -> ToolReply:
        if not self.allow_file_paths:
            raise ToolInputError(
                _(
                    "add_document with a file_path is not available over the API: "
                    "upload the file to POST /api/v1/documents"
                )
            )
        file_path = Path(params.text("file_path", required=True)).expanduser()
        if not file_path.is_file():
            return ToolReply(False, _("❌ No such file: %(path)s") % {"path": file_path}, status=404)
        namespace = self._namespace(params)
        chunk_size, chunk_overlap = self._chunking(params)
        started = time.perf_counter()
        upload = SimpleUploadedFile(file_path.name, file_path.read_bytes())
        accepted = services.document_create(
            user=self.user,
            file=upload,
            namespace=namespace,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            background=False,
        )
        return self._added(accepted, started, file_path.name, namespace)

    def _add_text(self, params: Params) -> ToolReply:
        text = check_text(params.text("text", required=True), "text", MAX_DOCUMENT_TEXT_CHARS)
        namespace = self._namespace(params)
        chunk_size, chunk_overlap = self._chunking(params)
        document_id = (
            check_text(params.text("document_id", ""), "document_id", 255) or f"text_{int(time.time())}"
        )
        started = time.perf_counter()
        accepted = services.document_create_from_text(
            user=self.user,
            text=text,
            title=document_id,
            namespace=namespace,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            background=False,
        )
        return self._added(accepted, started, document_id, namespace, as_text=True)

    def _query(self, params: Params) -> str:
        query = params.text("query") or params.text("question")
        if not query:
            raise ToolInputError(_("missing required parameter 'query' (or 'question')"))
        return query

    def _advanced(self, params: Params) -> bool:
        value = params.raw.get("enable_advanced_search", False)
        if not isinstance(value, bool):
            raise ToolInputError(_("parameter 'enable_advanced_search' must be true or false"))
        return value

    def _search(self, params: Params) -> ToolReply:
        query = self._query(params)
        advanced = self._advanced(params)
        result = search_chunks(
            user=self.user,
            query=query,
            namespaces=[self._namespace(params)],
            limit=params.integer("limit", 5, high=50),
            min_score=params.number("min_score", 0.1, low=0.0, high=100.0),
            mqe=advanced,
            hyde=advanced,
            budget=self.budget,
        )
        data = {
            "results": [hit.as_dict() for hit in result.hits],
            "notice": result.notice,
        }
        if not result.hits:
            return ToolReply(
                True,
                _("🔍 Nothing found for '%(query)s'") % {"query": query}
                + (f"\n⚠️ {result.notice}" if result.notice else ""),
                data,
            )
        lines = [_("Search results:")]
        for index, hit in enumerate(result.hits, start=1):
            chunk = hit.chunk
            lines.append(
                f"\n{index}. "
                + _("Document: **%(title)s** (similarity: %(score).3f, chunk ID: %(id)s)")
                % {"title": chunk.document.title, "score": hit.score, "id": chunk.pk}
            )
            snippet = chunk.text if len(chunk.text) <= 200 else chunk.text[:200] + "..."
            lines.append(f"   {snippet}")
            if chunk.location:
                lines.append("   " + _("Location: %(location)s") % {"location": chunk.location})
            if chunk.heading_path:
                lines.append("   " + _("Section: %(section)s") % {"section": chunk.heading_path})
        if result.notice:
            lines.append(f"\n⚠️ {result.notice}")
        return ToolReply(True, "\n".join(lines), data)

    def _ask(self, params: Params) -> ToolReply:
        question = self._query(params)
        advanced = self._advanced(params)
        include_citations = params.flag("include_citations", True)
        answer = ask(
            user=self.user,
            question=question,
            namespaces=[self._namespace(params)],
            limit=params.integer("limit", 5, high=50),
            mqe=advanced,
            hyde=advanced,
            max_chars=params.integer("max_chars", 1200, low=100, high=20000),
            budget=self.budget,
        )
        data = {
            "answer": answer.text,
            "citations": answer.citations,
            "llm_used": answer.llm_used,
            "notice": answer.notice,
        }
        lines = [f"🤖 {answer.text}" if answer.llm_used else answer.text]
        if answer.citations and include_citations:
            lines.append("\n" + _("📚 Citations:"))
            for citation in answer.citations:
                where = f", {citation['location']}" if citation["location"] else ""
                chunk_id = _("(chunk ID: %(id)s)") % {"id": citation["chunk_id"]}
                lines.append(
                    f"  [{citation['n']}] {citation['document_title']}{where} #{citation['ordinal']} {chunk_id}"
                )
        if answer.notice:
            lines.append(f"\n⚠️ {answer.notice}")
        return ToolReply(True, "\n".join(lines), data)

    def _stats(self, params: Params) -> ToolReply:
        namespace = self._namespace(params)
        documents = Document.objects.filter(user=self.user, namespace=namespace)
        chunks = Chunk.objects.for_user(self.user).filtered(namespaces=[namespace]).count()
        dimensions = stores.embedding_set().dimensions
        llm = get_llm()
        data = {
            "namespace": namespace,
            "collection_name": self.collection_name,
            "documents": documents.count(),
            "ready_documents": documents.filter(status=DocumentStatus.READY).count(),
            "chunks": chunks,
            "vector_dimensions": dimensions,
            "vector_store": stores.vector_store().backend,
            "llm": llm.model if llm else None,
        }
        lines = [
            _("📊 **Knowledge base statistics**"),
            _("📝 Namespace: %(namespace)s") % {"namespace": namespace},
            _("📋 Collection: %(name)s") % {"name": self.collection_name},
            _("📂 Storage root: %(path)s") % {"path": self.knowledge_base_path},
            _("📦 Vector store: %(store)s") % {"store": data["vector_store"]},
            _("📄 Documents: %(documents)d (%(ready)d ready)")
            % {"documents": data["documents"], "ready": data["ready_documents"]},
            _("📊 Chunks in the namespace: %(chunks)d") % {"chunks": chunks},
            _("🔢 Vector dimensions: %(dimensions)s")
            % {"dimensions": ", ".join(f"{k}={v}" for k, v in dimensions.items())},
            _("🟢 **System status**"),
            _("✅ RAG pipeline: working"),
            (_("✅ LLM: %(model)s") % {"model": llm.model}) if llm else _("⚪ LLM: none (retrieval only)"),
        ]
        return ToolReply(True, "\n".join(lines), data)

    def _clear(self, params: Params) -> ToolReply:
        namespace = self._namespace(params)
        if params.raw.get("confirm") is not True:
            return ToolReply(
                False,
                _(
                    "⚠️ Dangerous: clearing the knowledge base deletes everything in this namespace!\n"
                    "Send confirm=true to go ahead."
                ),
                {"namespace": namespace},
            )
        count = services.clear_namespace(user=self.user, namespace=namespace)
        return ToolReply(
            True,
            _("✅ Knowledge base cleared (namespace: %(namespace)s, %(count)d documents)")
            % {"namespace": namespace, "count": count},
            {"deleted_documents": count},
        )

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
    description = "知识库工具：添加文档与文本、检索、问答（带引用）、统计与清空 (Mnemo)"

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

    def _added(self, accepted: services.Accepted, started: float, label: str, namespace: str) -> ToolReply:
        document = Document.objects.get(pk=accepted.document.pk)
        data = {
            "document_id": str(document.pk),
            "status": document.status,
            "chunks": document.chunks.count(),
            "duplicate": not accepted.created,
            "namespace": namespace,
        }
        if document.status == DocumentStatus.FAILED:
            return ToolReply(False, f"⚠️ 未能从文件解析内容: {label}（{document.error}）", data)
        elapsed = round((time.perf_counter() - started) * 1000)
        duplicate = "\n♻️ 该内容已在此命名空间中，未重复添加" if not accepted.created else ""
        return ToolReply(
            True,
            f"✅ 文档已添加到知识库: {label}\n📊 分块数量: {data['chunks']}\n⏱️ 处理时间: {elapsed}ms\n"
            f"📝 命名空间: {namespace}\n🆔 文档ID: {document.pk}{duplicate}",
            {**data, "elapsed_ms": elapsed},
        )

    def _add_document(self, params: Params) -> ToolReply:
        if not self.allow_file_paths:
            raise ToolInputError(
                "add_document with a file_path is not available over the API: upload the file to POST /api/v1/documents"
            )
        file_path = Path(params.text("file_path", required=True)).expanduser()
        if not file_path.is_file():
            return ToolReply(False, f"❌ 文件不存在: {file_path}", status=404)
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
        reply = self._added(accepted, started, document_id, namespace)
        if reply.ok:
            reply.text = reply.text.replace("✅ 文档已添加到知识库", "✅ 文本已添加到知识库", 1)
        return reply

    def _query(self, params: Params) -> str:
        query = params.text("query") or params.text("question")
        if not query:
            raise ToolInputError("missing required parameter 'query' (or 'question')")
        return query

    def _advanced(self, params: Params) -> bool:
        value = params.raw.get("enable_advanced_search", False)
        if not isinstance(value, bool):
            raise ToolInputError("parameter 'enable_advanced_search' must be true or false")
        return value

    def _search(self, params: Params) -> ToolReply:
        query = self._query(params)
        advanced = self._advanced(params)
        result = search_chunks(
            user=self.user,
            query=query,
            namespaces=[self._namespace(params)],
            limit=params.integer("limit", 5, high=50),
            min_score=params.number("min_score", 0.1, low=0.0, high=1.0),
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
                f"🔍 未找到与 '{query}' 相关的内容" + (f"\n⚠️ {result.notice}" if result.notice else ""),
                data,
            )
        lines = ["搜索结果："]
        for index, hit in enumerate(result.hits, start=1):
            chunk = hit.chunk
            lines.append(
                f"\n{index}. 文档: **{chunk.document.title}** (相似度: {hit.score:.3f}, 分块ID: {chunk.pk})"
            )
            snippet = chunk.text if len(chunk.text) <= 200 else chunk.text[:200] + "..."
            lines.append(f"   {snippet}")
            if chunk.heading_path:
                lines.append(f"   章节: {chunk.heading_path}")
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
            lines.append("\n📚 引用:")
            for citation in answer.citations:
                lines.append(
                    f"  [{citation['n']}] {citation['document_title']} #{citation['ordinal']} (分块ID: {citation['chunk_id']})"
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
            "📊 **RAG 知识库统计**",
            f"📝 命名空间: {namespace}",
            f"📋 集合名称: {self.collection_name}",
            f"📂 存储根路径: {self.knowledge_base_path}",
            f"📦 存储类型: {data['vector_store']}",
            f"📄 文档数: {data['documents']} (就绪 {data['ready_documents']})",
            f"📊 文档分块数: {chunks}",
            f"🔢 向量维度: {', '.join(f'{k}={v}' for k, v in dimensions.items())}",
            "🟢 **系统状态**",
            "✅ RAG 管道: 正常",
            f"{'✅' if llm else '⚪'} LLM 连接: {'已配置 ' + llm.model if llm else '未配置 (仅检索)'}",
        ]
        return ToolReply(True, "\n".join(lines), data)

    def _clear(self, params: Params) -> ToolReply:
        namespace = self._namespace(params)
        if params.raw.get("confirm") is not True:
            return ToolReply(
                False,
                "⚠️ 危险操作：清空知识库将删除该命名空间的所有数据！\n请使用 confirm=true 参数确认执行。",
                {"namespace": namespace},
            )
        count = services.clear_namespace(user=self.user, namespace=namespace)
        return ToolReply(
            True,
            f"✅ 知识库已成功清空（命名空间：{namespace}，{count} 个文档）",
            {"deleted_documents": count},
        )

import re

import pytest

from knowledge.mirror import COLLECTION, chunk_store
from knowledge.models import Chunk, Document
from knowledge.tools import ACTIONS, RAGTool

pytestmark = pytest.mark.django_db(transaction=True)

TUTORIAL_TEXTS = {
    "python_intro": "Python是一种高级编程语言，由Guido van Rossum于1991年首次发布。Python的设计哲学强调代码的可读性和简洁的语法。",
    "ml_basics": "机器学习是人工智能的一个分支，通过算法让计算机从数据中学习模式。主要包括监督学习、无监督学习和强化学习三种类型。",
    "rag_concept": "RAG（检索增强生成）是一种结合信息检索和文本生成的AI技术。它通过检索相关知识来增强大语言模型的生成能力。",
}


@pytest.fixture
def rag() -> RAGTool:
    return RAGTool(rag_namespace="default", user_id="user123")


def add_tutorial_texts(rag: RAGTool) -> None:
    for document_id, text in TUTORIAL_TEXTS.items():
        reply = rag.run({"action": "add_text", "text": text, "document_id": document_id})
        assert reply.startswith("✅ 文本已添加到知识库"), reply


def test_the_tutorials_example_ranks_the_python_text_first(rag):
    add_tutorial_texts(rag)
    reply = rag.run({"action": "search", "query": "Python编程语言的历史", "limit": 3, "min_score": 0.1})
    lines = reply.splitlines()
    assert lines[0] == "搜索结果："
    assert "文档: **python_intro**" in lines[2]


def test_add_text_returns_once_searchable_with_chunks_and_time(rag):
    reply = rag.run(
        {"action": "add_text", "text": TUTORIAL_TEXTS["rag_concept"], "document_id": "rag_concept"}
    )
    assert re.search(r"📊 分块数量: 1\n⏱️ 处理时间: \d+ms\n📝 命名空间: default", reply)
    document = Document.objects.get(title="rag_concept")
    assert document.status == "ready"
    assert chunk_store().count(COLLECTION, {"document_id": str(document.pk)}) == 1


def test_add_document_reads_a_file(rag, tmp_path):
    path = tmp_path / "guide.md"
    path.write_text("# Guide\n\n## Install\n\nRun make run to start Mnemo.\n", encoding="utf-8")
    reply = rag.run({"action": "add_document", "file_path": str(path)})
    assert reply.startswith("✅ Document added to the knowledge base: guide.md")
    chunk = Chunk.objects.get()
    assert chunk.heading_path == "Guide > Install"
    assert "找不到" not in rag.run({"action": "search", "query": "how to start Mnemo"})


def test_the_same_text_twice_is_not_duplicated(rag):
    rag.run({"action": "add_text", "text": TUTORIAL_TEXTS["ml_basics"], "document_id": "ml"})
    again = rag.run({"action": "add_text", "text": TUTORIAL_TEXTS["ml_basics"], "document_id": "ml"})
    assert "未重复添加" in again
    assert Document.objects.count() == 1


def test_namespaces_isolate_and_clear_only_clears_one(rag):
    other_ns = RAGTool(rag_namespace="research", user_id="user123")
    rag.run({"action": "add_text", "text": TUTORIAL_TEXTS["python_intro"], "document_id": "p"})
    other_ns.run({"action": "add_text", "text": TUTORIAL_TEXTS["python_intro"], "document_id": "p"})
    assert Document.objects.count() == 2  # the same file in two namespaces: two independent copies
    refused = other_ns.run({"action": "clear"})
    assert refused.startswith("⚠️ Dangerous: clearing the knowledge base")
    assert other_ns.run({"action": "clear", "confirm": True, "language": "zh-hans"}).startswith(
        "✅ 知识库已成功清空（命名空间：research"
    )
    assert list(Document.objects.values_list("namespace", flat=True)) == ["default"]
    assert "python" in rag.run({"action": "search", "query": "Python"}).lower()
    assert chunk_store().count(COLLECTION, {"namespace": "research"}) == 0


def test_a_user_never_sees_another_users_knowledge(rag):
    RAGTool(user_id="mallory").run(
        {"action": "add_text", "text": "mallory's secret recipe uses saffron", "document_id": "s"}
    )
    assert "Nothing found" in rag.run({"action": "search", "query": "secret recipe saffron"})
    assert "saffron" not in rag.run({"action": "ask", "question": "what is in the secret recipe?"})


def test_ask_without_an_llm_returns_cited_passages_and_a_notice(rag):
    add_tutorial_texts(rag)
    reply = rag.execute({"action": "ask", "question": "RAG是什么？"})
    assert reply.ok
    assert reply.data["llm_used"] is False
    # A question in Chinese is answered in Chinese (core.tooling.reply_language), the notice too.
    assert reply.data["notice"] == "未配置 LLM（LLM_BASE_URL）：以下是最相关的段落，而不是生成的回答。"
    english = rag.execute({"action": "ask", "question": "RAG是什么？", "language": "en"})
    assert english.data["notice"].startswith("No LLM is configured (LLM_BASE_URL)")
    assert reply.data["citations"][0]["n"] == 1
    assert reply.data["citations"][0]["document_title"] == "rag_concept"
    assert "[1]" in reply.text


def test_unknown_action_and_missing_parameters(rag):
    reply = rag.run({"action": "index"})
    assert "Unknown action: index" in reply
    assert all(action in reply for action in ACTIONS)
    assert "'text'" in rag.run({"action": "add_text"})
    assert "'query'" in rag.run({"action": "search"})
    assert "No such file" in rag.run({"action": "add_document", "file_path": "/nonexistent/file.pdf"})


def test_stats_counts_this_namespace(rag):
    add_tutorial_texts(rag)
    reply = rag.execute({"action": "stats"})
    assert (reply.data["documents"], reply.data["chunks"]) == (3, 3)
    assert "📊 Chunks in the namespace: 3" in reply.text
    assert "📊 文档分块数: 3" in rag.execute({"action": "stats", "language": "zh-hans"}).text

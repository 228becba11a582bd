import json
import uuid

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from core import stores
from knowledge.mirror import COLLECTION, chunk_store
from knowledge.models import Chunk, Document

pytestmark = pytest.mark.django_db(transaction=True)

GUIDE = """# Mnemo guide

## Install

Run `make run` to create the virtualenv and start the server.

## 检索

Mnemo 把每个文档切成带标题路径的分块，然后同时用向量和关键词检索。
"""


def upload(client, key, name, data, **fields):
    return client.post(
        "/api/v1/documents",
        {"file": SimpleUploadedFile(name, data), **fields},
        HTTP_X_API_KEY=key,
    )


def post_json(client, key, path, body):
    return client.post(
        f"/api/v1{path}", data=json.dumps(body), content_type="application/json", HTTP_X_API_KEY=key
    )


@pytest.fixture
def other_key(other_user):
    from core.services import api_key_create

    return api_key_create(user=other_user, name="mallory")[1]


def test_upload_ingests_in_the_background_and_becomes_searchable(client, write_key):
    response = upload(client, write_key, "guide.md", GUIDE.encode())
    assert response.status_code == 201
    body = response.json()
    assert body["duplicate"] is False
    # Tests run background tasks inline, so by now the state has moved all the way.
    status = client.get(f"/api/v1/documents/{body['id']}/status", HTTP_X_API_KEY=write_key).json()
    assert (status["status"], status["progress"]) == ("ready", 100)
    results = post_json(client, write_key, "/knowledge/search", {"query": "向量和关键词检索"}).json()[
        "results"
    ]
    assert results[0]["heading_path"] == "Mnemo guide > 检索"
    # MiniLM reads no Chinese, so a Chinese query is not embedded by it and it has no part here.
    assert set(results[0]["scores"]) == {"dense", "lexical", "fused", "dense_use", "dense_bge_zh"}


def test_wait_true_answers_when_searchable(client, write_key):
    response = upload(
        client, write_key, "guide.md", GUIDE.encode(), wait="true", chunk_size="100", chunk_overlap="10"
    )
    assert response.status_code == 201
    assert response.json()["status"] == "ready"
    assert response.json()["chunk_size"] == 100


def test_the_same_file_twice_in_a_namespace_is_one_document_but_two_namespaces_get_two(client, write_key):
    first = upload(client, write_key, "guide.md", GUIDE.encode()).json()
    again = upload(client, write_key, "copy-of-guide.md", GUIDE.encode())
    assert again.status_code == 200
    assert again.json()["id"] == first["id"] and again.json()["duplicate"] is True
    other = upload(client, write_key, "guide.md", GUIDE.encode(), namespace="team")
    assert other.status_code == 201
    assert Document.objects.count() == 2
    assert (
        chunk_store().count(COLLECTION, {"namespace": "team"})
        == Chunk.objects.filter(namespace="team").count()
    )


def test_delete_removes_chunks_and_vectors(client, write_key):
    document_id = upload(client, write_key, "guide.md", GUIDE.encode()).json()["id"]
    assert chunk_store().count(COLLECTION, {"document_id": document_id}) > 0
    assert client.delete(f"/api/v1/documents/{document_id}", HTTP_X_API_KEY=write_key).status_code == 204
    assert not Chunk.objects.exists()
    assert chunk_store().count(COLLECTION, {"document_id": document_id}) == 0


def test_chunks_and_detail(client, write_key):
    document_id = upload(client, write_key, "guide.md", GUIDE.encode()).json()["id"]
    chunks = client.get(f"/api/v1/documents/{document_id}/chunks", HTTP_X_API_KEY=write_key).json()
    assert chunks["count"] >= 1
    assert all(chunk["token_count"] > 0 for chunk in chunks["items"])
    detail = client.get(f"/api/v1/documents/{document_id}", HTTP_X_API_KEY=write_key).json()
    assert "## 检索" in detail["markdown"]


@pytest.mark.parametrize(
    ("name", "data", "status", "message"),
    [
        ("empty.txt", b"", 422, "empty"),
        ("tool.exe", b"MZ\x90\x00", 415, "unsupported file type .exe"),
        ("report.pdf", b"PK\x03\x04" + b"\x00" * 40, 415, ""),
    ],
)
def test_bad_files_get_a_clear_4xx_and_leave_nothing(client, write_key, name, data, status, message):
    response = upload(client, write_key, name, data)
    assert response.status_code == status, response.content
    assert message.lower() in response.json()["detail"].lower()
    assert not Document.objects.exists()


def test_a_file_over_the_size_limit_is_413(client, write_key, settings):
    settings.MNEMO_MAX_UPLOAD_MB = 1
    response = upload(client, write_key, "big.txt", b"a" * (1024 * 1024 + 1))
    assert response.status_code == 413
    assert "MNEMO_MAX_UPLOAD_MB" in response.json()["detail"]
    assert not Document.objects.exists()


def test_a_corrupt_pdf_fails_with_the_reason_and_no_chunks(client, write_key):
    response = upload(client, write_key, "broken.pdf", b"%PDF-1.7\n" + bytes(range(256)) * 20)
    document_id = response.json()["id"]
    status = client.get(f"/api/v1/documents/{document_id}/status", HTTP_X_API_KEY=write_key).json()
    assert status["status"] == "failed"
    assert status["error"]
    assert not Chunk.objects.exists()
    assert chunk_store().count(COLLECTION) == 0


def test_an_embedding_failure_fails_the_document_and_stores_no_vectors(client, write_key, monkeypatch):
    from core.embedders.base import EmbeddingError

    embedding_set = stores.embedding_set()

    def broken(texts):
        raise EmbeddingError("the embedding provider is down (check EMBED_BASE_URL)")

    monkeypatch.setattr(embedding_set, "embed_documents", broken)
    document_id = upload(client, write_key, "guide.md", GUIDE.encode()).json()["id"]
    document = Document.objects.get(pk=document_id)
    assert document.status == "failed"
    assert "EMBED_BASE_URL" in document.error
    assert not Chunk.objects.exists()
    monkeypatch.undo()
    assert (
        client.post(f"/api/v1/documents/{document_id}/retry", HTTP_X_API_KEY=write_key).json()["status"]
        == "ready"
    )
    assert chunk_store().count(COLLECTION, {"document_id": document_id}) == Chunk.objects.count() > 0


def test_a_filename_with_dot_dot_and_odd_unicode_is_made_safe(client, write_key):
    body = upload(client, write_key, "../../etc/\u202egnp.txt\x07", b"hello world").json()
    document = Document.objects.get(pk=body["id"])
    assert "/" not in document.original_name and ".." not in document.original_name
    assert "\u202e" not in document.original_name and "\x07" not in document.original_name
    assert document.file.path.startswith(str(document.file.storage.location))


def test_html_scripts_never_reach_the_markdown(client, write_key):
    html = b"<html><body><h1>Title</h1><p onclick='steal()'>Safe text</p><script>alert(1)</script><a href='javascript:alert(2)'>x</a></body></html>"
    document_id = upload(client, write_key, "page.html", html, wait="true").json()["id"]
    markdown = Document.objects.get(pk=document_id).markdown
    assert "Safe text" in markdown
    for dangerous in ("alert", "<script", "onclick", "javascript:"):
        assert dangerous not in markdown


def test_another_users_documents_are_404_and_never_in_results(client, write_key, other_key):
    theirs = upload(client, other_key, "secret.md", b"# Secret\n\nThe vault code is 4711.").json()["id"]
    for method, path in [
        ("get", f"/api/v1/documents/{theirs}"),
        ("get", f"/api/v1/documents/{theirs}/status"),
        ("get", f"/api/v1/documents/{theirs}/chunks"),
        ("delete", f"/api/v1/documents/{theirs}"),
        ("post", f"/api/v1/documents/{theirs}/retry"),
    ]:
        assert getattr(client, method)(path, HTTP_X_API_KEY=write_key).status_code == 404, path
    assert post_json(client, write_key, "/knowledge/search", {"query": "vault code"}).json()["results"] == []
    assert post_json(client, write_key, "/knowledge/ask", {"query": "vault code"}).json()["citations"] == []
    assert client.get("/api/v1/documents", HTTP_X_API_KEY=write_key).json()["count"] == 0
    assert Document.objects.filter(pk=theirs).exists()


def test_ask_without_llm_cites_passages(client, write_key):
    upload(client, write_key, "guide.md", GUIDE.encode())
    answer = post_json(client, write_key, "/knowledge/ask", {"query": "How do I start the server?"}).json()
    assert answer["llm_used"] is False
    assert "No LLM is configured" in answer["notice"]
    assert answer["citations"][0]["n"] == 1
    assert "[1]" in answer["answer"]


def test_mqe_without_an_llm_says_it_was_skipped(client, write_key):
    upload(client, write_key, "guide.md", GUIDE.encode())
    result = post_json(
        client, write_key, "/knowledge/search", {"query": "start the server", "mqe": True, "hyde": True}
    ).json()
    assert "need an LLM" in result["notice"]
    assert result["results"]


def test_rag_tool_endpoint_refuses_server_file_paths(client, write_key):
    reply = post_json(
        client, write_key, "/tools/rag", {"action": "add_document", "file_path": "/etc/passwd"}
    ).json()
    assert reply["ok"] is False
    assert "POST /api/v1/documents" in reply["text"]
    assert not Document.objects.exists()
    added = post_json(
        client,
        write_key,
        "/tools/rag",
        {"action": "add_text", "text": "RAG 结合检索与生成", "document_id": "r"},
    ).json()
    assert added["ok"] is True
    found = post_json(client, write_key, "/tools/rag", {"action": "search", "query": "检索与生成"}).json()
    assert found["data"]["results"][0]["document_title"] == "r"


def test_cancel_stops_an_ingestion(client, write_key, user):
    from knowledge.ingest import ingest
    from knowledge.services import document_cancel

    document = Document.objects.create(user=user, title="t", sha256=uuid.uuid4().hex * 2, status="queued")
    document_cancel(document=document)
    assert ingest(str(document.pk)).status == "cancelled"
    assert not Chunk.objects.exists()


def test_a_chunk_deleted_by_any_path_leaves_no_point_and_resync_removes_orphans(client, write_key):
    from django.core.management import call_command

    from core.vectorstore import Point

    def points() -> set[str]:
        return set(chunk_store().ids(COLLECTION))

    text = GUIDE + "\n## 第三节\n\n第三段讲如何删除文档。\n"
    document_id = upload(
        client, write_key, "guide.md", text.encode(), chunk_size="100", chunk_overlap="0"
    ).json()
    chunks = list(Chunk.objects.filter(document_id=document_id["id"]).order_by("ordinal"))
    assert len(chunks) >= 3 and points() == {str(chunk.pk) for chunk in chunks}

    Chunk.objects.filter(pk=chunks[0].pk).delete()  # a queryset, not the service
    chunks[1].delete()  # a model instance, as the admin does
    assert points() == {str(chunk.pk) for chunk in chunks[2:]}

    Document.objects.filter(pk=document_id["id"]).delete()  # the cascade takes the other chunks
    assert points() == set()

    # A point whose row went without any signal (raw SQL, a lost task): resync_mirrors removes it.
    stray = str(uuid.uuid4())
    dense = {name: [0.1] * size for name, size in stores.embedding_set().dimensions.items()}
    chunk_store().upsert(COLLECTION, [Point(stray, dense=dense, payload={"user_id": "0"})])
    call_command("resync_mirrors", stdout=open("/dev/null", "w"))
    assert points() == set()

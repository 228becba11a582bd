"""The knowledge pages: library (multi-file upload, live rows, filters, actions), document detail, retrieval test."""

import json
import os
import uuid
from html.parser import HTMLParser

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from core import hybrid
from knowledge.markdown import ALLOWED_TAGS, render_markdown, sanitise_html
from knowledge.models import Chunk, Document, DocumentStatus
from knowledge.services import document_create
from knowledge.views import CHUNKS_PER_PAGE, chunk_url

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}

GUIDE = """# Mnemo guide

## Install

Run `make run` to create the virtualenv and start the server.

## 检索

Mnemo 把每个文档切成带标题路径的分块，然后同时用向量和关键词检索。
"""


def md_file(name: str = "guide.md", text: str = GUIDE) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode())


def upload(client: Client, *files, headers: dict | None = None, **fields):
    data = {
        "namespace": "default",
        "chunk_size": "800",
        "chunk_overlap": "100",
        **fields,
        "files": list(files),
    }
    return client.post(reverse("document_upload"), data, **(headers or {}))


def upload_panel(client: Client, *files, **fields):
    return upload(client, *files, headers={**HTMX, "HTTP_HX_TARGET": "upload-panel"}, **fields)


def make_document(
    user, *, title="notes", status=DocumentStatus.READY, namespace="default", **fields
) -> Document:
    """A row without the pipeline: fast, and the state is exactly what the test says."""
    fields = {"progress": 100 if status == DocumentStatus.READY else 0, "size": 1234, **fields}
    return Document.objects.create(
        user=user,
        title=title,
        original_name=f"{title}.md",
        namespace=namespace,
        sha256=uuid.uuid4().hex * 2,
        mime="md",
        status=status,
        **fields,
    )


def add_chunks(document: Document, count: int, text="chunk text {i}") -> list[Chunk]:
    return Chunk.objects.bulk_create(
        Chunk(
            document=document,
            user_id=document.user_id,
            namespace=document.namespace,
            ordinal=i,
            heading_path="Guide > Part",
            text=text.format(i=i),
            token_count=10 + i,
        )
        for i in range(count)
    )


def row_htmx(document: Document) -> dict:
    return {**HTMX, "HTTP_HX_TARGET": f"document-{document.pk}"}


def table(client: Client, query: str = "", **headers):
    return client.get(reverse("library") + query, HTTP_HX_TARGET="document-table", **HTMX, **headers)


# --- the library -------------------------------------------------------------------------------------------------


def test_library_lists_my_documents_with_chunk_counts_without_n_plus_1(
    logged_in, user, other_user, django_assert_max_num_queries
):
    for i in range(20):
        add_chunks(make_document(user, title=f"doc {i}"), i % 4)
    make_document(other_user, title="mallory's secret")
    with django_assert_max_num_queries(
        6
    ) as queries:  # session, user, namespaces, count, the page with counts
        response = logged_in.get(reverse("library"))
    assert response.status_code == 200
    # Counted per document in a subquery: grouping the documents would group by their whole Markdown.
    assert not [
        query["sql"] for query in queries.captured_queries if 'GROUP BY "knowledge_document"' in query["sql"]
    ]
    assert len(response.context["page"]) == 20
    counts = {document.title: document.chunk_count for document in response.context["page"]}
    assert counts["doc 3"] == 3 and counts["doc 4"] == 0
    assert "mallory" not in response.text
    assert 'enctype="multipart/form-data"' in response.text
    assert 'name="files"' in response.text and " multiple" in response.text
    assert 'name="chunk_size" value="800"' in response.text
    assert 'name="chunk_overlap" value="100"' in response.text


def test_library_says_images_give_metadata_only_without_an_llm(logged_in, settings):
    settings.LLM_BASE_URL = ""
    html = logged_in.get(reverse("library")).text
    assert (
        "only their metadata (size, format, embedded tags) is extracted, because no LLM is configured" in html
    )
    settings.LLM_BASE_URL = "http://llm.example/v1"
    assert "are described by the configured LLM" in logged_in.get(reverse("library")).text


def test_row_shows_status_progress_size_and_actions(logged_in, user):
    document = make_document(user, title="half way", status=DocumentStatus.EMBEDDING, progress=42, size=2048)
    html = logged_in.get(reverse("library")).text
    assert '<span class="badge status-embedding">embedding</span>' in html
    assert '<progress max="100" value="42"' in html
    assert "2.0\xa0KB" in html
    assert f'hx-post="/knowledge/{document.pk}/cancel/"' in html
    assert 'hx-confirm="Delete “half way” with its chunks and vectors?"' in html


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", {"ready default", "failed team", "queued team", "Lisbon report"}),
        ("?namespace=team", {"failed team", "queued team"}),
        ("?status=failed", {"failed team"}),
        ("?status=active", {"queued team"}),
        ("?status=ready&namespace=default", {"ready default", "Lisbon report"}),
        ("?q=lisbon", {"Lisbon report"}),
        ("?q=team&status=failed", {"failed team"}),
        ("?namespace=nowhere", {"ready default", "failed team", "queued team", "Lisbon report"}),
    ],
)
def test_filters(logged_in, user, query, expected):
    make_document(user, title="ready default")
    make_document(user, title="Lisbon report")
    make_document(user, title="failed team", namespace="team", status=DocumentStatus.FAILED, error="boom")
    make_document(user, title="queued team", namespace="team", status=DocumentStatus.QUEUED)
    response = table(logged_in, query)
    assert response.status_code == 200
    assert "<html" not in response.text
    assert response.text.lstrip().startswith('<section id="document-table"')
    assert {document.title for document in response.context["page"]} == expected


def test_an_unknown_namespace_filter_is_reported(logged_in, user):
    make_document(user)
    response = logged_in.get(reverse("library") + "?namespace=nowhere")
    assert response.status_code == 200
    assert "Namespace: Select a valid choice. nowhere is not one of the available choices." in response.text


def test_the_filter_form_pushes_a_clean_url_and_the_table_reloads_with_its_filters(logged_in, user):
    make_document(user, title="failed team", namespace="team", status=DocumentStatus.FAILED)
    response = table(logged_in, "?q=&namespace=team&status=", HTTP_HX_TRIGGER="document-filters")
    assert response["HX-Push-Url"] == "/knowledge/?namespace=team"
    # The table reloads itself with the same filters when an upload adds documents.
    assert 'hx-get="/knowledge/?namespace=team" hx-trigger="documents-changed from:body"' in response.text
    assert "HX-Push-Url" not in table(logged_in, "?namespace=team")


# --- upload ------------------------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_multi_file_upload_reports_each_file_and_one_bad_file_does_not_stop_the_others(logged_in, user):
    existing = document_create(user=user, file=md_file("guide.md")).document
    response = upload(
        logged_in,
        md_file("notes.md", "# Notes\n\nThe meeting moved to Lisbon."),
        md_file("copy-of-guide.md"),
        SimpleUploadedFile("tool.exe", b"MZ\x90\x00"),
    )
    assert response.status_code == 200
    outcomes = response.context["outcomes"]
    assert [(outcome.name, outcome.status) for outcome in outcomes] == [
        ("notes.md", 201),
        ("copy-of-guide.md", 200),
        ("tool.exe", 415),
    ]
    notes = Document.objects.get(title="notes")
    html = response.text
    assert f'<span class="ok">added</span> as <a href="/knowledge/{notes.pk}/">notes</a>' in html
    assert (
        f'<span class="warn-text">duplicate</span>: the same file is already in <code>default</code> as '
        f'<a href="/knowledge/{existing.pk}/">guide</a>'
    ) in html
    assert '<span class="bad">refused</span> (415): unsupported file type .exe' in html
    # Ingestion ran (inline in tests) and the good file is stored, searchable, in the table.
    notes.refresh_from_db()
    assert (notes.status, notes.progress, notes.original_name) == ("ready", 100, "notes.md")
    assert notes.chunks.count() == 1
    assert notes.file.read().startswith(b"# Notes")
    assert Document.objects.count() == 2
    assert {document.title for document in response.context["page"]} == {"notes", "guide"}


@pytest.mark.django_db(transaction=True)
def test_htmx_upload_returns_the_panel_and_tells_the_table_to_reload(logged_in, user):
    response = upload_panel(logged_in, md_file("notes.md", "# Notes\n\nshort"), namespace="team")
    assert response.status_code == 200
    assert "<html" not in response.text
    assert response.text.lstrip().startswith('<section id="upload-panel"')
    assert json.loads(response["HX-Trigger"]) == {"documents-changed": {}}
    assert 'name="namespace" value="team"' in response.text  # the form keeps its settings
    assert Document.objects.get().namespace == "team"


@pytest.mark.parametrize(
    ("name", "data", "status", "message"),
    [
        ("empty.txt", b"", 422, "empty.txt is empty (0 bytes)"),
        ("tool.exe", b"MZ\x90\x00", 415, "unsupported file type .exe: supported are"),
        ("photo.png", b"just some text, not a picture", 415, "photo.png is named .png but is really"),
        ("report.pdf", b"PK\x03\x04" + b"\x00" * 40, 415, "report.pdf is named .pdf but is really"),
    ],
)
def test_a_bad_file_is_refused_with_its_reason(logged_in, user, name, data, status, message):
    response = upload(logged_in, SimpleUploadedFile(name, data))
    assert response.status_code == status
    assert message in response.text
    assert "<html" in response.text  # without htmx the whole page comes back
    assert not Document.objects.exists()
    # htmx swaps 422 only, so the panel comes back with that status and the same reason.
    panel = upload_panel(logged_in, SimpleUploadedFile(name, data))
    assert panel.status_code == 422
    assert message in panel.text
    assert "<html" not in panel.text
    assert "HX-Trigger" not in panel


def test_a_file_over_the_size_limit_is_413(logged_in, user, settings):
    settings.MNEMO_MAX_UPLOAD_MB = 1
    response = upload(logged_in, SimpleUploadedFile("big.txt", b"a" * (1024 * 1024 + 1)))
    assert response.status_code == 413
    assert "big.txt is larger than the 1 MB limit (MNEMO_MAX_UPLOAD_MB)" in response.text
    assert not Document.objects.exists()


def test_refusals_with_different_reasons_are_422(logged_in, user):
    response = upload(logged_in, SimpleUploadedFile("empty.txt", b""), SimpleUploadedFile("a.exe", b"MZ"))
    assert response.status_code == 422
    assert [outcome.status for outcome in response.context["outcomes"]] == [422, 415]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "Files: Choose at least one file."),
        ({"namespace": "../etc"}, "Namespace: namespace may hold letters, digits"),
        ({"chunk_size": "10"}, "Chunk size (tokens): Ensure this value is greater than or equal to 50."),
        ({"chunk_overlap": "500"}, "chunk_overlap must be at least 0 and less than half of chunk_size"),
    ],
)
def test_an_invalid_upload_form_is_422_and_stores_nothing(logged_in, user, fields, message):
    files = [] if not fields else [md_file()]
    response = upload_panel(logged_in, *files, **fields)
    assert response.status_code == 422
    assert message in response.text
    assert not Document.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_corrupt_pdf_is_accepted_then_fails_with_the_reason_and_a_retry_button(logged_in, user):
    upload(logged_in, SimpleUploadedFile("broken.pdf", b"%PDF-1.7\n" + bytes(range(256)) * 20))
    document = Document.objects.get()
    assert document.status == "failed" and document.error
    row = logged_in.get(reverse("document_row", args=[document.pk]), **row_htmx(document))
    assert '<span class="badge status-failed">failed</span>' in row.text
    assert f'<p class="error small">{document.error}' in row.text
    assert ">Retry</button>" in row.text and "every 1s" not in row.text


@pytest.mark.django_db(transaction=True)
def test_a_filename_with_dot_dot_and_odd_unicode_is_shown_safe(logged_in, user):
    response = upload(logged_in, SimpleUploadedFile("../../etc/\u202egnp.txt\x07", b"hello world"))
    assert response.status_code == 200
    document = Document.objects.get()
    assert document.original_name == "gnp.txt"
    assert [(outcome.name, outcome.status) for outcome in response.context["outcomes"]] == [("gnp.txt", 201)]
    assert "<strong>gnp.txt</strong>:" in response.text
    assert "../" not in response.text and "\u202e" not in response.text


@pytest.mark.django_db(transaction=True)
def test_html_with_scripts_never_reaches_the_pages(logged_in, user):
    html = (
        b"<html><body><h1>Title</h1><p onclick='steal()'>Safe text</p><script>alert(1)</script>"
        b"<a href='javascript:alert(2)'>x</a></body></html>"
    )
    upload(logged_in, SimpleUploadedFile("<b>page</b>.html", html))
    document = Document.objects.get()
    assert document.status == "ready"
    for url in (reverse("library"), reverse("document_detail", args=[document.pk])):
        page = logged_in.get(url).text
        assert "Safe text" in page or url == reverse("library")
        for dangerous in ("alert(", "onclick", "javascript:", "<b>page"):
            assert dangerous not in page


# --- polling rows and actions ---------------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["queued", "converting", "chunking", "embedding"])
def test_an_active_row_polls_itself_every_second(logged_in, user, status):
    document = make_document(user, status=status, progress=30)
    response = logged_in.get(reverse("document_row", args=[document.pk]), **row_htmx(document))
    assert response.status_code == 200
    assert "<html" not in response.text
    assert response.text.lstrip().startswith(
        f'<tr id="document-{document.pk}" class="document-row status-{status}"\n'
        f'    hx-get="/knowledge/{document.pk}/row/" hx-trigger="every 1s" hx-target="this" hx-swap="outerHTML">'
    )
    assert '<progress max="100" value="30"' in response.text
    assert ">Cancel</button>" in response.text


@pytest.mark.parametrize("status", ["ready", "failed", "cancelled"])
def test_a_finished_row_stops_polling(logged_in, user, status):
    document = make_document(user, status=status)
    response = logged_in.get(reverse("document_row", args=[document.pk]), **row_htmx(document))
    assert response.status_code == 200
    assert response.text.lstrip().startswith(
        f'<tr id="document-{document.pk}" class="document-row status-{status}">'
    )
    assert "hx-trigger" not in response.text
    assert (">Retry</button>" in response.text) is (status != "ready")


def test_cancel_from_the_row_stops_the_polling(logged_in, user):
    document = make_document(user, status=DocumentStatus.CONVERTING, progress=5)
    response = logged_in.post(reverse("document_cancel", args=[document.pk]), **row_htmx(document))
    assert response.status_code == 200
    assert "<html" not in response.text
    assert '<span class="badge status-cancelled">cancelled</span>' in response.text
    assert "hx-trigger" not in response.text and ">Retry</button>" in response.text
    document.refresh_from_db()
    assert (document.status, document.error) == ("cancelled", "cancelled by the user")


def test_retry_from_the_row_queues_it_again_and_polls(logged_in, user):
    document = make_document(user, status=DocumentStatus.FAILED, error="the embedding provider is down")
    response = logged_in.post(reverse("document_retry", args=[document.pk]), **row_htmx(document))
    assert response.status_code == 200
    # The test transaction never commits, so the queued ingestion has not started: the row polls.
    assert '<span class="badge status-queued">queued</span>' in response.text
    assert 'hx-trigger="every 1s"' in response.text
    assert "the embedding provider is down" not in response.text
    document.refresh_from_db()
    assert (document.status, document.error) == ("queued", "")


@pytest.mark.django_db(transaction=True)
def test_retry_ingests_a_failed_document_again(logged_in, user):
    document = document_create(user=user, file=md_file()).document
    chunk_count = document.chunks.count()
    Document.objects.filter(pk=document.pk).update(status="failed", error="boom")
    document.chunks.all().delete()
    response = logged_in.post(reverse("document_retry", args=[document.pk]), **row_htmx(document))
    assert response.status_code == 200
    assert '<span class="badge status-ready">ready</span>' in response.text
    document.refresh_from_db()
    assert document.status == "ready" and document.chunks.count() == chunk_count == 2


def test_an_action_that_no_longer_fits_the_state_is_409_with_the_reason(logged_in, user):
    document = make_document(user, status=DocumentStatus.READY)
    retry = logged_in.post(reverse("document_retry", args=[document.pk]), **row_htmx(document))
    assert retry.status_code == 409
    assert (
        "only failed, cancelled, paused or stalled documents can be retried (this one is ready)" in retry.text
    )
    cancel = logged_in.post(reverse("document_cancel", args=[document.pk]), **row_htmx(document))
    assert cancel.status_code == 409
    assert "only a document being ingested can be cancelled" in cancel.text


def test_retry_and_cancel_without_js_redirect_to_the_detail_page(logged_in, user):
    document = make_document(user, status=DocumentStatus.CHUNKING)
    response = logged_in.post(reverse("document_cancel", args=[document.pk]))
    assert response.status_code == 302
    assert response["Location"] == reverse("document_detail", args=[document.pk])
    response = logged_in.post(
        reverse("document_retry", args=[document.pk]), {"next": "https://evil.example/"}
    )
    assert response["Location"] == reverse("document_detail", args=[document.pk])
    response = logged_in.post(reverse("document_retry", args=[document.pk]), {"next": "/knowledge/"})
    assert response["Location"] == "/knowledge/"
    page = logged_in.get(response["Location"])
    assert (
        "only failed, cancelled, paused or stalled documents can be retried" in page.text
    )  # the second retry: a message


@pytest.mark.django_db(transaction=True)
def test_delete_from_the_row_removes_the_document_its_chunks_and_file(logged_in, user):
    document = document_create(user=user, file=md_file()).document
    path = document.file.path
    response = logged_in.post(reverse("document_delete", args=[document.pk]), **row_htmx(document))
    assert response.status_code == 200
    assert response.content == b""
    assert not Document.objects.exists() and not Chunk.objects.exists()
    assert not os.path.exists(path)


def test_delete_from_the_detail_page_goes_back_to_the_library(logged_in, user):
    document = make_document(user)
    response = logged_in.post(reverse("document_delete", args=[document.pk]))
    assert response.status_code == 302
    assert response["Location"] == reverse("library")
    other = make_document(user, title="another")
    response = logged_in.post(reverse("document_delete", args=[other.pk]), **HTMX)
    assert response.status_code == 200
    assert response["HX-Redirect"] == reverse("library")
    assert not Document.objects.exists()


def test_actions_are_post_only(logged_in, user):
    document = make_document(user)
    for name in ("document_retry", "document_cancel", "document_delete"):
        assert logged_in.get(reverse(name, args=[document.pk])).status_code == 405
    assert logged_in.get(reverse("document_upload")).status_code == 405
    assert logged_in.post(reverse("library")).status_code == 405


# --- detail ------------------------------------------------------------------------------------------------------


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))


def article(html: str) -> str:
    start = html.index('<article class="markdown-body">')
    return html[start : html.index("</article>", start) + len("</article>")]


def assert_inert(html: str) -> None:
    parser = _Tags()
    parser.feed(html)
    for tag, attrs in parser.tags:
        assert tag in ALLOWED_TAGS | {"article"}, tag
        for name, value in attrs:
            assert not name.startswith("on"), (tag, name)
            assert name not in {"style", "srcdoc"}, (tag, name)
            if name in {"href", "src"}:
                assert (value or "").startswith(("https://", "http://", "mailto:")), (tag, value)


DANGEROUS_MARKDOWN = """# Guide

Some **bold** text and a [good link](https://example.com/docs).

<script>alert('raw')</script>

<img src=x onerror="alert('img')">

<a href="javascript:alert('a')" onclick="steal()">raw link</a>

[md link](javascript:alert('md')) and [spaced](  javascript:alert(1)) and [data](data:text/html;base64,PHNjcmlwdD4=)

![pixel](javascript:alert('img2')) [relative](/knowledge/) <iframe src="https://evil.example"></iframe>

<div style="position:fixed">styled</div> <!-- a comment -->
"""


def test_detail_renders_the_markdown_sanitised(logged_in, user):
    document = make_document(user, title="guide", markdown=DANGEROUS_MARKDOWN)
    response = logged_in.get(reverse("document_detail", args=[document.pk]))
    assert response.status_code == 200
    body = article(response.text)
    assert "<h1>Guide</h1>" in body
    assert "<strong>bold</strong>" in body
    assert '<a href="https://example.com/docs" rel="noopener noreferrer nofollow">good link</a>' in body
    assert_inert(body)
    for gone in ("<script", '<img src="x"', "<iframe", "<div", '<a href="javascript', '"/knowledge/', "<!--"):
        assert gone not in body
    # Raw HTML shows as text, escaped: the reader sees what the file held, and nothing runs.
    assert "<p>&lt;script&gt;alert('raw')&lt;/script&gt;</p>" in body
    assert "&lt;img src=x onerror=\"alert('img')\"&gt;" in body
    # The rest of the page escapes the user's strings; only the article is sanitised HTML.
    evil = make_document(user, title="<script>alert(1)</script>", markdown="# ok")
    page = logged_in.get(reverse("document_detail", args=[evil.pk])).text
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


@pytest.mark.parametrize(
    "html",
    [
        '<a href="javascript:alert(1)">x</a>',
        '<p onclick="steal()">x</p>',
        "<script>alert(1)</script>",
        '<img src="x" onerror="alert(1)">',
        '<a href="vbscript:msgbox(1)">x</a>',
        '<a href="  jav&#x09;ascript:alert(1)">x</a>',
        "<svg><script>alert(1)</script></svg>",
        '<style>body{display:none}</style><p style="color:red">x</p>',
        '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
        '<form action="https://evil.example"><input name="q"></form>',
    ],
)
def test_the_sanitiser_removes_what_could_run(html):
    clean = sanitise_html(html)
    assert_inert(clean)
    for gone in ("alert", "steal", "<script", "<svg", "<style", "style=", "<iframe", "<form", "<input"):
        assert gone not in clean


def test_markdown_raw_html_is_text_not_markup():
    html = render_markdown("Hello <b onmouseover='x()'>there</b>\n\n```\n<script>code</script>\n```")
    assert "<p>Hello &lt;b onmouseover='x()'&gt;there&lt;/b&gt;</p>" in html
    assert "<pre><code>&lt;script&gt;code&lt;/script&gt;\n</code></pre>" in html
    assert_inert(html)


def test_detail_shows_the_metadata(logged_in, user):
    document = make_document(
        user,
        title="guide",
        status=DocumentStatus.FAILED,
        error="This PDF is damaged",
        chunk_size=400,
        chunk_overlap=40,
        size=5000,
    )
    html = logged_in.get(reverse("document_detail", args=[document.pk])).text
    assert f'<code class="hash">{document.sha256}</code>' in html
    assert "400 tokens per chunk, 40 overlap" in html
    assert "4.9\xa0KB" in html and "(5000 bytes)" in html
    assert "<dt>Type</dt><dd>md</dd>" in html
    assert '<pre class="mirror-error">This PDF is damaged</pre>' in html
    assert "Ingestion failed" in html and ">Retry</button>" in html
    assert "hx-trigger" not in html


def test_detail_of_an_active_document_polls_and_reloads_when_done(logged_in, user):
    document = make_document(user, status=DocumentStatus.CHUNKING, progress=25)
    html = logged_in.get(reverse("document_detail", args=[document.pk])).text
    assert f'hx-get="/knowledge/{document.pk}/" hx-trigger="every 1s"' in html
    assert ">Cancel ingestion</button>" in html
    headers = {**HTMX, "HTTP_HX_TARGET": "document-status"}
    poll = logged_in.get(reverse("document_detail", args=[document.pk]), **headers)
    assert poll.status_code == 200
    assert poll.text.lstrip().startswith('<section id="document-status"')
    assert '<progress max="100" value="25"' in poll.text
    Document.objects.filter(pk=document.pk).update(status="ready", progress=100)
    done = logged_in.get(reverse("document_detail", args=[document.pk]), **headers)
    assert done.status_code == 200
    assert done["HX-Refresh"] == "true"


def test_chunk_viewer_pages_by_50_with_token_counts_and_escaped_text(logged_in, user):
    document = make_document(user, title="long")
    add_chunks(document, 120, text="line one <b>{i}</b>\n    indented line")
    html = logged_in.get(reverse("document_detail", args=[document.pk])).text
    assert html.count('class="chunk"') == CHUNKS_PER_PAGE
    assert "<strong>#0</strong>" in html and "<strong>#49</strong>" in html and "#50<" not in html
    assert '<span class="tag">10 tokens</span>' in html
    assert '<span class="heading-path">Guide &gt; Part</span>' in html
    assert '<pre class="chunk-text">line one &lt;b&gt;0&lt;/b&gt;\n    indented line</pre>' in html
    assert "Chunks 1–50 of 120" in html
    last = logged_in.get(
        reverse("document_detail", args=[document.pk]) + "?page=3", HTTP_HX_TARGET="chunk-list", **HTMX
    )
    assert last.status_code == 200
    assert "<html" not in last.text
    assert last.text.lstrip().startswith('<div id="chunk-list"')
    assert last.text.count('class="chunk"') == 20
    assert "<strong>#100</strong>" in last.text and "<strong>#119</strong>" in last.text
    assert 'hx-get="?page=2"' in last.text


def test_chunk_url_points_at_the_viewer_page_that_holds_the_chunk_and_cites_it():
    chunk, document = uuid.uuid4(), uuid.uuid4()
    assert chunk_url(chunk, document, 0) == f"/knowledge/{document}/?cite={chunk}#chunk-{chunk}"
    assert chunk_url(chunk, document, 49) == f"/knowledge/{document}/?cite={chunk}#chunk-{chunk}"
    assert chunk_url(chunk, document, 50) == f"/knowledge/{document}/?page=2&cite={chunk}#chunk-{chunk}"


# --- retrieval test ----------------------------------------------------------------------------------------------


def test_the_retrieval_page_offers_my_namespaces(logged_in, user, other_user, settings):
    settings.LLM_BASE_URL = ""
    make_document(user, namespace="team")
    make_document(user, namespace="default")
    make_document(other_user, namespace="mallory-ns")
    response = logged_in.get(reverse("knowledge_search"))
    assert response.status_code == 200
    assert '<option value="default">default</option>' in response.text
    assert '<option value="team">team</option>' in response.text
    assert "mallory-ns" not in response.text
    assert "No LLM is configured" in response.text
    assert 'formaction="/knowledge/ask/"' in response.text


@pytest.mark.django_db(transaction=True)
def test_search_shows_the_dense_lexical_and_fused_scores(logged_in, user):
    document_create(user=user, file=md_file())
    document_create(user=user, file=md_file("other.md", "# Cooking\n\nBoil the pasta for ten minutes."))
    response = logged_in.get(reverse("knowledge_search") + "?q=向量和关键词检索&limit=5")
    assert response.status_code == 200
    hits = response.context["result"].hits
    top = hits[0]
    assert top.chunk.heading_path == "Mnemo guide > 检索"
    html = response.text
    for part in ("dense", "lexical", "fused"):
        explanation = escape(hybrid.SCORE_PARTS[part])
        assert f'<dt title="{explanation}">{part}</dt><dd>{top.scores[part]:.4f}</dd>' in html
    assert top.scores["lexical"] > 0
    assert f'<a href="{top.url}">guide</a>' in html
    assert '<span class="heading-path">Mnemo guide &gt; 检索</span>' in html
    assert "Mnemo 把每个文档切成带标题路径的分块" in html


@pytest.mark.django_db(transaction=True)
def test_search_with_htmx_returns_the_results_and_says_mqe_needs_an_llm(logged_in, user, settings):
    settings.LLM_BASE_URL = ""
    document_create(user=user, file=md_file())
    response = logged_in.get(
        reverse("knowledge_search")
        + "?q=start+the+server&namespaces=default&limit=3&min_score=&mqe=on&hyde=on",
        HTTP_HX_TARGET="search-results",
        **HTMX,
    )
    assert response.status_code == 200
    assert "<html" not in response.text
    assert response.text.lstrip().startswith('<section id="search-results"')
    assert "MQE/HyDE need an LLM (set LLM_BASE_URL); ran a plain hybrid search instead." in response.text
    assert response.context["result"].hits
    assert (
        response["HX-Push-Url"]
        == "/knowledge/search/?q=start+the+server&namespaces=default&limit=3&mqe=on&hyde=on"
    )


def test_an_invalid_search_is_422_with_the_reasons(logged_in, user):
    response = logged_in.get(
        reverse("knowledge_search") + "?q=&limit=99&min_score=200", HTTP_HX_TARGET="search-results", **HTMX
    )
    assert response.status_code == 422
    assert "Query: This field is required." in response.text
    assert "Results: Ensure this value is less than or equal to 50." in response.text
    assert "Minimum fused score (σ): Ensure this value is less than or equal to 100." in response.text


@pytest.mark.django_db(transaction=True)
def test_ask_without_an_llm_shows_the_notice_and_numbered_citations(logged_in, user, settings):
    settings.LLM_BASE_URL = ""
    document = document_create(user=user, file=md_file()).document
    response = logged_in.get(reverse("knowledge_ask") + "?q=How+do+I+start+the+server%3F")
    assert response.status_code == 200
    answer = response.context["answer"]
    assert answer.llm_used is False
    html = response.text
    assert "No LLM is configured (LLM_BASE_URL): these are the most relevant passages" in html
    first = answer.citations[0]
    assert first["heading_path"] == "Mnemo guide > Install"
    assert '<li id="citation-1" class="hit">' in html
    assert '<span class="citation-n">[1]</span>' in html
    assert (
        f'<a href="/knowledge/{document.pk}/?cite={first["chunk_id"]}#chunk-{first["chunk_id"]}">guide</a>'
        in html
    )
    assert f'id="chunk-{first["chunk_id"]}"' in logged_in.get(f"/knowledge/{document.pk}/").text


@pytest.mark.django_db(transaction=True)
def test_ask_with_an_llm_links_each_citation_number(logged_in, user, monkeypatch):
    class FakeLLM:
        def ask(self, system, prompt, **kwargs):
            assert "[1]" in prompt
            return "Run make run [1]. See also [7] and <b>this</b>."

    monkeypatch.setattr("knowledge.search.get_llm", lambda: FakeLLM())
    document_create(user=user, file=md_file())
    response = logged_in.get(
        reverse("knowledge_ask") + "?q=start+the+server", HTTP_HX_TARGET="search-results", **HTMX
    )
    assert response.status_code == 200
    assert "<html" not in response.text
    assert (
        '<div class="answer-text">Run make run <a href="#citation-1">[1]</a>. See also [7] and '
        "&lt;b&gt;this&lt;/b&gt;.</div>"
    ) in response.text
    assert '<li id="citation-1" class="hit">' in response.text


@pytest.mark.django_db(transaction=True)
def test_search_and_ask_never_show_another_users_chunks(logged_in, user, other_user):
    document_create(user=other_user, file=md_file("secret.md", "# Secret\n\nThe vault code is 4711."))
    search = logged_in.get(reverse("knowledge_search") + "?q=vault+code")
    assert search.context["result"].hits == []
    assert "4711" not in search.text
    asked = logged_in.get(reverse("knowledge_ask") + "?q=vault+code")
    assert asked.context["answer"].citations == []
    assert "No passage in the knowledge base matches this question." in asked.text


# --- access ------------------------------------------------------------------------------------------------------


def test_another_users_document_is_404_everywhere(logged_in, other_user):
    theirs = make_document(other_user, title="secret", status=DocumentStatus.FAILED)
    for method, name in [
        ("get", "document_detail"),
        ("get", "document_row"),
        ("post", "document_retry"),
        ("post", "document_cancel"),
        ("post", "document_delete"),
    ]:
        url = reverse(name, args=[theirs.pk])
        assert getattr(logged_in, method)(url).status_code == 404, url
        assert getattr(logged_in, method)(url, **row_htmx(theirs)).status_code == 404, url
    assert table(logged_in).context["page"].paginator.count == 0
    theirs.refresh_from_db()
    assert theirs.status == "failed"


def test_pages_need_a_login(client):
    for url in (reverse("library"), reverse("knowledge_search"), reverse("knowledge_ask")):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/login/")
    response = client.post(reverse("document_upload"), {"files": [md_file()]})
    assert response.status_code == 302
    assert not Document.objects.exists()


# --- large documents: the list never reads the Markdown, the page previews it ------------------------------------

MARKDOWN_COLUMN = '"knowledge_document"."markdown"'


def test_the_library_and_its_rows_never_select_the_markdown_column(logged_in, user):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    big = make_document(user, title="big", markdown="# Big\n\n" + "word " * 400_000)
    add_chunks(big, 3)
    with CaptureQueriesContext(connection) as library_queries:
        page = logged_in.get(reverse("library"))
        rows = table(logged_in)
        row = logged_in.get(reverse("document_row", args=[big.pk]), **row_htmx(big))
    assert (page.status_code, rows.status_code, row.status_code) == (200, 200, 200)
    assert [document.chunk_count for document in page.context["page"]] == [3]
    document_queries = [
        q["sql"] for q in library_queries.captured_queries if "knowledge_document" in q["sql"]
    ]
    assert document_queries
    assert not [sql for sql in document_queries if MARKDOWN_COLUMN in sql]


def test_detail_previews_the_start_of_a_long_document_and_reads_only_that_much(logged_in, user):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    paragraphs = [f"Paragraph {i} says something about part {i}." for i in range(4000)]
    markdown = "# Long\n\n" + "\n\n".join(paragraphs)
    document = make_document(user, title="long", markdown=markdown)
    add_chunks(document, 60)
    with CaptureQueriesContext(connection) as queries:
        response = logged_in.get(reverse("document_detail", args=[document.pk]))
    assert response.status_code == 200
    body = article(response.text)
    assert "<h1>Long</h1>" in body and "<p>Paragraph 0 says something about part 0.</p>" in body
    assert "Paragraph 3999" not in response.text and "Paragraph 200 " not in body
    assert len(body) < 5_000
    assert f"({len(markdown)} characters in all)" in response.text
    assert '<a href="#chunks-heading">Show more' in response.text
    assert "Chunks 1–50 of 60" in response.text
    # The whole column never leaves the database: only a SUBSTR of it and its LENGTH.
    for query in queries.captured_queries:
        sql = query["sql"].replace(f"SUBSTR({MARKDOWN_COLUMN}", "").replace(f"LENGTH({MARKDOWN_COLUMN}", "")
        assert MARKDOWN_COLUMN not in sql


def test_a_short_document_is_shown_whole_without_show_more(logged_in, user):
    document = make_document(user, title="short", markdown="# Short\n\nAll of it.")
    response = logged_in.get(reverse("document_detail", args=[document.pk]))
    assert "<p>All of it.</p>" in article(response.text)
    assert "Show more" not in response.text


def test_a_preview_cut_inside_a_code_fence_closes_it(logged_in, user):
    markdown = "# Code\n\n```\n" + "\n".join(f"line {i}" for i in range(2000)) + "\n```\n\nAfter the code."
    document = make_document(user, title="code", markdown=markdown)
    body = article(logged_in.get(reverse("document_detail", args=[document.pk])).text)
    assert body.count("<pre><code>") == 1 and "</code></pre>" in body
    assert "After the code." not in body


def test_the_owner_downloads_the_original_file_and_others_get_404(logged_in, user, other_user):
    accepted = document_create(user=user, file=md_file("guide.md"), background=True)
    document = accepted.document
    url = reverse("document_download", args=[document.pk])
    detail = logged_in.get(reverse("document_detail", args=[document.pk]))
    assert f'href="{url}" download>Download guide.md</a>' in detail.text
    response = logged_in.get(url)
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == GUIDE.encode()
    assert response["Content-Disposition"] == 'attachment; filename="guide.md"'
    assert response["Content-Security-Policy"] == "default-src 'none'; sandbox"
    other = Client()
    other.force_login(other_user)
    assert other.get(url).status_code == 404
    assert Client().get(url).status_code == 302  # anonymous: to the log-in page
    assert logged_in.post(url).status_code == 405
    fileless = make_document(user, title="fileless")
    assert logged_in.get(reverse("document_download", args=[fileless.pk])).status_code == 404


@pytest.mark.django_db(transaction=True)
def test_a_pdf_written_with_kangxi_lookalikes_is_found_by_what_people_type(logged_in, user, tmp_path):
    from knowledge.search import search_chunks
    from tests import fixtures_knowledge as fk

    path = fk.make_kangxi_pdf(tmp_path)
    accepted = document_create(user=user, file=SimpleUploadedFile("audit.pdf", path.read_bytes()))
    document = Document.objects.get(pk=accepted.document.pk)
    assert document.status == DocumentStatus.READY, document.error
    hits = search_chunks(user=user, query="审计日志", limit=3).hits
    assert hits and hits[0].chunk.document_id == document.pk
    assert hits[0].scores["lexical"] > 0  # found by its words, not only by a nearby vector
    assert "审计日志" in hits[0].chunk.text and "\u2f47" not in hits[0].chunk.text
    page = logged_in.get(reverse("knowledge_search") + "?q=审计日志&limit=3")
    assert page.status_code == 200
    assert "审计日志记录了每一次变更" in page.text


@pytest.mark.django_db(transaction=True)
def test_a_query_is_normalised_like_the_documents(user):
    from knowledge.search import search_chunks

    document_create(user=user, file=md_file("api.md", "# Notes\n\nThe billing API rejects expired tokens."))
    hits = search_chunks(user=user, query="ＡＰＩ ｔｏｋｅｎｓ", limit=3).hits
    assert hits and hits[0].scores["lexical"] > 0
    assert "billing API" in hits[0].chunk.text


def test_a_search_page_whose_client_left_asks_the_llm_nothing_and_answers_499(logged_in, fake_llm):
    # MQE asks the LLM first; the client's end of the connection is already closed, so the request stops
    # before that call (core.llm.Budget) and core.disconnect's middleware answers 499 for the access log.
    import socket

    server_end, client_end = socket.socketpair()
    with server_end, client_end:
        client_end.close()
        response = logged_in.get(
            reverse("knowledge_search"),
            {"q": "holiday plans", "mqe": "on"},
            **{"gunicorn.socket": server_end},
        )
    assert response.status_code == 499
    assert fake_llm.requests == []

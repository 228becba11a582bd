"""Knowledge curation: disable, enable and edit single chunks (history kept), re-chunk a document, citations that
name their page or sheet and open highlighted, and images whose only text is metadata; over the API and the pages.
"""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from core.models import MirrorState
from core.text import count_tokens
from knowledge import ingest, mirror, services
from knowledge.curation import chunk_update
from knowledge.ingest import NO_TEXT_IN_IMAGE
from knowledge.mirror import COLLECTION, chunk_store
from knowledge.models import Chunk, ChunkEdit, ChunkEditVia, Document, DocumentStatus
from knowledge.search import ask, search_chunks
from knowledge.tools import RAGTool
from tests import fixtures_knowledge as fk

pytestmark = pytest.mark.django_db(transaction=True)

HTMX = {"HTTP_HX_REQUEST": "true"}
NOTES = """# Harbour notes

## Tides

The harbour master posts tide tables every Monday morning.

## Pilots

Pilot boats leave from the north quay when the flag is raised.
"""
PAGES = [
    ["The lighthouse keeper logs the weather at dawn."],
    [
        "Ship | Arrival | Berth",
        "Corvina | 06:10 | North",
        "Albatross | 07:45 | South",
        "Petrel | 09:30 | East",
    ],
    ["Customs officers inspect cargo manifests before noon."],
]


def ingest_text(user, text: str = NOTES, title: str = "harbour", **settings) -> Document:
    document = services.document_create_from_text(
        user=user, text=text, title=title, background=False, **settings
    ).document
    document.refresh_from_db()
    assert document.status == DocumentStatus.READY, document.error
    return document


def upload(client, key, path, **fields):
    data = {"file": SimpleUploadedFile(path.name, path.read_bytes()), "wait": "true", **fields}
    return client.post("/api/v1/documents", data, HTTP_X_API_KEY=key)


def tides(document: Document) -> Chunk:
    return document.chunks.get(heading_path="Harbour notes > Tides")


def found(user, query: str) -> list[str]:
    return [str(hit.chunk.pk) for hit in search_chunks(user=user, query=query, limit=10).hits]


def lexical(user, query: str, chunk: Chunk) -> float:
    """The chunk's lexical score for the query: how much of it the chunk's indexed words match."""
    hits = search_chunks(user=user, query=query, limit=10).hits
    return next((hit.scores["lexical"] for hit in hits if hit.chunk.pk == chunk.pk), 0.0)


def points() -> set[str]:
    return set(chunk_store().ids(COLLECTION))


def chunk_path(chunk: Chunk) -> str:
    return f"/documents/{chunk.document_id}/chunks/{chunk.pk}"


# --- disable and enable ------------------------------------------------------------------------------------------


def test_a_disabled_chunk_is_returned_by_no_search_ask_tool_or_chat_until_enabled(api, user):
    from agents.agent import Agent
    from memories.actions.rules import session_for_key

    document = ingest_text(user)
    chunk = tides(document)
    query = "tide tables Monday"
    assert found(user, query)[0] == str(chunk.pk)

    response = api("patch", chunk_path(chunk), {"enabled": False})
    assert response.status_code == 200
    body = response.json()
    assert body["enabled"] is False and body["text"] == chunk.text
    assert [(edit["via"], edit["api_key"], edit["changes"]) for edit in body["history"]] == [
        ("api", "agent", {"enabled": [True, False]})
    ]
    chunk.refresh_from_db()
    assert str(chunk.pk) not in points() and chunk.mirror_state == MirrorState.SYNCED
    assert str(chunk.pk) not in found(user, query)
    results = api("post", "/knowledge/search", {"query": query}).json()["results"]
    assert str(chunk.pk) not in {hit["chunk_id"] for hit in results}
    assert str(chunk.pk) not in {c["chunk_id"] for c in ask(user=user, question=query).citations}
    tool = RAGTool(user_id=user.username).execute({"action": "search", "query": query, "min_score": 0.0})
    assert str(chunk.pk) not in {hit["chunk_id"] for hit in tool.data["results"]}
    agent = Agent(user=user, session=session_for_key(user=user, key="harbour"))
    assert str(chunk.pk) not in {str(hit.chunk.pk) for hit in agent._chunks(query)}
    # Still listed on the document, with its text.
    listed = api("get", f"/documents/{document.pk}/chunks").json()["items"]
    assert [item["enabled"] for item in listed if item["id"] == str(chunk.pk)] == [False]

    assert api("patch", chunk_path(chunk), {"enabled": True}).json()["enabled"] is True
    assert str(chunk.pk) in points()
    assert found(user, query)[0] == str(chunk.pk)
    assert str(chunk.pk) in {str(hit.chunk.pk) for hit in agent._chunks(query)}


def test_a_disabled_chunk_stays_out_of_the_vector_store_through_sync_and_resync(user):
    chunk = tides(ingest_text(user))
    chunk_update(chunk=chunk, via=ChunkEditVia.ADMIN, enabled=False)
    Chunk.objects.filter(pk=chunk.pk).update(mirror_state=MirrorState.PENDING)  # as a lost task leaves it
    assert mirror.unsynced_chunk_ids(10) == [str(chunk.pk)]
    mirror.sync_chunks(mirror.unsynced_chunk_ids(10))
    assert str(chunk.pk) not in points()
    assert mirror.unsynced_chunk_ids(10) == []  # the sweep does not pick it again and again
    call_command("resync_mirrors", "--all", stdout=open("/dev/null", "w"))
    assert str(chunk.pk) not in points()
    assert len(points()) == Chunk.objects.active().count() == 1


# --- edit --------------------------------------------------------------------------------------------------------


def test_a_passage_is_found_by_its_sections_headings_and_shown_without_them(user):
    # Two sections say the same words; only their headings tell them apart.
    ingest_text(user, "# Lisbon office\n\n## Hours\n\nOpen from 8:00 to 19:00 on weekdays.", title="offices")
    ingest_text(user, "# Porto office\n\n## Hours\n\nOpen from 9:00 to 17:00 on weekdays.", title="offices 2")
    for query, opening in [
        ("When does the Porto office open?", "9:00 to"),
        ("Lisbon office hours", "8:00 to"),
    ]:
        best = search_chunks(user=user, query=query).hits[0].chunk
        assert opening in best.text and best.text.startswith("Open from")
    # An edit is indexed the same way: the page's copy of the text, the index's with its headings.
    porto = Chunk.objects.get(user=user, text__contains="9:00 to 17:00")
    chunk_update(chunk=porto, text="Open from 10:00 to 16:00 on weekdays.", via=ChunkEditVia.API)
    assert "10:00" in search_chunks(user=user, query="When does the Porto office open?").hits[0].chunk.text


def test_an_edited_chunk_is_embedded_again_and_keeps_its_old_text(api, user):
    chunk = tides(ingest_text(user))
    old = chunk.text
    assert lexical(user, "fish market Fridays", chunk) == 0.0
    new = "The harbour master posts tide tables on Fridays, beside the fish market."

    response = api("patch", chunk_path(chunk), {"text": new})
    assert response.status_code == 200
    body = response.json()
    assert body["text"] == new and body["token_count"] == count_tokens(new) and body["edited_at"]
    assert body["history"][0]["changes"] == {"text": [old, new]}
    assert found(user, "fish market Fridays")[0] == str(chunk.pk)
    assert lexical(user, "fish market Fridays", chunk) > 0  # its point holds the new words
    # The history is there for the next reader, newest first.
    api("patch", chunk_path(chunk), {"text": new + " Ask at the tower.", "enabled": False})
    history = api("get", chunk_path(chunk)).json()["history"]
    assert [edit["changes"] for edit in history] == [
        {"text": [new, new + " Ask at the tower."], "enabled": [True, False]},
        {"text": [old, new]},
    ]


def test_the_same_text_again_or_nothing_at_all_records_nothing(api, user):
    chunk = tides(ingest_text(user))
    for body in ({"text": chunk.text, "enabled": True}, {}, {"text": None, "enabled": None}):
        response = api("patch", chunk_path(chunk), body)
        assert response.status_code == 200 and response.json()["history"] == [], body
    assert not ChunkEdit.objects.exists()


def test_a_secret_typed_into_a_chunk_is_masked_like_any_stored_text(api, user):
    chunk = tides(ingest_text(user))
    token = "ghp_Xb4Kq9Lm2Np7Rt5Vw8Yz3Ac6Df1Gh0Jk2Mn4"
    text = api("patch", chunk_path(chunk), {"text": f"The tide gauge token is {token}."}).json()["text"]
    assert token not in text and "masked]" in text
    assert token not in str(ChunkEdit.objects.get().changes)


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"text": ""}, 422, ""),
        ({"text": "   \n "}, 422, "text must not be empty"),
        ({"enabled": "no"}, 422, ""),
        ({"text": "tide " * 8001}, 422, "a chunk holds at most 8,000"),
        ({"text": "bad \x00 byte"}, 422, ""),
    ],
)
def test_a_bad_chunk_edit_is_refused_and_changes_nothing(api, user, body, status, message):
    chunk = tides(ingest_text(user))
    response = api("patch", chunk_path(chunk), body)
    assert response.status_code == status, response.content
    assert message in str(response.json()["detail"])
    assert Chunk.objects.get(pk=chunk.pk).text == chunk.text and not ChunkEdit.objects.exists()


def test_chunk_routes_are_scoped_to_the_owner_and_need_the_write_scope(api, user, other_user, read_key):
    chunk = tides(ingest_text(user))
    theirs = tides(ingest_text(other_user))
    other_document = ingest_text(user, text="# Else\n\nSomething else entirely.", title="else")
    for path in (chunk_path(theirs), f"/documents/{other_document.pk}/chunks/{chunk.pk}"):
        assert api("get", path).status_code == 404
        assert api("patch", path, {"enabled": False}).status_code == 404
    assert (
        api(
            "post", f"/documents/{theirs.document_id}/rechunk", {"chunk_size": 100, "chunk_overlap": 0}
        ).status_code
        == 404
    )
    assert api("patch", chunk_path(chunk), {"enabled": False}, key=read_key).status_code == 403
    assert (
        api(
            "post",
            f"/documents/{chunk.document_id}/rechunk",
            {"chunk_size": 100, "chunk_overlap": 0},
            key=read_key,
        ).status_code
        == 403
    )
    assert api("get", chunk_path(chunk), key=read_key).status_code == 200
    assert Chunk.objects.filter(enabled=False).count() == 0 and Chunk.objects.get(pk=theirs.pk).enabled


def test_a_chunk_of_a_document_being_chunked_again_cannot_be_changed(api, user):
    chunk = tides(ingest_text(user))
    Document.objects.filter(pk=chunk.document_id).update(status=DocumentStatus.EMBEDDING)
    response = api("patch", chunk_path(chunk), {"enabled": False})
    assert response.status_code == 409
    assert "once its document is ready (this one is embedding)" in response.json()["detail"]


# --- re-chunk ----------------------------------------------------------------------------------------------------


LONG = "# Logbook\n\n" + "\n\n".join(
    f"Entry {i}: the ferry crossed the bay with {i + 3} passengers and a cargo of oranges." for i in range(30)
)


def test_rechunking_replaces_every_chunk_with_the_new_settings(api, user):
    document = ingest_text(user, text=LONG, title="logbook")
    before = list(document.chunks.order_by("ordinal"))
    assert len(before) == 1
    chunk_update(chunk=before[0], via=ChunkEditVia.API, text="Entry zero was rewritten by hand.")

    response = api(
        "post", f"/documents/{document.pk}/rechunk", {"chunk_size": 60, "chunk_overlap": 10, "wait": True}
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["progress"], body["chunk_size"], body["chunk_overlap"]) == (
        "ready",
        100,
        60,
        10,
    )
    after = list(document.chunks.order_by("ordinal"))
    assert body["chunk_count"] == len(after) > 5
    assert all(chunk.token_count <= 60 and chunk.enabled and chunk.edited_at is None for chunk in after)
    assert not ChunkEdit.objects.exists()  # the edit went with the chunk it was made to
    assert "rewritten by hand" not in "".join(chunk.text for chunk in after)
    assert points() == {str(chunk.pk) for chunk in after}
    assert found(user, "cargo of oranges")  # searchable again


def test_rechunking_in_the_background_goes_through_the_usual_states(api, user, monkeypatch):
    document = ingest_text(user, text=LONG, title="logbook")
    seen: list[str] = []
    ingest_now = ingest.ingest
    monkeypatch.setattr(
        services,
        "dispatch_on_commit",
        lambda task, document_id: (
            seen.append(Document.objects.get(pk=document_id).status) or ingest_now(document_id)
        ),
    )
    body = api("post", f"/documents/{document.pk}/rechunk", {"chunk_size": 100, "chunk_overlap": 0}).json()
    assert body["status"] == "ready" and seen == ["queued"]
    assert Document.objects.get(pk=document.pk).chunk_size == 100


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"chunk_size": 100, "chunk_overlap": 50}, "less than half of chunk_size"),
        ({"chunk_size": 10, "chunk_overlap": 0}, "greater than or equal to 50"),
        ({"chunk_overlap": 0}, "chunk_size"),
    ],
)
def test_bad_rechunk_settings_are_refused_and_keep_the_chunks(api, user, body, message):
    document = ingest_text(user)
    ids = set(document.chunks.values_list("pk", flat=True))
    response = api("post", f"/documents/{document.pk}/rechunk", body)
    assert response.status_code == 422
    assert message in str(response.json()["detail"])
    assert set(document.chunks.values_list("pk", flat=True)) == ids


def test_a_document_being_ingested_is_not_rechunked(api, user):
    document = ingest_text(user)
    Document.objects.filter(pk=document.pk).update(status=DocumentStatus.CONVERTING)
    response = api("post", f"/documents/{document.pk}/rechunk", {"chunk_size": 100, "chunk_overlap": 0})
    assert response.status_code == 409
    assert "being ingested (converting)" in response.json()["detail"]
    assert document.chunks.count() == 2


# --- where a chunk comes from ------------------------------------------------------------------------------------


def test_pdf_chunks_name_their_page_in_search_ask_and_the_chunk_list(client, write_key, api, user, tmp_path):
    response = upload(
        client, write_key, fk.make_paged_pdf(tmp_path, PAGES, "port.pdf"), chunk_size="50", chunk_overlap="0"
    )
    assert response.json()["status"] == "ready"
    document_id = response.json()["id"]
    chunks = api("get", f"/documents/{document_id}/chunks").json()["items"]
    assert [(c["page"], c["page_end"], c["location"]) for c in chunks] == [
        (1, 2, "pages 1–2"),
        (2, 3, "pages 2–3"),
    ]
    hit = api("post", "/knowledge/search", {"query": "customs officers cargo manifests"}).json()["results"][0]
    assert (hit["location"], hit["page"], hit["page_end"], hit["sheet"]) == ("pages 2–3", 2, 3, "")
    answer = api("post", "/knowledge/ask", {"query": "When do customs officers inspect manifests?"}).json()
    assert answer["citations"][0]["location"] == "pages 2–3"
    assert "[1] (port, pages 2–3)" in answer["answer"]  # no LLM: the passages, each with its source


def test_workbook_chunks_name_their_sheet(client, write_key, api, user, tmp_path):
    path = fk.make_workbook(
        tmp_path,
        {
            "Tides": [["Harbour", "High water"], ["Porto", "04:12"]],
            "Fees": [["Item", "Cost"], ["Pilotage", 300]],
        },
    )
    assert upload(client, write_key, path).json()["status"] == "ready"
    hit = api("post", "/knowledge/search", {"query": "Pilotage cost"}).json()["results"][0]
    assert (hit["location"], hit["sheet"], hit["page"]) == ("sheet Fees", "Fees", None)
    reply = RAGTool(user_id=user.username).run(
        {"action": "search", "query": "Pilotage cost", "min_score": 0.0}
    )
    assert "Location: sheet Fees" in reply
    answer = ask(user=user, question="Pilotage cost")
    assert "[1] (book, sheet Fees)" in answer.text  # the sheet is its own heading: named once


def test_the_chat_names_the_page_of_each_passage_it_answers_from(user, tmp_path, settings, fake_llm):
    from agents.agent import Agent
    from memories.actions.rules import session_for_key

    services.document_create(
        user=user,
        file=SimpleUploadedFile("port.pdf", fk.make_paged_pdf(tmp_path, PAGES).read_bytes()),
        chunk_size=50,
        chunk_overlap=0,
        background=False,
    )
    question = "When do customs officers inspect cargo manifests?"
    Agent(user=user, session=session_for_key(user=user, key="with-llm")).run(question)
    assert "[1] port (pages 2–3): " in fake_llm.requests[-1]["messages"][0]["content"]  # the system prompt
    settings.LLM_BASE_URL = ""
    answer = Agent(user=user, session=session_for_key(user=user, key="offline")).run(question).text
    assert "[1] port (pages 2–3): " in answer


def test_an_image_with_no_text_is_ready_with_no_chunk_and_says_why(client, write_key, api, user, tmp_path):
    response = upload(client, write_key, fk.make_png(tmp_path))
    body = response.json()
    assert (body["status"], body["chunk_count"], body["notice"]) == ("ready", 0, NO_TEXT_IN_IMAGE)
    document = Document.objects.get(pk=body["id"])
    assert "Title: Architecture diagram" in document.markdown  # kept to show, never indexed
    assert points() == set()
    assert api("post", "/knowledge/search", {"query": "Architecture diagram"}).json()["results"] == []
    reply = RAGTool(user_id=user.username, rag_namespace="images").run(
        {"action": "add_document", "file_path": str(fk.make_png(tmp_path, "again.png"))}
    )
    assert "📊 Chunks: 0" in reply and "No text found in this image" in reply


# --- the pages ---------------------------------------------------------------------------------------------------


def detail(client, document: Document, query: str = "", **headers):
    return client.get(reverse("document_detail", args=[document.pk]) + query, **headers)


def test_the_document_page_shows_each_chunks_place_and_actions(logged_in, user, tmp_path):
    document = services.document_create(
        user=user,
        file=SimpleUploadedFile("port.pdf", fk.make_paged_pdf(tmp_path, PAGES).read_bytes()),
        chunk_size=50,
        chunk_overlap=0,
        background=False,
    ).document
    html = detail(logged_in, document).text
    assert '<span class="tag location">pages 1–2</span>' in html
    chunk = document.chunks.get(ordinal=0)
    assert f'hx-post="/knowledge/{document.pk}/chunks/{chunk.pk}/disable/"' in html
    assert f'hx-get="/knowledge/{document.pk}/chunks/{chunk.pk}/edit/"' in html
    assert 'id="rechunk-panel"' in html and "<strong>Edits to chunks are not kept</strong>." in html


def test_disable_and_enable_on_the_page_swap_the_chunk_in_place(logged_in, user, other_user):
    chunk = tides(ingest_text(user))
    url = reverse("chunk_disable", args=[chunk.document_id, chunk.pk])
    response = logged_in.post(url, **HTMX)
    assert response.status_code == 200 and "<html" not in response.text
    assert response.text.lstrip().startswith(f'<article id="chunk-{chunk.pk}" class="chunk is-disabled">')
    assert 'aria-label="Enable chunk #0"' in response.text and ">disabled</span>" in response.text
    assert "History · 1 change" in response.text and "alice" in response.text
    edit = ChunkEdit.objects.get()
    assert (edit.via, edit.editor, edit.changes) == ("page", user, {"enabled": [True, False]})
    assert str(chunk.pk) not in points()

    response = logged_in.post(reverse("chunk_enable", args=[chunk.document_id, chunk.pk]))  # without htmx
    assert response.status_code == 302
    assert response["Location"] == f"/knowledge/{chunk.document_id}/#chunk-{chunk.pk}"
    assert Chunk.objects.get(pk=chunk.pk).enabled and str(chunk.pk) in points()
    assert logged_in.get(url).status_code == 405

    theirs = tides(ingest_text(other_user))
    assert (
        logged_in.post(reverse("chunk_disable", args=[theirs.document_id, theirs.pk]), **HTMX).status_code
        == 404
    )
    assert (
        logged_in.get(reverse("chunk_edit", args=[theirs.document_id, theirs.pk]), **HTMX).status_code == 404
    )
    assert Chunk.objects.get(pk=theirs.pk).enabled


def test_every_chunk_page_route_is_a_404_for_another_users_chunk(logged_in, user, other_user):
    theirs = tides(ingest_text(other_user))
    mine = tides(ingest_text(user))
    elsewhere = ingest_text(user, text="# Else\n\nSomething else entirely.", title="else")
    for document_id, chunk_id in ((theirs.document_id, theirs.pk), (elsewhere.pk, mine.pk)):
        for name, method, data in (
            ("chunk_item", "get", {}),
            ("chunk_edit", "get", {}),
            ("chunk_edit", "post", {"text": "Overwritten by someone else."}),
            ("chunk_disable", "post", {}),
            ("chunk_enable", "post", {}),
        ):
            url = reverse(name, args=[document_id, chunk_id])
            for headers in ({}, HTMX):
                response = getattr(logged_in, method)(url, data, **headers)
                assert response.status_code == 404, (name, method, headers)
    assert detail(logged_in, theirs.document, f"?cite={theirs.pk}").status_code == 404
    untouched = Chunk.objects.get(pk=theirs.pk)
    assert (untouched.text, untouched.enabled) == (theirs.text, True)
    assert Chunk.objects.get(pk=mine.pk).enabled and not ChunkEdit.objects.exists()


def test_editing_on_the_page_shows_the_history_and_never_unescaped_text(logged_in, user):
    chunk = tides(ingest_text(user))
    url = reverse("chunk_edit", args=[chunk.document_id, chunk.pk])
    form = logged_in.get(url, **HTMX)
    assert form.status_code == 200 and "<html" not in form.text
    assert "The harbour master posts tide tables every Monday morning.</textarea>" in form.text

    new = "<script>alert(1)</script> Tide tables move to Friday & Saturday."
    saved = logged_in.post(url, {"text": new}, **HTMX)
    assert saved.status_code == 200
    assert "is-saved" in saved.text and "<script>alert(1)" not in saved.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt; Tide tables move to Friday &amp; Saturday." in saved.text
    assert "text changed; before:" in saved.text
    assert (
        "The harbour master posts tide tables every Monday morning." in saved.text
    )  # the old text, in the history
    assert ">edited</span>" in saved.text

    empty = logged_in.post(url, {"text": "  \n  "}, **HTMX)
    assert empty.status_code == 422 and "text must not be empty" in empty.text
    assert Chunk.objects.get(pk=chunk.pk).text == new.strip()

    page = logged_in.get(url)  # without htmx: a page of its own
    assert page.status_code == 200 and "<html" in page.text and "Edit chunk #0" in page.text
    done = logged_in.post(url, {"text": "Tide tables are posted on the quay."})
    assert done.status_code == 302 and done["Location"].endswith(f"#chunk-{chunk.pk}")
    assert ChunkEdit.objects.count() == 2


def test_a_citation_opens_the_chunk_with_its_passage_highlighted(logged_in, user):
    text = '# Quay rules\n\nMoor where the depth is > 3 m & "calm"; no swimming between the pontoons.\n'
    document = ingest_text(user, text=text, title="rules")
    chunk = document.chunks.get()
    other = ingest_text(user)
    response = detail(logged_in, document, f"?cite={chunk.pk}")
    html = response.text
    assert f'<article id="chunk-{chunk.pk}" class="chunk is-cited">' in html
    assert (
        '<mark class="cited-passage">Moor where the depth is &gt; 3 m &amp; &quot;calm&quot;; no swimming between '
        "the pontoons.</mark>" in html
    )
    assert "Cited passage:" in html and f'href="#chunk-{chunk.pk}">chunk #0</a>' in html
    for cite in (str(tides(other).pk), "not-a-uuid"):  # another document's chunk, or nonsense: nothing marked
        html = detail(logged_in, document, f"?cite={cite}").text
        assert "<mark" not in html and "Cited passage:" not in html

    # The ask page's citation links there.
    answer = logged_in.get(reverse("knowledge_ask") + "?q=swimming between the pontoons").text
    assert f'href="/knowledge/{document.pk}/?cite={chunk.pk}#chunk-{chunk.pk}"' in answer


def test_the_search_and_ask_pages_name_the_page(logged_in, user, tmp_path):
    services.document_create(
        user=user,
        file=SimpleUploadedFile("port.pdf", fk.make_paged_pdf(tmp_path, PAGES).read_bytes()),
        chunk_size=50,
        chunk_overlap=0,
        background=False,
    )
    for name in ("knowledge_search", "knowledge_ask"):
        html = logged_in.get(reverse(name) + "?q=customs officers cargo manifests").text
        assert '<span class="tag location">pages 2–3</span>' in html, name


def test_rechunk_from_the_page_warns_what_is_lost_then_replaces_the_chunks(logged_in, user):
    document = ingest_text(user)
    first, second = document.chunks.order_by("ordinal")
    chunk_update(chunk=first, via=ChunkEditVia.PAGE, editor=user, text="Edited tide text.")
    chunk_update(chunk=second, via=ChunkEditVia.PAGE, editor=user, enabled=False)
    html = detail(logged_in, document).text
    assert "1 edited chunk loses its text and 1 disabled chunk comes back enabled, with their history" in html
    assert "edits and disabled states are lost" in html  # the confirmation

    url = reverse("document_rechunk", args=[document.pk])
    bad = logged_in.post(url, {"chunk_size": "100", "chunk_overlap": "60"}, **HTMX)
    assert bad.status_code == 422 and bad.text.lstrip().startswith(
        '<details id="rechunk-panel" class="rechunk" open>'
    )
    assert "less than half of chunk_size" in bad.text
    assert document.chunks.count() == 2

    done = logged_in.post(url, {"chunk_size": "60", "chunk_overlap": "0"}, **HTMX)
    assert done.status_code == 200 and done["HX-Redirect"] == f"/knowledge/{document.pk}/"
    document.refresh_from_db()
    assert (document.status, document.chunk_size) == ("ready", 60)
    assert not document.chunks.filter(enabled=False).exists() and not ChunkEdit.objects.exists()


def test_rechunk_waits_for_an_ingestion_to_finish(logged_in, user, other_user):
    document = ingest_text(user)
    Document.objects.filter(pk=document.pk).update(status=DocumentStatus.EMBEDDING)
    assert 'id="rechunk-panel"' not in detail(logged_in, document).text
    response = logged_in.post(
        reverse("document_rechunk", args=[document.pk]), {"chunk_size": "60", "chunk_overlap": "0"}
    )
    assert response.status_code == 422 and "being ingested (embedding)" in response.text
    theirs = ingest_text(other_user)
    assert (
        logged_in.post(
            reverse("document_rechunk", args=[theirs.pk]), {"chunk_size": "60", "chunk_overlap": "0"}
        ).status_code
        == 404
    )


def test_the_library_and_the_page_say_an_image_has_no_text(logged_in, user, tmp_path):
    path = fk.make_png(tmp_path)
    document = services.document_create(
        user=user, file=SimpleUploadedFile(path.name, path.read_bytes()), background=False
    ).document
    assert "No text found in this image" in logged_in.get(reverse("library")).text
    html = detail(logged_in, document).text
    assert f'<p class="notice-line document-notice" role="status">{NO_TEXT_IN_IMAGE}</p>' in html


def test_an_operators_edit_in_the_admin_is_recorded_and_mirrored(admin_client, user):
    from django.forms.models import model_to_dict

    chunk = tides(ingest_text(user))
    data = {key: value for key, value in model_to_dict(chunk).items() if value is not None}
    data |= {
        "text": "Tide tables are posted at the quay office.",
        "enabled": "on",
        "created_at_0": chunk.created_at.strftime("%Y-%m-%d"),
        "created_at_1": chunk.created_at.strftime("%H:%M:%S"),
        "mirrored_at_0": chunk.mirrored_at.strftime("%Y-%m-%d"),
        "mirrored_at_1": chunk.mirrored_at.strftime("%H:%M:%S"),
    }
    response = admin_client.post(f"/admin/knowledge/chunk/{chunk.pk}/change/", data)
    assert response.status_code == 302, response.content[:3000]
    edit = ChunkEdit.objects.get()
    assert (edit.via, edit.editor.username, edit.changes) == (
        "admin",
        "admin",
        {"text": [chunk.text, "Tide tables are posted at the quay office."]},
    )
    assert Chunk.objects.get(pk=chunk.pk).edited_at is not None
    assert lexical(user, "quay office", chunk) > 0


def test_the_secret_scan_masks_a_secret_kept_in_a_chunks_history(user):
    import io
    import re

    from core.models import PrivacySettings

    token = "ghp_Xb4Kq9Lm2Np7Rt5Vw8Yz3Ac6Df1Gh0Jk2Mn4"
    PrivacySettings.objects.create(user=user, secrets="keep")  # kept while she typed it
    chunk = tides(ingest_text(user))
    chunk_update(chunk=chunk, via=ChunkEditVia.API, text=f"The tide gauge token is {token} now.")
    chunk_update(chunk=chunk, via=ChunkEditVia.API, text="The tide gauge token was rotated.")
    PrivacySettings.objects.filter(user=user).update(secrets="mask")

    out = io.StringIO()
    call_command("scan_secrets", "--user", "alice", stdout=out)
    assert re.search(r"^\s*chunk history\s+2\s+0\s+0\s+2\s*$", out.getvalue(), re.MULTILINE), out.getvalue()
    history = [edit.changes["text"] for edit in ChunkEdit.objects.order_by("pk")]
    assert history == [
        [NOTES.split("\n")[4], "The tide gauge token is [api_key masked] now."],
        ["The tide gauge token is [api_key masked] now.", "The tide gauge token was rotated."],
    ]


def test_staff_curate_an_end_users_chunks_under_their_address_and_are_named(client, user, django_user_model):
    from core.models import SubjectChange

    staff = django_user_model.objects.create_user(
        username="operator", password="staff pass 123", is_staff=True
    )
    client.force_login(staff)
    document = ingest_text(user)
    chunk = tides(document)
    under = f"/users/{user.pk}"
    disabled = client.post(under + reverse("chunk_disable", args=[document.pk, chunk.pk]), **HTMX)
    assert disabled.status_code == 200
    # The swapped-in article's actions stay with her: their addresses carry her prefix.
    assert f'hx-post="{under}/knowledge/{document.pk}/chunks/{chunk.pk}/enable/"' in disabled.text
    edited = client.post(
        under + reverse("chunk_edit", args=[document.pk, chunk.pk]), {"text": "Tide tables are on the quay."}
    )
    assert edited.status_code == 302 and edited["Location"].startswith(f"{under}/knowledge/{document.pk}/")
    edits = ChunkEdit.objects.order_by("pk")
    assert [(edit.editor, edit.via, sorted(edit.changes)) for edit in edits] == [
        (staff, "page", ["enabled"]),
        (staff, "page", ["text"]),
    ]
    rechunked = client.post(
        under + reverse("document_rechunk", args=[document.pk]), {"chunk_size": "60", "chunk_overlap": "0"}
    )
    assert rechunked.status_code == 302
    assert Document.objects.get(pk=document.pk).chunk_size == 60
    assert list(SubjectChange.objects.order_by("pk").values_list("staff__username", "view", "subject")) == [
        ("operator", "chunk_disable", user.pk),
        ("operator", "chunk_edit", user.pk),
        ("operator", "document_rechunk", user.pk),
    ]

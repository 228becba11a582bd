"""Secrets already stored, found and masked whole (issue 32): `manage.py scan_secrets` and the privacy settings'
scan, and the write paths that now screen metadata, titles, a conversation's history and the search log.

The stored secrets are written the way old data got them: while the owner's settings kept secrets, or as an
earlier partial mask left them. All values are invented for these tests."""

import io
import re

import pytest
from django.core.management import CommandError, call_command

from conversations.models import ChatMessage, ChatRole
from core.models import PrivacySettings
from knowledge.models import Chunk, Document
from knowledge.search import search_chunks
from knowledge.services import document_create_from_text
from memories.actions.edit import memory_update
from memories.actions.rules import session_for_key
from memories.actions.write import memory_create
from memories.entities import entity_key
from memories.models import EditVia, Entity, Memory, MemoryAccess, MemoryEdit, MemoryEntity
from memories.retrieval import search_memories

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "ghp_Xb4Kq9Lm2Np7Rt5Vw8Yz3Ac6Df1Gh0Jk2Mn4"
PASSWORD = "Imigongo#77"
RESIDUE = "Pq7Zr2Lx9Tm4Vn8Kc3Wd"
VAULT = "s.Jk8Lm2Np4Qr6St8Uv0Xy"
STRIPE = "sk_live_" + "Tq5Wz8Nc1Vb4Xm7Lk0Jh3Gf6Ds9Aa2Pe" * 2


@pytest.fixture
def stored(user):
    """Secrets stored while alice's settings kept them, then her settings set to mask."""
    PrivacySettings.objects.create(user=user, secrets="keep")
    note = memory_create(
        user=user,
        content=f"The build box in Kigali has the admin password {PASSWORD} and deploys with {TOKEN}.",
        memory_type="semantic",
    )
    memory_update(memory=note, via=EditVia.API, content=note.content + " Rotated in May.")
    # As in the issue, the kept value became an entity of its own (whatever the extractor typed it).
    entity, _ = Entity.objects.get_or_create(
        user=user, key=entity_key(PASSWORD), defaults={"name": PASSWORD, "entity_type": "ORG"}
    )
    MemoryEntity.objects.get_or_create(memory=note, entity=entity, defaults={"mention": PASSWORD})
    old = memory_create(user=user, content="placeholder", memory_type="semantic")
    Memory.objects.filter(pk=old.pk).update(
        content=f"Deploy key [api_key masked]{RESIDUE} for the Tamale mirror",
        metadata={"vault": f"export VAULT_TOKEN={VAULT}"},
    )
    document_create_from_text(
        user=user,
        title=f"Payments {STRIPE}",
        text=f"# Payments\n\nThe Accra shop charges cards with {STRIPE} from the web server.",
        background=False,
    )
    session = session_for_key(user=user, key="ops")
    ChatMessage.objects.create(session=session, role=ChatRole.USER, content=f"my mail password is {PASSWORD}")
    MemoryAccess.objects.create(
        memory=note, user=user, query=f"where is {TOKEN} used", via="api", rank=1, score=0.5
    )
    PrivacySettings.objects.filter(user=user).update(secrets="mask")
    return note, old


def everything(user) -> str:
    """Every text stored for `user` where a secret could hide, as one string."""
    parts = [str(list(Memory.objects.filter(user=user).values_list("content", "metadata")))]
    parts.append(str(list(MemoryEdit.objects.filter(memory__user=user).values_list("changes", flat=True))))
    parts.append(
        str(list(Document.objects.filter(user=user).values_list("title", "original_name", "markdown")))
    )
    parts.append(str(list(Chunk.objects.filter(user=user).values_list("text", flat=True))))
    parts.append(str(list(ChatMessage.objects.filter(session__user=user).values_list("content", flat=True))))
    parts.append(str(list(MemoryAccess.objects.filter(user=user).values_list("query", flat=True))))
    parts.append(str(list(Entity.objects.filter(user=user).values_list("name", flat=True))))
    return " ".join(parts)


def scan(*args: str) -> str:
    out = io.StringIO()
    call_command("scan_secrets", *args, stdout=out)
    return out.getvalue()


def table(output: str) -> dict[str, list[int]]:
    """The command's table: place → secrets per kind (api_key, password, private_key) and all."""
    rows = [re.split(r"\s{2,}", line.strip()) for line in output.splitlines() if re.search(r"\d\s*$", line)]
    return {row[0]: [int(n) for n in row[1:]] for row in rows if len(row) == 5}


def test_a_dry_run_counts_every_stored_secret_and_changes_nothing(stored, user):
    before = everything(user)
    output = scan("--dry-run", "--user", "alice")
    assert everything(user) == before
    assert table(output) == {
        "memories": [2, 1, 0, 3],  # the token and the residue; the password
        "memory metadata": [1, 0, 0, 1],
        "edit history": [2, 2, 0, 4],  # the API edit's old and new content, each with both
        "document titles": [2, 0, 0, 2],  # the title and the file's name
        "document text": [1, 0, 0, 1],
        "chunks": [1, 0, 0, 1],
        "chat messages": [0, 1, 0, 1],
        "search log": [1, 0, 0, 1],
        "total": [10, 4, 0, 14],
    }
    assert output.splitlines()[-1] == (
        "14 secret(s) in the data of 1 user(s) would be masked (dry run: nothing changed)."
    )


def test_the_scan_masks_every_stored_secret_whole_and_keeps_the_history(stored, user):
    note, old = stored
    output = scan("--user", "alice")
    assert table(output)["total"] == [10, 4, 0, 14]
    text = everything(user)
    for secret in (TOKEN, PASSWORD, RESIDUE, VAULT, STRIPE, STRIPE[:20], "Imigongo"):
        assert secret not in text
    note.refresh_from_db()
    assert note.content == (
        "The build box in Kigali has the admin password [password masked] and deploys with [api_key masked]. "
        "Rotated in May."
    )
    old.refresh_from_db()
    assert old.content == "Deploy key [api_key masked] for the Tamale mirror"
    assert old.metadata["vault"] == "export VAULT_TOKEN=[api_key masked]"
    edit = note.edits.order_by("-created_at", "-pk").first()
    assert (edit.via, edit.reason) == (EditVia.SYSTEM, "secrets masked by a scan")
    assert note.edits.count() == 2  # the API edit and the scan's, both kept
    # The entity the leaked password had become lost its only mention and went.
    assert not Entity.objects.filter(user=user, key=entity_key(PASSWORD)).exists()
    document = Document.objects.get(user=user)
    assert document.title == "Payments [api_key masked]"
    # The chunk was embedded again: its old words are no search term any more.
    hits = search_chunks(user=user, query=STRIPE, limit=3).hits
    assert all(hit.scores["lexical"] == 0 for hit in hits)
    assert all(hit.scores["lexical"] == 0 for hit in search_memories(user=user, query=TOKEN, limit=3).hits)
    assert ChatMessage.objects.get(session__user=user).content == "my mail password is [password masked]"
    assert scan("--user", "alice").splitlines()[-1] == "0 secret(s) in the data of 1 user(s) masked."


def test_a_user_whose_settings_keep_secrets_is_only_reported(stored, user):
    PrivacySettings.objects.filter(user=user).update(secrets="keep")
    before = everything(user)
    output = scan()
    assert everything(user) == before
    assert "Not changed, as their privacy settings keep secrets: alice" in output


def test_an_unknown_user_is_a_clear_error(db):
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        scan("--user", "nobody")


# --- the console's action --------------------------------------------------------------------------------------

HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "secret-scan"}


def test_the_privacy_settings_preview_counts_and_the_mask_button_masks(stored, user, logged_in):
    page = logged_in.get("/settings/privacy/")
    assert 'action="/settings/privacy/scan/"' in page.text and "Preview" in page.text
    before = everything(user)
    preview = logged_in.post("/settings/privacy/scan/", {"action": "preview"}, **HTMX)
    assert preview.status_code == 200 and "<html" not in preview.text
    assert "Preview: 14 secrets would be masked." in preview.text
    assert '<td>edit history</td><td class="number">2</td><td class="number">2</td>' in preview.text
    assert everything(user) == before
    done = logged_in.post("/settings/privacy/scan/", {"action": "mask"})  # without htmx: the whole page
    assert done.status_code == 200 and "<html" in done.text and "14 secrets masked." in done.text
    assert TOKEN not in everything(user) and PASSWORD not in everything(user)
    edit = Memory.objects.get(pk=stored[0].pk).edits.order_by("-created_at", "-pk").first()
    assert (edit.editor, edit.reason) == (user, "secrets masked by a scan")


def test_only_staff_may_scan_every_users_data(stored, user, other_user, client):
    memory_create(user=other_user, content="placeholder", memory_type="semantic")
    Memory.objects.filter(user=other_user).update(content=f"mallory's token {TOKEN}")
    client.force_login(other_user)
    refused = client.post("/settings/privacy/scan/", {"action": "mask", "everyone": "1"})
    assert refused.status_code == 403
    assert TOKEN in everything(user)  # nothing of alice's was touched
    other_user.is_staff = True
    other_user.save()
    preview = client.post("/settings/privacy/scan/", {"action": "preview", "everyone": "1"}, **HTMX)
    assert "Preview: 15 secrets would be masked in the data of 2 users." in preview.text
    own = client.post("/settings/privacy/scan/", {"action": "mask"}, **HTMX)
    assert "1 secret masked." in own.text
    assert TOKEN in everything(user) and TOKEN not in everything(other_user)


def test_a_user_whose_settings_keep_secrets_sees_them_counted_not_masked(stored, user, logged_in):
    PrivacySettings.objects.filter(user=user).update(secrets="keep")
    response = logged_in.post("/settings/privacy/scan/", {"action": "mask"}, **HTMX)
    assert "your privacy settings keep secrets" in response.text
    assert TOKEN in everything(user)


# --- what the write paths screen now ----------------------------------------------------------------------------


def test_metadata_context_and_outcome_are_screened_on_create_and_on_edit(api, user):
    body = api(
        "post",
        "/memories/",
        {
            "content": "Quarterly rotation done in Windhoek.",
            "memory_type": "episodic",
            "context": f"rotated {TOKEN}",
            "metadata": {"ticket": 7, "notes": [f"old pass: {PASSWORD}"]},
        },
    ).json()
    assert body["context"] == "rotated [api_key masked]"
    assert body["metadata"]["notes"] == ["old pass: [password masked]"] and body["metadata"]["ticket"] == 7
    assert [r["kind"] for r in body["metadata"]["privacy"]] == ["api_key", "password"]
    edited = api("patch", f"/memories/{body['id']}", {"outcome": f"new one is {STRIPE}"}).json()
    assert edited["outcome"] == "new one is [api_key masked]"
    assert STRIPE not in str(list(MemoryEdit.objects.values_list("changes", flat=True)))


def test_a_document_title_and_file_name_are_screened(user):
    accepted = document_create_from_text(
        user=user, title=f"Runbook {TOKEN}", text="# Runbook\n\nRestart the queue first.", background=False
    )
    document = Document.objects.get(pk=accepted.document.pk)
    assert (document.title, document.original_name) == (
        "Runbook [api_key masked]",
        "Runbook [api_key masked].md",
    )


def test_the_model_never_sees_a_secret_from_the_conversations_history(fake_llm, chat_completions, user):
    body = {
        "model": "mnemo-agent",
        "messages": [
            {"role": "user", "content": f"note that the Suva router password is {PASSWORD}"},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "Thanks, that is all."},
        ],
    }
    assert chat_completions(body).status_code == 200
    sent = str(fake_llm.requests[-1]["messages"])
    assert PASSWORD not in sent and "the Suva router password is [password masked]" in sent


def test_an_answer_built_from_a_leaked_memory_is_stored_masked(user):
    from agents.agent import Agent

    PrivacySettings.objects.create(user=user, secrets="keep")  # stored while the settings kept secrets
    memory_create(user=user, content=f"The Apia office vault token is {TOKEN}", memory_type="semantic")
    PrivacySettings.objects.filter(user=user).update(secrets="mask")
    session = session_for_key(user=user, key="apia")
    result = Agent(user=user, session=session).run("What about the Apia office vault token?")
    stored_answer = ChatMessage.objects.get(pk=result.message.pk).content
    assert "[api_key masked]" in stored_answer and TOKEN not in stored_answer and TOKEN not in result.text


def test_a_search_query_is_logged_without_its_secret(api, user):
    api("post", "/memories/", {"content": "The Apia office opens at nine.", "memory_type": "semantic"})
    api("post", "/memories/search", {"query": f"Apia office {TOKEN}"})
    assert list(MemoryAccess.objects.values_list("query", flat=True)) == ["Apia office [api_key masked]"]

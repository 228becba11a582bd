"""Mirrors that check themselves: a vector store that lost or damaged points is seen by the health check, said
by search, repaired by the periodic check (through the sweeps) and by a plain `resync_mirrors`.

Before, with the store deleted, health stayed green, memory search returned nothing for 1,004 memories still
marked synced, and `resync_mirrors` without a flag repaired 1 row; a damaged segment showed its folder in a notice.
"""

import io
import os
import shutil
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from core import mirrors, stores
from core.models import MirrorState
from core.tasks import sweep_mirror_outbox
from knowledge.mirror import COLLECTION as CHUNKS
from knowledge.mirror import chunk_store
from knowledge.models import Chunk
from knowledge.search import search_chunks
from knowledge.services import document_create_from_text
from memories import mirror
from memories.actions.write import memory_create
from memories.models import Memory
from memories.retrieval import search_memories

pytestmark = pytest.mark.django_db(transaction=True)  # real commits: the mirror writes run on commit

FACTS = [
    "Orla restores clocks in a workshop by the canal.",
    "Tamsin keeps bees on the roof of the library.",
    "Bertil repairs fishing nets every winter.",
    "Ingrid teaches the cello on Thursday evenings.",
    "Caspar grows chillies in a greenhouse made of old windows.",
    "Mireille translates comic books from Italian.",
]


@pytest.fixture
def memories(user):
    written = [memory_create(user=user, content=text, memory_type="semantic") for text in FACTS]
    # Mirrored a while ago, as on a server that has run for some time (a just-written point may not be counted yet).
    Memory.objects.update(mirrored_at=timezone.now() - timedelta(minutes=5))
    assert Memory.objects.filter(mirror_state=MirrorState.SYNCED).count() == len(FACTS)
    return written


def lose_every_memory_point() -> None:
    """As a deleted vector store leaves it: the rows say synced, the store has nothing."""
    store = mirror.memory_store()
    store.delete(mirror.COLLECTION, store.ids(mirror.COLLECTION))


def health_check(client, concern: str) -> tuple[int, dict]:
    response = client.get("/api/v1/health")
    return response.status_code, next(c for c in response.json()["checks"] if c["concern"] == concern)


def test_health_compares_each_mirror_with_its_rows(memories, client, django_user_model):
    client.force_login(django_user_model.objects.create_user("operator", is_staff=True))
    status, check = health_check(client, "mirrors")
    assert check["ok"] is True
    assert check["detail"] == "memories: 6 points for 6 rows; knowledge chunks: 0 points for 0 rows"

    lose_every_memory_point()
    status, check = health_check(client, "mirrors")
    assert (status, check["ok"]) == (503, False)
    assert check["detail"].startswith("memories behind: 0 points for 6 rows, 6 of 6 checked have no point; ")


def test_search_says_when_the_store_lost_the_users_memories_and_matches_text_meanwhile(memories, user):
    assert search_memories(user=user, query="who keeps bees").hits[0].memory.content == FACTS[1]
    lose_every_memory_point()
    result = search_memories(user=user, query="who keeps bees")
    assert result.notice == (
        "The vector store is missing 6 of your memories until it is repaired; plain text matches are included "
        "meanwhile."
    )
    assert [hit.memory.content for hit in result.hits][:1] == [FACTS[1]]


def test_a_search_counts_the_missing_points_again_after_a_write_through_the_store_not_each_time(
    memories, user
):
    """Counting the rows walks all of the user's: a figure the store's writes have not changed stands."""
    assert mirror.missing_points(user) == 0
    unseen = Memory(user=user, content="A row the store never saw.", memory_type="semantic")
    unseen.mirror_state, unseen.mirrored_at = MirrorState.SYNCED, timezone.now() - timedelta(minutes=5)
    Memory.objects.bulk_create([unseen])  # no signal: nothing is written to the store
    assert mirror.missing_points(user) == 0
    lose_every_memory_point()
    assert mirror.missing_points(user) == len(FACTS) + 1


def test_the_periodic_check_marks_lost_points_for_the_sweep_which_restores_them(memories, user):
    lose_every_memory_point()
    (memory_drift, _) = mirrors.check_all()
    assert memory_drift.behind and len(memory_drift.missing) == 6
    assert set(Memory.objects.values_list("mirror_state", "mirror_error")) == {
        ("pending", "its point was missing or damaged in the vector store")
    }
    assert sweep_mirror_outbox.run() == 6
    assert mirror.memory_store().count(mirror.COLLECTION) == 6
    result = search_memories(user=user, query="who keeps bees")
    assert (result.notice, result.hits[0].memory.content) == ("", FACTS[1])
    assert not any(drift.behind for drift in mirrors.check_all())


def test_plain_resync_mirrors_restores_a_deleted_vector_store(memories, settings):
    stores.reset(embeddings=False)
    shutil.rmtree(settings.QDRANT_EDGE_PATH)
    out = io.StringIO()
    call_command("resync_mirrors", stdout=out)
    assert "Checked 6 memories points: 6 missing, 0 with damaged vectors; wrote 6 again." in out.getvalue()
    assert mirror.memory_store().count(mirror.COLLECTION) == 6


def damage_the_memory_vectors(settings) -> None:
    """Garbage over the start of a dense vector file, as a failing disk leaves it."""
    stores.reset(embeddings=False)  # flushed and closed
    segments = settings.QDRANT_EDGE_PATH / mirror.COLLECTION / "segments"
    target = next(segments.rglob("vector_storage-minilm/vectors/chunk_0.mmap"))
    with open(target, "r+b") as handle:
        handle.write(os.urandom(384 * 4 * 3))  # three points' worth


def test_plain_resync_mirrors_finds_and_rewrites_damaged_vectors(memories, settings):
    damage_the_memory_vectors(settings)
    assert len(mirrors.compare(mirrors.registered()[0], sample=100).damaged) == 3
    out = io.StringIO()
    call_command("resync_mirrors", stdout=out)
    assert "Checked 6 memories points: 0 missing, 3 with damaged vectors; wrote 3 again." in out.getvalue()
    assert mirrors.compare(mirrors.registered()[0], sample=100).damaged == []


def make_unreadable(settings, collection: str) -> None:
    stores.reset(embeddings=False)
    segment = next((settings.QDRANT_EDGE_PATH / collection / "segments").iterdir())
    (segment / "segment.json").write_text("this is not a segment")


def test_an_unreadable_collection_is_said_without_paths_and_rebuilt_by_resync(
    user, settings, client, django_user_model
):
    document_create_from_text(user=user, text="The tide tables are printed every March.", title="Tides")
    assert Chunk.objects.filter(mirror_state=MirrorState.SYNCED).count() == 1
    make_unreadable(settings, CHUNKS)

    result = search_chunks(user=user, query="tide tables")
    assert result.notice.startswith(
        "The vector store is unavailable (Qdrant Edge could not open the collection at"
    )
    assert result.notice.endswith("); results come from a plain text match.")
    assert str(settings.QDRANT_EDGE_PATH) not in result.notice and "<path>" in result.notice
    assert [hit.chunk.text for hit in result.hits] == ["The tide tables are printed every March."]
    staff = django_user_model.objects.create_user("operator", is_staff=True)
    client.force_login(staff)
    status, check = health_check(client, "mirrors")
    assert (status, check["ok"]) == (503, False)
    assert check["detail"].startswith(
        "memories: 0 points for 0 rows; knowledge chunks: the vector store cannot"
    )
    assert "<path>" in check["detail"] and str(settings.QDRANT_EDGE_PATH) not in check["detail"]
    drift = next(
        d for d in (mirrors.compare(m) for m in mirrors.registered()) if d.mirror == "knowledge chunks"
    )
    assert drift.unreadable and str(settings.QDRANT_EDGE_PATH) not in drift.describe()
    assert "<path>" in drift.describe()

    out = io.StringIO()
    call_command("resync_mirrors", stdout=out)
    assert "Rebuilt the knowledge chunks vector collection, whose files could not be read" in out.getvalue()
    assert str(settings.QDRANT_EDGE_PATH) not in out.getvalue()
    assert chunk_store().count(CHUNKS) == 1
    assert search_chunks(user=user, query="tide tables").hits[0].chunk.text.startswith("The tide tables")


def test_the_periodic_check_rebuilds_an_unreadable_collection_through_the_sweep(memories, user, settings):
    make_unreadable(settings, mirror.COLLECTION)
    result = search_memories(user=user, query="who keeps bees")
    assert "<path>" in result.notice and str(settings.QDRANT_EDGE_PATH) not in result.notice
    assert result.hits[0].memory.content == FACTS[1]
    memory_drift = mirrors.check_all()[0]
    assert memory_drift.unreadable
    assert Memory.objects.filter(mirror_state="pending").count() == 6
    assert sweep_mirror_outbox.run() == 6
    assert search_memories(user=user, query="who keeps bees").hits[0].memory.content == FACTS[1]


def test_knowledge_search_says_when_the_store_lost_passages_and_matches_text_meanwhile(user):
    document_create_from_text(user=user, text="The ferry to Skerra leaves at dawn on Sundays.", title="Ferry")
    Chunk.objects.update(mirrored_at=timezone.now() - timedelta(minutes=5))
    store = chunk_store()
    store.delete(CHUNKS, store.ids(CHUNKS))  # under the live store

    result = search_chunks(user=user, query="ferry to Skerra")
    assert result.notice == (
        "The vector store is missing 1 of your passages until it is repaired; plain text matches are included "
        "meanwhile."
    )
    assert [hit.chunk.text for hit in result.hits] == ["The ferry to Skerra leaves at dawn on Sundays."]
    mirrors.check_all()
    assert Chunk.objects.get().mirror_state == MirrorState.PENDING
    assert sweep_mirror_outbox.run() == 1
    assert chunk_store().count(CHUNKS) == 1


def test_a_collection_deleted_under_the_live_store_is_created_again_and_refilled(memories, user, settings):
    shutil.rmtree(settings.QDRANT_EDGE_PATH / mirror.COLLECTION)  # the server still has its files open
    assert mirrors.compare(mirrors.registered()[0]).absent
    mirrors.check_all()
    assert sweep_mirror_outbox.run() == 6
    stores.reset(embeddings=False)  # as a restart: what was written must be in files on the disk
    assert mirror.memory_store().count(mirror.COLLECTION) == 6
    assert not any(drift.behind for drift in mirrors.check_all())

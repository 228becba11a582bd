"""knowledge 0007: chunks indexed before their section's headings were part of the index are written again."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from core import mirror_outbox
from core.models import MirrorState
from knowledge.models import Chunk
from knowledge.search import search_chunks

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("knowledge", "0006_document_message_keys")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state(targets).apps


def test_chunks_under_a_heading_are_marked_and_the_sweep_indexes_them_with_it():
    leaves = MigrationExecutor(connection).loader.graph.leaf_nodes()
    old = _migrate(BEFORE)
    try:
        user = old.get_model("auth", "User").objects.create(username="alice")
        document = old.get_model("knowledge", "Document").objects.create(
            user=user,
            title="handbook",
            original_name="handbook.md",
            sha256="a" * 64,
            mime="md",
            status="ready",
        )
        OldChunk = old.get_model("knowledge", "Chunk")
        for ordinal, (heading, text) in enumerate(
            [("Oslo office > Hours", "Open from 7:00 to 15:00."), ("", "Welcome to the team.")]
        ):
            OldChunk.objects.create(
                document=document,
                user=user,
                namespace="default",
                ordinal=ordinal,
                heading_path=heading,
                text=text,
                token_count=6,
                mirror_state="synced",
            )
    finally:
        _migrate(leaves)

    states = dict(Chunk.objects.values_list("heading_path", "mirror_state"))
    assert states == {"Oslo office > Hours": MirrorState.PENDING, "": MirrorState.SYNCED}
    mirror_outbox.sweep()
    assert set(Chunk.objects.values_list("mirror_state", flat=True)) == {MirrorState.SYNCED}
    hours = search_chunks(
        user=Chunk.objects.get(ordinal=0).user, query="When does the Oslo office open?"
    ).hits
    assert hours and hours[0].chunk.text == "Open from 7:00 to 15:00."

"""knowledge 0007: chunks indexed before their section's headings were part of the index are written again."""

import pytest

from core import mirror_outbox
from core.models import MirrorState
from knowledge.models import Chunk
from knowledge.search import search_chunks
from tests.migrating import models_as_of

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("knowledge", "0006_document_message_keys")]


def test_chunks_under_a_heading_are_marked_and_the_sweep_indexes_them_with_it():
    with models_as_of(BEFORE) as old:
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

    states = dict(Chunk.objects.values_list("heading_path", "mirror_state"))
    assert states == {"Oslo office > Hours": MirrorState.PENDING, "": MirrorState.SYNCED}
    mirror_outbox.sweep()
    assert set(Chunk.objects.values_list("mirror_state", flat=True)) == {MirrorState.SYNCED}
    hours = search_chunks(
        user=Chunk.objects.get(ordinal=0).user, query="When does the Oslo office open?"
    ).hits
    assert hours and hours[0].chunk.text == "Open from 7:00 to 15:00."

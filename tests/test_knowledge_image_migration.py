"""knowledge 0004: images stored before this version lose the metadata-only chunks they were given."""

import pytest

from knowledge.ingest import NO_TEXT_IN_IMAGE
from knowledge.models import Chunk, ChunkEdit, Document
from tests.migrating import models_as_of

pytestmark = pytest.mark.django_db(transaction=True)

# The migration's parent, beside the other branch of the graph (documents paused for disk space) it merges with.
BEFORE = [("knowledge", "0003_chunk_curation"), ("knowledge", "0003_document_paused")]


def test_metadata_only_image_chunks_are_dropped_and_described_images_and_text_keep_theirs():
    with models_as_of(BEFORE) as old:
        user = old.get_model("auth", "User").objects.create(username="alice")
        OldDocument = old.get_model("knowledge", "Document")
        OldChunk = old.get_model("knowledge", "Chunk")
        OldChunkEdit = old.get_model("knowledge", "ChunkEdit")
        made = {}
        for name, mime, status, markdown in (
            ("bare", "png", "ready", "ImageSize: 640x480\nMIMEType: image/png"),
            ("described", "jpeg", "ready", "ImageSize: 800x600\n\n# Description:\nA red kite over a beach."),
            ("notes", "md", "ready", "ImageSize: is a word in these notes"),
            ("queued", "gif", "queued", ""),
        ):
            document = OldDocument.objects.create(
                user=user,
                title=name,
                original_name=f"{name}.{mime}",
                sha256=name * 4,
                mime=mime,
                status=status,
                markdown=markdown,
            )
            if markdown:
                chunk = OldChunk.objects.create(
                    document=document, user=user, namespace="default", ordinal=0, text=markdown, token_count=9
                )
                OldChunkEdit.objects.create(chunk=chunk, via="api", changes={"enabled": [True, False]})
            made[name] = document.pk

    def state(name):
        document = Document.objects.get(pk=made[name])
        return document.notice, Chunk.objects.filter(document=document).count()

    assert state("bare") == (NO_TEXT_IN_IMAGE, 0)
    assert state("described") == ("", 1)
    assert state("notes") == ("", 1)
    assert state("queued") == ("", 0)
    assert ChunkEdit.objects.count() == 2  # the dropped chunk's history went with it

"""Images ingested before their metadata stopped being indexed lose their metadata-only chunks.

Without an LLM to describe it, an image's only text was its metadata (size, format, embedded tags), and that was
chunked and searchable; ingestion now indexes nothing of such an image and says so in its notice. This does the
same for images already stored: ready image documents with no LLM description lose their chunks (and any edit
history of them) and get the notice. Search fetches every hit's row, so their vectors are never returned once the
rows are gone; `manage.py resync_mirrors` deletes those orphaned points.
"""

from django.db import migrations

IMAGE_KINDS = ["png", "jpeg", "gif", "webp"]  # knowledge.pipeline.convert.IMAGE_KINDS, as of this migration
DESCRIPTION = "# Description:"  # how MarkItDown introduces an LLM's description of an image
NO_TEXT_IN_IMAGE = (  # knowledge.services.NO_TEXT_IN_IMAGE, as of this migration
    "No text found in this image, so nothing of it is searchable: only its metadata (size, format, embedded "
    "tags) could be read, and there is no OCR. Configure an LLM (LLM_BASE_URL) to index a description of images."
)
BATCH = 500


def drop_metadata_chunks(apps, schema_editor):
    Document = apps.get_model("knowledge", "Document")
    Chunk = apps.get_model("knowledge", "Chunk")
    images = Document.objects.filter(mime__in=IMAGE_KINDS, status="ready").exclude(
        markdown__contains=DESCRIPTION
    )
    ids = list(images.values_list("pk", flat=True))
    for start in range(0, len(ids), BATCH):
        batch = ids[start : start + BATCH]
        Chunk.objects.filter(document_id__in=batch).delete()
        Document.objects.filter(pk__in=batch, notice="").update(notice=NO_TEXT_IN_IMAGE)


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0003_chunk_curation")]

    operations = [migrations.RunPython(drop_metadata_chunks, migrations.RunPython.noop)]

"""Secrets already stored in a user's documents (titles, names, converted text) and chunks, masked whole.

A chunk is saved row by row, so its signal re-embeds it and rewrites its point (knowledge.signals): search finds
the masked text, never the secret. The uploaded file itself is not rewritten; the text Mnemo serves is.
Returns what was found as a Counter of (where, kind) → secrets; with `dry_run` nothing changes.
"""

from collections import Counter
from pathlib import Path

from django.contrib.auth.models import User
from django.db import transaction

from core import privacy
from core.text import count_tokens
from knowledge.models import Document

TITLES, DOCUMENTS, CHUNKS = "document titles", "document text", "chunks"


def documents_mask_secrets(*, user: User, dry_run: bool) -> Counter:
    counts: Counter = Counter()
    for document in Document.objects.filter(user=user).order_by("created_at").iterator(chunk_size=200):
        counts += _document_mask_secrets(document, dry_run)
    return counts


@transaction.atomic
def _document_mask_secrets(document: Document, dry_run: bool) -> Counter:
    counts: Counter = Counter()
    name = Path(document.original_name)
    title, stem = privacy.mask_secrets(document.title), privacy.mask_secrets(name.stem)
    markdown = privacy.mask_secrets(document.markdown)
    for where, masked in ((TITLES, title), (TITLES, stem), (DOCUMENTS, markdown)):
        for finding in masked.findings:
            counts[(where, finding.kind)] += 1
    if not dry_run and (title.findings or stem.findings or markdown.findings):
        Document.objects.filter(pk=document.pk).update(
            title=title.text[:255],
            original_name=(stem.text + name.suffix)[:255],
            markdown=markdown.text,
            privacy_findings=[*document.privacy_findings, *markdown.record()],
        )
    for chunk in document.chunks.order_by("ordinal"):
        text, heading = privacy.mask_secrets(chunk.text), privacy.mask_secrets(chunk.heading_path)
        for finding in text.findings + heading.findings:
            counts[(CHUNKS, finding.kind)] += 1
        if not dry_run and (text.findings or heading.findings):
            chunk.text, chunk.heading_path = text.text, heading.text[:500]
            chunk.token_count = count_tokens(chunk.text)
            chunk.save(update_fields=["text", "heading_path", "token_count"])  # the signal re-mirrors it
    return counts

"""A person's changes to single chunks: edit the text (re-embedded, the old text kept) and disable or enable.

Each change is one ChunkEdit with the old and new values, whoever made it and through which route. The chunk is
saved row by row, so its signal re-mirrors it after the commit (knowledge.signals → services.sync_chunks): an
edited chunk is embedded again from its new text, a disabled one loses its vector, an enabled one gets it back.
Search also checks `enabled` on every row it returns, so a disabled chunk is never returned even while its vector
is still being removed.
"""

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from core import privacy
from core.limits import check_text
from core.models import ApiKey, MirrorState
from core.text import count_tokens
from knowledge.models import Chunk, ChunkEdit, DocumentStatus
from knowledge.pipeline.convert import normalise_text
from knowledge.services import KnowledgeError

MAX_CHUNK_TOKENS = 8000  # the largest chunk size an upload may ask for (services.check_chunking)
MAX_CHUNK_CHARS = 64_000  # eight characters a token, as the chunker bounds its chunks (pipeline.split)


@transaction.atomic
def chunk_update(
    *,
    chunk: Chunk,
    via: str,
    editor: User | None = None,
    api_key: ApiKey | None = None,
    text: str | None = None,
    enabled: bool | None = None,
) -> Chunk:
    """Change a chunk's text and/or whether search returns it, recording the change; no change, no record.

    The text is normalised as a document's text is (NFKC, so what a reader types finds it) and screened by the
    owner's privacy settings, like every other text Mnemo stores."""
    chunk = Chunk.objects.select_for_update().select_related("document").get(pk=chunk.pk)
    if chunk.document.status != DocumentStatus.READY:
        raise KnowledgeError(
            f"a chunk can be changed once its document is ready (this one is {chunk.document.status})", 409
        )
    changes: dict[str, list] = {}
    if text is not None:
        new_text = _checked_text(chunk, text)
        if new_text != chunk.text:
            changes["text"] = [chunk.text, new_text]
            chunk.text = new_text
            chunk.token_count = count_tokens(new_text)
            chunk.edited_at = timezone.now()
    if enabled is not None and enabled != chunk.enabled:
        changes["enabled"] = [chunk.enabled, enabled]
        chunk.enabled = enabled
    if not changes:
        return chunk
    chunk.mirror_state = MirrorState.PENDING
    chunk.save(update_fields=["text", "token_count", "edited_at", "enabled", "mirror_state", "updated_at"])
    ChunkEdit.objects.create(chunk=chunk, editor=editor, api_key=api_key, via=via, changes=changes)
    return chunk


def _checked_text(chunk: Chunk, text: str) -> str:
    text = normalise_text(check_text(text, "text", MAX_CHUNK_CHARS)).strip()
    if not text:
        raise KnowledgeError(
            _("text must not be empty: disable the chunk instead to keep it out of searches")
        )
    text = privacy.screen_for(chunk.user, text, _("the chunk's text")).text
    tokens = count_tokens(text)
    if tokens > MAX_CHUNK_TOKENS:
        raise KnowledgeError(
            f"text is {tokens:,} tokens long; a chunk holds at most {MAX_CHUNK_TOKENS:,} (split it by re-chunking)"
        )
    return text

"""The knowledge base's documents as a user acts on them: accept a file (or a text), start it again, re-chunk,
cancel, delete it with its vectors, clear a namespace. The ingestion itself is knowledge.ingest; the chunks'
vector mirror is knowledge.mirror.

Re-chunking a document with other settings removes its chunks and runs the same ingestion again.
"""

import hashlib
import logging
import re
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files import File
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from core import disk, privacy
from core.dispatch import dispatch_on_commit
from core.errors import RequestRefused
from core.stored_text import Text
from knowledge.ingest import STALLED_AFTER, cleanup, ingest, ingest_document
from knowledge.models import Document, DocumentStatus
from knowledge.pipeline import ConversionError, safe_filename
from knowledge.pipeline.convert import detect_kind
from knowledge.pipeline.formats import SUPPORTED

logger = logging.getLogger(__name__)

NAMESPACE = re.compile(r"^[\w.\-]{1,100}$")
ACTIVE_STATES = (
    DocumentStatus.QUEUED,
    DocumentStatus.CONVERTING,
    DocumentStatus.CHUNKING,
    DocumentStatus.EMBEDDING,
)
# What a user may start again (a stalled document too: is_stalled).
RETRIABLE = (DocumentStatus.FAILED, DocumentStatus.CANCELLED, DocumentStatus.PAUSED)


class KnowledgeError(RequestRefused):
    """A request the knowledge base refuses."""


CANCELLED_BY_USER = Text(gettext_noop("cancelled by the user"))


def check_namespace(namespace: str) -> str:
    namespace = (namespace or "default").strip()
    if not NAMESPACE.match(namespace):
        raise KnowledgeError(
            _("namespace may hold letters, digits, '_', '-' and '.', at most 100 characters")
        )
    return namespace


def check_chunking(chunk_size: int, chunk_overlap: int) -> None:
    if not 50 <= chunk_size <= 8000:
        raise KnowledgeError(
            _("chunk_size must be between 50 and 8000 tokens (got %(got)s)") % {"got": chunk_size}
        )
    if not 0 <= chunk_overlap < chunk_size / 2:
        raise KnowledgeError(
            _("chunk_overlap must be at least 0 and less than half of chunk_size (got %(got)s)")
            % {"got": chunk_overlap}
        )


@dataclass(frozen=True)
class Accepted:
    document: Document
    created: bool  # False: the same file was already in this namespace


@transaction.atomic
def document_create(
    *,
    user: User,
    file: UploadedFile,
    namespace: str = "default",
    chunk_size: int = 800,
    chunk_overlap: int = 100,
    title: str = "",
    background: bool = True,
) -> Accepted:
    """Store an uploaded file and queue its ingestion; the same file twice in a namespace is one document."""
    namespace = check_namespace(namespace)
    check_chunking(chunk_size, chunk_overlap)
    name = safe_filename(file.name or "document")
    limit = settings.MNEMO_MAX_UPLOAD_MB * 1024 * 1024
    size = file.size
    if not size:  # UploadedFile.size may be None in the stubs; Django's upload handlers always set it
        raise KnowledgeError(_("%(name)s is empty (0 bytes)") % {"name": name})
    if size > limit:
        raise KnowledgeError(
            _("%(name)s is larger than the %(limit)s MB limit (MNEMO_MAX_UPLOAD_MB)")
            % {"name": name, "limit": settings.MNEMO_MAX_UPLOAD_MB},
            413,
        )
    disk.require_space(size, name)
    extension = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    if extension not in SUPPORTED:
        raise KnowledgeError(
            _("unsupported file type .%(extension)s: supported are %(supported)s")
            % {"extension": extension or "?", "supported": ", ".join(sorted(SUPPORTED))},
            415,
        )
    digest = hashlib.sha256()
    file.seek(0)
    head = file.read(8192)
    try:
        kind = detect_kind(head, name)
    except ConversionError as exc:
        raise KnowledgeError(exc.message, 415) from None  # a Text: shown in the request's language
    digest.update(head)
    for block in iter(lambda: file.read(1 << 20), b""):
        digest.update(block)
    sha256 = digest.hexdigest()
    existing = Document.objects.filter(user=user, namespace=namespace, sha256=sha256).first()
    if existing is not None:
        if existing.status in RETRIABLE or is_stalled(existing):
            document_retry(document=existing, background=background)
        return Accepted(existing, created=False)
    file.seek(0)
    stem, extension = name[: len(name) - len(Path(name).suffix)], Path(name).suffix
    # A secret in the title or the file's name is screened like the text (the extension stays for conversion).
    stem = privacy.screen_for(user, stem, _("the file's name")).text
    title = privacy.screen_for(user, title or stem, _("the title")).text
    document = Document(
        user=user,
        namespace=namespace,
        title=title[:255],
        original_name=stem + extension,
        sha256=sha256,
        mime=kind,
        size=size,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
    )
    document.file.save(document.original_name, File(file, name=document.original_name), save=False)
    document.save()
    _start(document, background)
    return Accepted(document, created=True)


def document_create_from_text(
    *,
    user: User,
    text: str,
    title: str,
    namespace: str = "default",
    chunk_size: int = 800,
    chunk_overlap: int = 100,
    background: bool = True,
) -> Accepted:
    from django.core.files.uploadedfile import SimpleUploadedFile

    if not text or not text.strip():
        raise KnowledgeError(_("text must not be empty"))
    name = safe_filename(f"{title or 'text'}.md")
    upload = SimpleUploadedFile(name, text.encode("utf-8"), content_type="text/markdown")
    return document_create(
        user=user,
        file=upload,
        namespace=namespace,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        title=title,
        background=background,
    )


def _start(document: Document, background: bool) -> None:
    if background:
        dispatch_on_commit(ingest_document, str(document.pk))
    else:
        transaction.on_commit(lambda: ingest(str(document.pk)))


def is_stalled(document: Document) -> bool:
    return document.status in ACTIVE_STATES and timezone.now() - document.updated_at >= STALLED_AFTER


def document_retry(*, document: Document, background: bool = True) -> Document:
    """Start a failed, cancelled, paused or stalled document again."""
    if document.status not in RETRIABLE and not is_stalled(document):
        status = document.get_status_display()
        if document.status in ACTIVE_STATES:
            why = _(
                "this one is %(status)s and still moving; one that stops for %(minutes)d minutes is stalled"
            ) % {
                "status": status,
                "minutes": STALLED_AFTER.seconds // 60,
            }
        else:
            why = _("this one is %(status)s") % {"status": status}
        raise KnowledgeError(
            _("only failed, cancelled, paused or stalled documents can be retried (%(why)s)") % {"why": why},
            409,
        )
    Document.objects.filter(pk=document.pk).update(
        status=DocumentStatus.QUEUED, progress=0, error="", space_needed=0, updated_at=timezone.now()
    )
    _start(document, background)
    document.refresh_from_db()
    return document


def documents_resume_stalled(*, stalled_after: timedelta = STALLED_AFTER) -> list[str]:
    """Start again every document a killed or crashed worker left in an active state; their ids.

    The serving process calls it at start-up with no delay on the embedded default (its in-process pool is new,
    so nothing can still be working on them), and every sweep with STALLED_AFTER.
    """
    cutoff = timezone.now() - stalled_after
    resumed = []
    for document in Document.objects.filter(status__in=ACTIVE_STATES, updated_at__lte=cutoff):
        claimed = Document.objects.filter(
            pk=document.pk, status__in=ACTIVE_STATES, updated_at__lte=cutoff
        ).update(status=DocumentStatus.QUEUED, progress=0, error="", updated_at=timezone.now())
        if claimed:  # another sweep did not take it meanwhile
            logger.warning("resuming document %s, left %s by a stopped worker", document.pk, document.status)
            _start(document, background=True)
            resumed.append(str(document.pk))
    return resumed


def document_rechunk(
    *, document: Document, chunk_size: int, chunk_overlap: int, background: bool = True
) -> Document:
    """Chunk a document again with other settings: its chunks go (edited and disabled ones too, with their
    history) and it is converted, chunked and embedded again from its stored file, through the usual states."""
    check_chunking(chunk_size, chunk_overlap)
    if document.status in ACTIVE_STATES and not is_stalled(document):
        raise KnowledgeError(
            _("this document is being ingested (%(status)s); re-chunk it once that has finished")
            % {"status": document.get_status_display()},
            409,
        )
    if not document.file:
        raise KnowledgeError(_("this document has no stored file to chunk again"), 409)
    with transaction.atomic():
        claimed = Document.objects.filter(pk=document.pk, status=document.status).update(
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            status=DocumentStatus.QUEUED,
            progress=0,
            error="",
            notice="",
            ready_at=None,
            updated_at=timezone.now(),
        )
        if not claimed:
            raise KnowledgeError(_("the document's state changed meanwhile; look again and retry"), 409)
        cleanup(document)
        _start(document, background)
    document.refresh_from_db()
    return document


def documents_resume_paused() -> list[str]:
    """Start again every document paused for disk space that now fits (the resume sweep calls it); their ids."""
    resumed = []
    spare = disk.disk_space().spare
    for document in Document.objects.filter(status=DocumentStatus.PAUSED).order_by("updated_at"):
        if document.space_needed > spare:
            continue
        claimed = Document.objects.filter(pk=document.pk, status=DocumentStatus.PAUSED).update(
            status=DocumentStatus.QUEUED, progress=0, error="", space_needed=0, updated_at=timezone.now()
        )
        if claimed:
            logger.info("resuming document %s: the disk has room for it again", document.pk)
            _start(document, background=True)
            resumed.append(str(document.pk))
            spare -= document.space_needed
    return resumed


def document_cancel(*, document: Document) -> Document:
    if document.status not in ACTIVE_STATES:
        raise KnowledgeError(
            _("only a document being ingested can be cancelled (this one is %(status)s)")
            % {"status": document.get_status_display()},
            409,
        )
    Document.objects.filter(pk=document.pk, status__in=ACTIVE_STATES).update(
        status=DocumentStatus.CANCELLED, error=CANCELLED_BY_USER
    )
    document.refresh_from_db()
    return document


def document_delete(*, document: Document) -> None:
    """Delete a document, its chunks and their vectors, and its stored file.

    The chunks' points and the file go with their rows: knowledge.signals removes them once the delete commits."""
    document.delete()


def clear_namespace(*, user: User, namespace: str) -> int:
    documents = list(Document.objects.filter(user=user, namespace=check_namespace(namespace)))
    for document in documents:
        document_delete(document=document)
    return len(documents)

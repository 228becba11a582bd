"""One user's data as one archive, and back: `manage.py export_user` / `import_user`.

The archive is a ZIP of `manifest.json`, `data.jsonl` (Django's JSON-lines serializer, rows in dependency order,
users by username) and `files/` (uploaded documents and perceptual files under their stored names). It holds
memories with every field, their edit history and access log, sessions with chat messages, entities, links and
relations with the graph's curation log, documents with their original files and chunks, golden questions and
evaluation runs. API keys stay
behind: their secrets are not the user's to carry, so edits and accesses made through a key keep no key.

Vectors are not in the archive: the import writes rows as they were and then mirrors them, as resync_mirrors does.
"""

import datetime
import json
import tempfile
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import serializers
from django.core.files.base import ContentFile
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import Model
from django.utils import timezone

from console.models import EvaluationRun, GoldenQuestion
from core.errors import RequestRefused
from knowledge.models import Chunk, Document
from knowledge.services import sync_chunks
from memories import mirror
from memories.graph import mirror_entity, mirror_relation
from memories.models import (
    AgentSession,
    ChatMessage,
    EditVia,
    Entity,
    Fact,
    GraphEdit,
    Memory,
    MemoryAccess,
    MemoryEdit,
    MemoryEntity,
    Relation,
)

FORMAT = "mnemo-user-export"
VERSION = 1
# Parents before children, so every foreign key points at a row already written.
MODELS = (
    AgentSession,
    ChatMessage,
    Document,
    Chunk,
    Memory,
    Fact,
    MemoryEdit,
    MemoryAccess,
    Entity,
    MemoryEntity,
    Relation,
    GraphEdit,  # names entities and relations by id, which the import keeps
    GoldenQuestion,
    EvaluationRun,
)
# Rows numbered by the database: a second instance has its own numbers, so these get new ones on import.
RENUMBERED = (Fact, MemoryAccess, GraphEdit, GoldenQuestion, EvaluationRun)
FILE_FIELDS: dict[type[Model], str] = {Document: "file", Memory: "file"}
# Archives written while sessions and chat messages were models of agents name them by those labels.
FORMER_LABELS = {"agents.agentsession": "memories.agentsession", "agents.chatmessage": "memories.chatmessage"}
MAX_UNPACKED_BYTES = 1024**3  # what an archive may declare before it is unpacked


class _ExactJSONEncoder(DjangoJSONEncoder):
    """Times with their microseconds: Django's encoder cuts them to milliseconds, so a round trip would not
    give back the same rows."""

    def default(self, o):
        if isinstance(o, datetime.datetime | datetime.time):
            return o.isoformat()
        return super().default(o)


class PortabilityError(RequestRefused):
    """An archive that cannot be imported; the message says why."""


@dataclass
class Imported:
    username: str
    counts: dict[str, int]


def _rows(model, user):
    by_user = {
        ChatMessage: {"session__user": user},
        MemoryEdit: {"memory__user": user},
        MemoryEntity: {"memory__user": user},
    }
    return model.objects.filter(**by_user.get(model, {"user": user})).order_by("pk")


def _label(model) -> str:
    return model._meta.label_lower


def export_user(user, path: Path) -> dict[str, int]:
    """Write `user`'s archive to `path`; the row count per model."""
    counts: dict[str, int] = {}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        lines = []
        for model in MODELS:
            rows = list(_rows(model, user))
            counts[_label(model)] = len(rows)
            text = serializers.serialize("jsonl", rows, use_natural_foreign_keys=True, cls=_ExactJSONEncoder)
            for line in text.splitlines():
                record = json.loads(line)
                for key_field in ("api_key", "origin_key"):  # API keys stay behind
                    if key_field in record["fields"]:
                        record["fields"][key_field] = None
                lines.append(json.dumps(record, ensure_ascii=False))
            field = FILE_FIELDS.get(model, "")
            for row in rows if field else ():
                stored = getattr(row, field)
                if stored:
                    with stored.open("rb") as source:
                        archive.writestr(f"files/{stored.name}", source.read())
        archive.writestr("data.jsonl", "\n".join(lines) + "\n")
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "username": user.get_username(),
            "exported_at": timezone.now().isoformat(),
            "counts": counts,
        }
        archive.writestr("manifest.json", json.dumps(manifest, indent=2))
    return counts


def export_file(user) -> BinaryIO:
    """`user`'s archive as an open file, for a download; it is deleted when closed."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "export.zip"
        export_user(user, path)
        return path.open("rb")  # stays readable once the folder is gone (POSIX), until it is closed


def archive_name(user) -> str:
    return f"mnemo-{user.get_username()}-{timezone.now():%Y%m%d-%H%M}.zip"


def import_upload(upload, *, as_username: str) -> Imported:
    """An uploaded archive (a Django UploadedFile), spooled to disk and loaded as `as_username`."""
    with tempfile.NamedTemporaryFile(suffix=".zip") as spool:
        for block in upload.chunks():
            spool.write(block)
        spool.flush()
        return import_archive(Path(spool.name), as_username=as_username)


def import_archive(path: Path, *, as_username: str | None = None) -> Imported:
    """Load an archive into this instance, as its own user or as `as_username` (created when missing)."""
    try:
        with zipfile.ZipFile(path) as archive:
            if sum(member.file_size for member in archive.infolist()) > MAX_UNPACKED_BYTES:
                raise PortabilityError(f"the archive unpacks to more than {MAX_UNPACKED_BYTES // 1024**2} MB")
            manifest = json.loads(archive.read("manifest.json"))
            lines = archive.read("data.jsonl").decode().splitlines()
            files = {name: archive.read(name) for name in archive.namelist() if name.startswith("files/")}
    except (OSError, KeyError, zipfile.BadZipFile, ValueError) as exc:
        raise PortabilityError(f"{path} is not a Mnemo export archive ({exc})") from None
    if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise PortabilityError(f"{path} is not a version {VERSION} Mnemo export archive")
    source = manifest["username"]
    target = as_username or source
    records = [json.loads(line) for line in lines if line.strip()]
    for record in records:
        record["model"] = FORMER_LABELS.get(record.get("model"), record.get("model"))
    _check_contained(records, source)
    for record in records:
        fields = record["fields"]
        if fields.get("user") == [source]:
            fields["user"] = [target]
        if "editor" in fields:  # another person's edit keeps no editor: they have no account here
            fields["editor"] = [target] if fields["editor"] == [source] else None
        if record["model"] == "memories.memory":
            # Here a memory came from the archive; how it was first written stays in its `sources`.
            fields["origin"], fields["origin_key"] = EditVia.IMPORT, None
    with transaction.atomic():
        user, _ = get_user_model().objects.get_or_create(username=target)
        _refuse_existing(records)
        counts: Counter = Counter()
        for item in serializers.deserialize("python", records, handle_forward_references=True):
            model = type(item.object)
            if model in RENUMBERED:
                item.object.pk = None
            field = FILE_FIELDS.get(model, "")
            stored = getattr(item.object, field).name if field else ""
            if stored:
                name = stored.rsplit("/", 1)[-1]
                getattr(item.object, field).save(name, ContentFile(files[f"files/{stored}"]), save=False)
            item.save()
            counts[_label(model)] += 1
    _mirror(user)
    return Imported(target, dict(counts))


def _check_contained(records: list[dict], source: str) -> None:
    """Every row belongs to the archive's user and points only at rows of the archive: an edited archive must
    not write into, or link to, anybody else's data."""
    models = {_label(model): model for model in MODELS}
    present = {(record.get("model"), str(record.get("pk"))) for record in records}
    for position, record in enumerate(records, start=1):
        model = models.get(record.get("model", ""))
        if model is None:
            raise PortabilityError(
                f"row {position} is a {record.get('model')!r}, which an archive does not hold"
            )
        for field in model._meta.get_fields():
            if not field.concrete and not field.many_to_many or field.name not in record["fields"]:
                continue
            value = record["fields"][field.name]
            if field.is_relation and field.related_model is get_user_model():
                if field.name == "user" and value != [source]:
                    raise PortabilityError(f"row {position} belongs to another user than {source!r}")
            elif field.is_relation and value is not None:
                target = _label(field.related_model)
                for pk in value if field.many_to_many else [value]:
                    if (target, str(pk)) not in present:
                        raise PortabilityError(
                            f"row {position} points at a {target} the archive does not hold"
                        )


def _refuse_existing(records: list[dict]) -> None:
    """Rows keep their ids, so an archive loads once per instance: a second load would overwrite the first."""
    by_model: dict[str, list] = {}
    for record in records:
        by_model.setdefault(record["model"], []).append(record["pk"])
    for model in MODELS:
        ids = by_model.get(_label(model), [])
        if model not in RENUMBERED and ids and model.objects.filter(pk__in=ids).exists():
            raise PortabilityError(
                f"this instance already holds {model._meta.verbose_name_plural} from this archive: "
                "import it into another instance, or delete that data first"
            )


def _mirror(user) -> None:
    """Vectors for the imported memories and chunks, and the Neo4j graph when there is one."""
    memory_ids = [str(pk) for pk in Memory.objects.filter(user=user).values_list("pk", flat=True)]
    for start in range(0, len(memory_ids), 256):
        mirror.sync_memories(memory_ids[start : start + 256])
    chunk_ids = [str(pk) for pk in Chunk.objects.filter(user=user).values_list("pk", flat=True)]
    for start in range(0, len(chunk_ids), 256):
        sync_chunks(chunk_ids[start : start + 256])
    if settings.NEO4J_URI:  # without it the Entity and Relation tables are the graph
        for entity_id in Entity.objects.filter(user=user).values_list("pk", flat=True):
            mirror_entity(str(entity_id))
        for relation_id in Relation.objects.filter(user=user).values_list("pk", flat=True):
            mirror_relation(str(relation_id))

"""One user's data as one archive, and back: `manage.py export_user` / `import_user`.

The archive is a ZIP of `manifest.json`, `data.jsonl` (Django's JSON-lines serializer, rows in dependency order,
users by username) and `files/` (uploaded documents and perceptual files under their stored names). It holds
memories with every field, their edit history and access log, sessions with chat messages, entities, links and
relations with the graph's curation log, documents with their original files and chunks (with the chunks' edit
history), golden questions and evaluation runs. API keys stay behind: their secrets are not the user's to carry,
so edits and accesses made through a key keep no key.

Vectors are not in the archive: the import writes rows as they were and then mirrors them, as resync_mirrors does.

An import checks the whole archive before it writes (console.archive reads it within limits, console.archive_rows
holds each row to the API's rules), then writes it in one transaction: a refused archive leaves no row and no
file behind. Into an account that already has data it merges by the keys that name a row to its owner (a
session's key, a document's namespace and content, an entity's key, a relation's ends and type, a golden
question's text); any other row already here (the same ids: the archive was loaded before) refuses the import.
"""

import datetime
import itertools
import json
import os
import shutil
import tempfile
import zipfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import serializers
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.serializers.base import DeserializationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, transaction
from django.db.models import Model, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from console.archive import DATA, FILES, MANIFEST, ArchiveReader, PortabilityError, max_file_bytes
from console.archive_rows import check_username, row_values
from console.models import EvaluationRun, GoldenQuestion
from conversations.models import AgentSession, ChatMessage
from knowledge.mirror import sync_chunks
from knowledge.models import Chunk, ChunkEdit, Document
from memories import mirror
from memories.graph import mirror_entity, mirror_relation
from memories.models import (
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
    ChunkEdit,
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
RENUMBERED = (Fact, MemoryAccess, GraphEdit, ChunkEdit, GoldenQuestion, EvaluationRun)
FILE_FIELDS: dict[type[Model], str] = {Document: "file", Memory: "file"}
# Archives written while sessions and chat messages were models of agents, then of memories, name them by those
# labels.
FORMER_LABELS = {
    f"{app}.{model}": f"conversations.{model}"
    for app in ("agents", "memories")
    for model in ("agentsession", "chatmessage")
}


class _ExactJSONEncoder(DjangoJSONEncoder):
    """Times with their microseconds: Django's encoder cuts them to milliseconds, so a round trip would not
    give back the same rows."""

    def default(self, o):
        if isinstance(o, datetime.datetime | datetime.time):
            return o.isoformat()
        return super().default(o)


@dataclass
class Imported:
    username: str
    counts: dict[str, int]  # rows written, per model
    merged: dict[str, int] = field(default_factory=dict)  # rows matched to one already here, per model
    created_user: bool = False


def _rows(model, user):
    by_user = {
        ChatMessage: {"session__user": user},
        MemoryEdit: {"memory__user": user},
        ChunkEdit: {"chunk__user": user},
        MemoryEntity: {"memory__user": user},
    }
    return model.objects.filter(**by_user.get(model, {"user": user})).order_by("pk")


def _label(model) -> str:
    return model._meta.label_lower


# --- Export ---------------------------------------------------------------------------------------------------


def export_user(user, path: Path) -> dict[str, int]:
    """Write `user`'s archive to `path` (readable by its owner only: it holds all of the user's data); the row
    count per model."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)  # a file that was already there keeps its mode otherwise
    with os.fdopen(descriptor, "wb") as target, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        counts, stored_files = _write_rows(archive, user)
        for name in stored_files:
            with default_storage.open(name, "rb") as source, archive.open(FILES + name, "w") as copy:
                shutil.copyfileobj(source, copy, 1024**2)
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "username": user.get_username(),
            "exported_at": timezone.now().isoformat(),
            "counts": counts,
        }
        archive.writestr(MANIFEST, json.dumps(manifest, indent=2))
    return counts


def _write_rows(archive: zipfile.ZipFile, user) -> tuple[dict[str, int], list[str]]:
    """data.jsonl, a row a line, streamed in batches; the row counts and the stored files the rows name."""
    counts: dict[str, int] = {}
    stored_files: list[str] = []
    with archive.open(DATA, "w", force_zip64=True) as data:
        for model in MODELS:
            counts[_label(model)] = 0
            file_field = FILE_FIELDS.get(model, "")
            for batch in itertools.batched(_rows(model, user).iterator(chunk_size=500), 500):
                text = serializers.serialize(
                    "jsonl", batch, use_natural_foreign_keys=True, cls=_ExactJSONEncoder
                )
                # One object a line, split at "\n" only: str.splitlines() also breaks at U+2028, U+0085 and
                # others that JSON leaves unescaped inside a string.
                for line in text.split("\n"):
                    if not line:
                        continue
                    record = json.loads(line)
                    for key_field in ("api_key", "origin_key"):  # API keys stay behind
                        if key_field in record["fields"]:
                            record["fields"][key_field] = None
                    data.write((json.dumps(record, ensure_ascii=False) + "\n").encode())
                counts[_label(model)] += len(batch)
                stored_files += [
                    getattr(row, file_field).name for row in batch if file_field and getattr(row, file_field)
                ]
    return counts, stored_files


def export_file(user) -> BinaryIO:
    """`user`'s archive as an open file, for a download; it is deleted when closed."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "export.zip"
        export_user(user, path)
        return path.open("rb")  # stays readable once the folder is gone (POSIX), until it is closed


def archive_name(user) -> str:
    return f"mnemo-{user.get_username()}-{timezone.now():%Y%m%d-%H%M}.zip"


# --- Import ---------------------------------------------------------------------------------------------------


def import_upload(upload, *, as_username: str) -> Imported:
    """An uploaded archive (a Django UploadedFile), spooled to disk and loaded as `as_username`."""
    with tempfile.NamedTemporaryFile(suffix=".zip") as spool:
        for block in upload.chunks():
            spool.write(block)
        spool.flush()
        return import_archive(Path(spool.name), as_username=as_username)


def import_archive(path: Path, *, as_username: str | None = None) -> Imported:
    """Load an archive into this instance, as its own user or as `as_username` (created, without a password,
    when missing). Refused as a whole, with the reason and the row, when any row breaks a rule."""
    with ArchiveReader(path) as reader:
        manifest = reader.manifest()
        if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
            raise PortabilityError(
                _("this is not a version %(version)s Mnemo export archive") % {"version": VERSION}
            )
        source = check_username(manifest.get("username"))
        target = check_username(as_username or source)
        _survey(reader, source)
        load = _Load(reader, source)
        try:
            with transaction.atomic():
                user, created = _target_user(target)
                load.run(user)
        except BaseException:
            for name in load.written_files:  # the rows are rolled back; their files go too
                default_storage.delete(name)
            raise
    _mirror(load.saved)
    return Imported(target, dict(load.counts), dict(load.merged), created)


def _target_user(username: str):
    user, created = get_user_model().objects.get_or_create(username=username)
    if created:
        user.set_unusable_password()  # an empty password field would count as usable
        user.save(update_fields=["password"])
    return user, created


def _model(row: dict[str, Any], position: int) -> type[Model]:
    models = {_label(model): model for model in MODELS}
    label = row.get("model")
    label = FORMER_LABELS.get(label, label) if isinstance(label, str) else label
    model = models.get(label) if isinstance(label, str) else None
    if model is None:
        raise PortabilityError(
            _("row %(position)s is a %(label)s, which an archive does not hold")
            % {"position": position, "label": repr(label)}
        )
    row["model"] = label  # an earlier label, as it is called now
    return model


def _survey(reader: ArchiveReader, source: str) -> None:
    """Every row checked (console.archive_rows), every file it names present and within the upload limit, and
    every row the archive's user's and pointing only at rows of the archive: an edited archive must not write
    into, or link to, anybody else's data. Nothing is written."""
    present: set[tuple[str, str]] = set()
    references: list[tuple[int, str, str]] = []
    for position, row in reader.rows():
        model = _model(row, position)
        values = row_values(model, row, position)
        fields = row["fields"]
        for relation in _relations(model):
            value = fields.get(relation.name)
            if relation.related_model is get_user_model():
                if relation.name == "user" and value != [source]:
                    raise PortabilityError(
                        f"row {position} belongs to another user than {source!r}"
                        if value
                        else f"row {position} ({_label(model)}) names no user"
                    )
                continue
            if value is None:
                if not relation.null and not relation.many_to_many:
                    raise PortabilityError(
                        _("row %(position)s (%(label)s) lacks its %(name)s")
                        % {"position": position, "label": _label(model), "name": relation.name}
                    )
                continue
            if relation.many_to_many and not isinstance(value, list):
                raise PortabilityError(
                    f"row {position} ({_label(model)}) {relation.name} must be a list of ids"
                )
            target = _label(relation.related_model)
            references += [
                (position, target, str(pk)) for pk in (value if relation.many_to_many else [value])
            ]
        _check_file(reader, model, values, position)
        present.add((_label(model), str(row["pk"])))
    for position, target, pk in references:
        if (target, pk) not in present:
            raise PortabilityError(
                _("row %(position)s points at a %(target)s the archive does not hold")
                % {"position": position, "target": target}
            )


def _relations(model: type[Model]):
    return [
        field
        for field in model._meta.get_fields()
        if field.is_relation and (field.concrete or field.many_to_many) and not field.auto_created
    ]


def _check_file(reader: ArchiveReader, model: type[Model], values: dict[str, Any], position: int) -> None:
    stored = values.get(FILE_FIELDS.get(model, ""), "")
    if not stored:
        return
    if stored.rsplit("/", 1)[-1] in ("", ".", "..") or stored.startswith("/"):
        raise PortabilityError(
            _("row %(position)s (%(label)s) names a file without a usable name")
            % {"position": position, "label": _label(model)}
        )
    size = reader.file_size(stored)
    if size is None:
        raise PortabilityError(
            f"row {position} ({_label(model)}) names {FILES}{stored}, which the archive lacks"
        )
    if size > max_file_bytes():
        raise PortabilityError(
            f"row {position} ({_label(model)}): its file is over MNEMO_MAX_UPLOAD_MB={settings.MNEMO_MAX_UPLOAD_MB} MB"
        )


@dataclass
class _Load:
    """Writing a surveyed archive as `user`: rows in order, matched to rows already here by their stable keys."""

    reader: ArchiveReader
    source: str
    counts: Counter = field(default_factory=Counter)
    merged: Counter = field(default_factory=Counter)
    saved: dict[type[Model], list] = field(default_factory=lambda: defaultdict(list))
    written_files: list[str] = field(default_factory=list)
    # An archive row's (label, id) -> the id of the row already here that it was merged into, or None for a row
    # left out (a chunk of a merged document that document does not have).
    matched: dict[tuple[str, str], Any] = field(default_factory=dict)

    def run(self, user) -> None:
        deferred = []
        for position, row in self.reader.rows():
            model = _model(row, position)
            key = (_label(model), str(row["pk"]))
            of_merged_document = (
                model is Chunk and ("knowledge.document", str(row["fields"].get("document"))) in self.matched
            )
            if model is ChunkEdit and ("knowledge.chunk", str(row["fields"].get("chunk"))) in self.matched:
                self.matched[key] = None  # a chunk merged into one already here keeps that one's history
            self._point_at_this_instance(model, row["fields"], user)
            if model is Memory:
                # Here a memory came from the archive; how it was first written stays in its `sources`.
                row["fields"]["origin"], row["fields"]["origin_key"] = EditVia.IMPORT, None
            if of_merged_document:  # the chunk at its place in the document already here stands for it
                self.matched[key] = self._same_chunk(row)
            here = _counterpart(model, row["fields"], user)
            if here is not None:
                self.matched[key] = here
            if key in self.matched:
                self.merged[key[0]] += 1
                continue
            if model not in RENUMBERED and model._default_manager.filter(pk=row["pk"]).exists():
                raise PortabilityError(
                    f"row {position}: this instance already holds {model._meta.verbose_name_plural} from this "
                    "archive (it was loaded here before): import it into another instance, or delete that data first"
                )
            item = self._save(model, row, position)
            if item.deferred_fields:
                deferred.append(item)
        for item in deferred:
            item.save_deferred_fields()

    def _point_at_this_instance(self, model: type[Model], fields: dict[str, Any], user) -> None:
        """The archive's user becomes `user` (another person's edit keeps no editor: they have no account here);
        references to merged rows point at the rows they were merged into."""
        for relation in _relations(model):
            name = relation.name
            if name not in fields:
                continue
            if relation.related_model is get_user_model():
                fields[name] = user.pk if name == "user" or fields[name] == [self.source] else None
                continue
            target = _label(relation.related_model)
            if relation.many_to_many:
                ids = [self.matched.get((target, str(pk)), pk) for pk in fields[name]]
                fields[name] = [pk for pk in ids if pk is not None]
            elif fields[name] is not None:
                fields[name] = self.matched.get((target, str(fields[name])), fields[name])

    def _same_chunk(self, row: dict[str, Any]):
        fields = row["fields"]
        return (
            Chunk.objects.filter(document_id=fields["document"], ordinal=fields.get("ordinal"))
            .values_list("pk", flat=True)
            .first()
        )

    def _save(self, model: type[Model], row: dict[str, Any], position: int):
        try:
            [item] = serializers.deserialize("python", [row], handle_forward_references=True)
        except DeserializationError as exc:
            raise PortabilityError(
                _("row %(position)s (%(label)s) could not be read: %(exc)s")
                % {"position": position, "label": _label(model), "exc": exc}
            ) from None
        if model in RENUMBERED:
            item.object.pk = None
        file_field = FILE_FIELDS.get(model, "")
        stored = getattr(item.object, file_field).name if file_field else ""
        if stored:
            content = self.reader.file(stored)
            getattr(item.object, file_field).save(stored.rsplit("/", 1)[-1], ContentFile(content), save=False)
            self.written_files.append(getattr(item.object, file_field).name)
        try:
            with transaction.atomic():
                item.save()
        except IntegrityError:
            raise PortabilityError(
                f"row {position} ({_label(model)}) conflicts with data already stored here"
            ) from None
        self.counts[_label(model)] += 1
        self.saved[model].append(item.object.pk)
        return item


def _counterpart(model: type[Model], fields: dict[str, Any], user):
    """The id of `user`'s row that this archive row names by its stable key, if there is one."""
    found: QuerySet[Any, Any]
    if model is AgentSession:
        found = AgentSession.objects.filter(user=user, key=fields.get("key"))
    elif model is Document:
        found = Document.objects.filter(
            user=user, namespace=fields.get("namespace", "default"), sha256=fields.get("sha256")
        )
    elif model is Entity:
        found = Entity.objects.filter(user=user, key=fields.get("key"))
    elif model is Relation:
        found = Relation.objects.filter(
            user=user,
            source_id=fields.get("source"),
            target_id=fields.get("target"),
            relation_type=fields.get("relation_type", "RELATED_TO"),
        )
    elif model is GoldenQuestion:
        found = GoldenQuestion.objects.filter(
            user=user, target=fields.get("target", "memories"), text=fields.get("text")
        )
    else:
        return None
    return found.values_list("pk", flat=True).first()


def _mirror(saved: dict[type[Model], list]) -> None:
    """Vectors for the imported memories and chunks, and the Neo4j graph when there is one."""
    memory_ids = [str(pk) for pk in saved.get(Memory, [])]
    for start in range(0, len(memory_ids), 256):
        mirror.sync_memories(memory_ids[start : start + 256])
    chunk_ids = [str(pk) for pk in saved.get(Chunk, [])]
    for start in range(0, len(chunk_ids), 256):
        sync_chunks(chunk_ids[start : start + 256])
    if settings.NEO4J_URI:  # without it the Entity and Relation tables are the graph
        for entity_id in saved.get(Entity, []):
            mirror_entity(str(entity_id))
        for relation_id in saved.get(Relation, []):
            mirror_relation(str(relation_id))

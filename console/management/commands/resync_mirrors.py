from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from core import hybrid, mirrors
from core.graphstore import GraphStoreError
from core.models import MirrorState
from core.text import without_paths
from core.vectorstore import VectorStoreError
from knowledge.mirror import COLLECTION as CHUNK_COLLECTION
from knowledge.mirror import chunk_store, sync_chunks
from knowledge.models import Chunk
from memories import mirror
from memories.graph import mirror_entity, mirror_relation
from memories.models import Entity, Memory, Relation

BATCH = 256


class Command(BaseCommand):
    help = (
        "Repair drift between the database and its mirrors: re-mirror memories that are pending or failed (or "
        "all, or those changed since a date) to the vector store, check every mirrored memory's and knowledge "
        "chunk's point (missing, or vectors damaged) and write again those that are not right, rebuild a vector "
        "collection whose files cannot be read, and delete points whose rows are gone; mirror entities and "
        "relations to Neo4j the same way (run with --all after setting NEO4J_URI on existing data). "
        "--all also re-indexes every knowledge chunk: run it once after an upgrade that changes what a point holds. "
        "--rebuild drops both vector collections first and refills them: run it after changing EMBED_MODEL_TYPE."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--all", action="store_true", help="re-mirror every memory, not only unsynced ones"
        )
        parser.add_argument(
            "--rebuild",
            action="store_true",
            help="drop the memory and chunk vector collections and rebuild them from the database (implies --all)",
        )
        parser.add_argument("--since", help="re-mirror memories changed since this ISO date/time")

    def handle(self, *args, all: bool = False, rebuild: bool = False, since: str | None = None, **options):
        if rebuild:
            all = True
            try:
                for collection in (mirror.COLLECTION, CHUNK_COLLECTION):
                    hybrid.rebuild_collection(collection)
            except VectorStoreError as exc:
                raise CommandError(f"vector store: {exc}") from None
            self.stdout.write("Dropped the vector collections; rebuilding them from the database.")
        memories = Memory.objects.all()
        if since:
            moment = parse_datetime(since) or parse_datetime(f"{since}T00:00:00+00:00")
            if moment is None:
                raise CommandError(f"--since {since!r} is not an ISO date or date-time")
            memories = memories.filter(updated_at__gte=moment)
        elif not all:
            memories = memories.exclude(mirror_state="synced")
        ids = [str(pk) for pk in memories.values_list("pk", flat=True)]
        try:
            if not all:
                self._repair_unreadable()
            for start in range(0, len(ids), BATCH):
                mirror.sync_memories(ids[start : start + BATCH])
                done = min(start + BATCH, len(ids))
                if len(ids) > BATCH:  # a rebuild of a large store takes minutes: say how far it is
                    self.stdout.write(f"  {done:,} of {len(ids):,} memories re-embedded")
            orphans = self._orphans() + self._chunk_orphans()
            chunk_ids = self._chunks() if all else []
            repaired = [] if all else [self._repair_points(m) for m in mirrors.registered()]
        except VectorStoreError as exc:
            raise CommandError(f"vector store: {without_paths(str(exc))}") from None
        self.stdout.write(f"Re-mirrored {len(ids)} memories; removed {orphans} orphaned points.")
        for line in repaired:
            self.stdout.write(line)
        if all:
            self.stdout.write(f"Re-indexed {len(chunk_ids)} knowledge chunks.")
        try:
            entities, relations = self._graph(everything=all)
        except GraphStoreError as exc:
            raise CommandError(f"graph store: {exc}") from None
        self.stdout.write(f"Mirrored {entities} entities and {relations} relations to the graph store.")

    def _repair_unreadable(self) -> None:
        """A collection whose files cannot be read is dropped and written again from its rows."""
        for vector_mirror in mirrors.registered():
            drift = mirrors.compare(vector_mirror, ids=[])
            if drift.unreadable:
                hybrid.rebuild_collection(vector_mirror.collection)
                rows = [str(pk) for pk in vector_mirror.mirrored_rows().values_list("pk", flat=True)]
                for start in range(0, len(rows), BATCH):
                    vector_mirror.write(rows[start : start + BATCH])
                self.stdout.write(
                    f"Rebuilt the {vector_mirror.name} vector collection, whose files could not be read "
                    f"({drift.error}): {len(rows)} points written again."
                )

    def _repair_points(self, vector_mirror: mirrors.VectorMirror) -> str:
        """Check the point of every row the mirror stands for; write again those missing or damaged."""
        rows = [str(pk) for pk in vector_mirror.mirrored_rows().values_list("pk", flat=True)]
        drift = mirrors.compare(vector_mirror, ids=rows)
        if drift.error:
            raise CommandError(f"vector store: {drift.error}")
        if drift.absent:  # deleted: created again by the first write
            hybrid.rebuild_collection(vector_mirror.collection)
        repair = sorted(set(drift.missing) | set(drift.damaged))
        for start in range(0, len(repair), BATCH):
            vector_mirror.write(repair[start : start + BATCH])
        return (
            f"Checked {drift.checked} {vector_mirror.name} points: {len(drift.missing)} missing, "
            f"{len(drift.damaged)} with damaged vectors; wrote {len(repair)} again."
        )

    def _chunks(self) -> list[str]:
        ready = Chunk.objects.active().order_by("pk")
        ids = [str(pk) for pk in ready.values_list("pk", flat=True)]
        for start in range(0, len(ids), BATCH):
            sync_chunks(ids[start : start + BATCH])
        return ids

    def _graph(self, everything: bool) -> tuple[int, int]:
        entities, relations = Entity.objects.all(), Relation.objects.all()
        if not everything:
            entities = entities.exclude(mirror_state=MirrorState.SYNCED)
            relations = relations.exclude(mirror_state=MirrorState.SYNCED)
        if not settings.NEO4J_URI:  # the tables are the graph: rows saved before that was recorded
            done = {"mirror_state": MirrorState.SYNCED, "mirror_error": "", "mirrored_at": timezone.now()}
            return entities.update(**done), relations.update(**done)
        # Entities first, so each relation finds its endpoints with their properties.
        entity_ids = [str(pk) for pk in entities.values_list("pk", flat=True)]
        relation_ids = [str(pk) for pk in relations.values_list("pk", flat=True)]
        for entity_id in entity_ids:
            mirror_entity(entity_id)
        for relation_id in relation_ids:
            mirror_relation(relation_id)
        return len(entity_ids), len(relation_ids)

    def _chunk_orphans(self) -> int:
        """Points whose chunk row is gone (a delete whose mirror task was lost)."""
        return _remove_orphans(chunk_store(), CHUNK_COLLECTION, Chunk.objects.all())

    def _orphans(self) -> int:
        """Points whose memory row is gone or archived (a delete whose mirror task was lost)."""
        return _remove_orphans(
            mirror.memory_store(), mirror.COLLECTION, Memory.objects.filter(archived_at=None)
        )


def _remove_orphans(store, collection: str, live_rows) -> int:
    """Delete the points of `collection` that no row of `live_rows` stands for; returns how many."""
    live = {str(pk) for pk in live_rows.values_list("pk", flat=True)}
    orphaned = [point_id for point_id in store.ids(collection) if point_id not in live]
    if orphaned:
        store.delete(collection, orphaned)
    return len(orphaned)

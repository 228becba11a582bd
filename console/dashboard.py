"""The dashboard's charts: what a user's memory did per day, how important it is, what it names, and whether the
background work (ingestion, the vector and graph mirrors) keeps up. Every figure is scoped to one user.

`resync_user` repairs that user's mirrors: the rows left pending or failed are mirrored again, the same work
`resync_mirrors` does for everyone, run in the background through core.dispatch.
"""

from datetime import datetime, time, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import Count
from django.db.models.functions import TruncDate
from django.utils import timezone

from core.models import MirrorState
from knowledge.models import Chunk, Document, DocumentStatus
from memories.models import Entity, Memory, MemoryAccess, Relation

DAYS = 30
TOP_ENTITIES = 10
BATCH = 256
IMPORTANCE_BUCKETS = 10  # 0.0–0.1, …, 0.9–1.0
QUEUED = (DocumentStatus.QUEUED, DocumentStatus.CONVERTING, DocumentStatus.CHUNKING, DocumentStatus.EMBEDDING)


def _per_day(rows, days: list) -> list[int]:
    counts = {row["day"]: row["n"] for row in rows}
    return [counts.get(day, 0) for day in days]


def _mirrors(user: User) -> list[dict]:
    """Pending and failed rows of each mirrored table (memories and chunks to vectors, the graph to Neo4j)."""
    tables = [
        ("memories", Memory.objects.for_user(user).listed()),
        ("chunks", Chunk.objects.for_user(user)),
        ("entities", Entity.objects.filter(user=user)),
        ("relations", Relation.objects.filter(user=user)),
    ]
    health = []
    for name, rows in tables:
        states = dict(
            rows.exclude(mirror_state=MirrorState.SYNCED)
            .values_list("mirror_state")
            .annotate(n=Count("pk"))
            .order_by()
        )
        health.append(
            {
                "table": name,
                "pending": states.get(MirrorState.PENDING, 0),
                "failed": states.get(MirrorState.FAILED, 0),
            }
        )
    return health


def stats(user: User, *, days: int = DAYS) -> dict:
    today = timezone.localdate()
    first = today - timedelta(days=days - 1)
    dates = [first + timedelta(days=offset) for offset in range(days)]
    since = timezone.make_aware(datetime.combine(first, time.min))
    memories = Memory.objects.filter(user=user)
    added = memories.filter(created_at__gte=since).annotate(day=TruncDate("created_at")).values("day")
    retrieved = MemoryAccess.objects.filter(user=user, created_at__gte=since).annotate(
        day=TruncDate("created_at")
    )
    buckets = [0] * IMPORTANCE_BUCKETS
    for importance, n in memories.values_list("importance").annotate(n=Count("pk")).order_by():
        buckets[min(IMPORTANCE_BUCKETS - 1, max(0, int(importance * IMPORTANCE_BUCKETS)))] += n
    top = Entity.objects.filter(user=user).order_by("-frequency", "name")[:TOP_ENTITIES]
    documents = dict(
        Document.objects.filter(user=user).values_list("status").annotate(n=Count("pk")).order_by()
    )
    return {
        "days": [day.isoformat() for day in dates],
        "added": _per_day(added.annotate(n=Count("pk")).order_by(), dates),
        "retrieved": _per_day(retrieved.values("day").annotate(n=Count("pk")).order_by(), dates),
        "importance": {
            "labels": [
                f"{i / IMPORTANCE_BUCKETS:.1f}–{(i + 1) / IMPORTANCE_BUCKETS:.1f}"
                for i in range(IMPORTANCE_BUCKETS)
            ],
            "counts": buckets,
        },
        "top_entities": [
            {
                "id": str(entity.pk),
                "name": entity.name,
                "type": entity.entity_type,
                "frequency": entity.frequency,
            }
            for entity in top
        ],
        "queue": {
            "queued": sum(documents.get(status, 0) for status in QUEUED),
            "ready": documents.get(DocumentStatus.READY, 0),
            "failed": documents.get(DocumentStatus.FAILED, 0),
        },
        "mirrors": _mirrors(user),
    }


def resync_user(user_id: int) -> dict:
    """Mirror again every pending or failed row of one user; returns how many of each table were sent."""
    # Imported here: the knowledge and graph services pull in the stores, which a stats read never needs.
    from knowledge.mirror import sync_chunks
    from memories import mirror
    from memories.graph import mirror_entity, mirror_relation

    def unsynced(rows) -> list[str]:
        return [str(pk) for pk in rows.exclude(mirror_state=MirrorState.SYNCED).values_list("pk", flat=True)]

    memory_ids = unsynced(Memory.objects.filter(user_id=user_id))
    for start in range(0, len(memory_ids), BATCH):
        mirror.sync_memories(memory_ids[start : start + BATCH])
    chunk_ids = unsynced(Chunk.objects.filter(user_id=user_id).active())
    for start in range(0, len(chunk_ids), BATCH):
        sync_chunks(chunk_ids[start : start + BATCH])
    entity_ids = unsynced(Entity.objects.filter(user_id=user_id))
    relation_ids = unsynced(Relation.objects.filter(user_id=user_id))
    if settings.NEO4J_URI:  # entities first, so each relation finds its endpoints
        for entity_id in entity_ids:
            mirror_entity(entity_id)
        for relation_id in relation_ids:
            mirror_relation(relation_id)
    else:  # the tables are the graph: rows saved before that was recorded
        done = {"mirror_state": MirrorState.SYNCED, "mirror_error": "", "mirrored_at": timezone.now()}
        Entity.objects.filter(pk__in=entity_ids).update(**done)
        Relation.objects.filter(pk__in=relation_ids).update(**done)
    return {
        "memories": len(memory_ids),
        "chunks": len(chunk_ids),
        "entities": len(entity_ids),
        "relations": len(relation_ids),
    }

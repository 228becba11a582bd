from django.core.management.base import BaseCommand, CommandError
from django.utils.dateparse import parse_datetime

from core.vectorstore import VectorStoreError
from memories import mirror
from memories.models import Memory

BATCH = 256


class Command(BaseCommand):
    help = (
        "Repair drift between the database and the vector store: re-mirror memories that are pending or failed "
        "(or all, or those changed since a date) and delete points whose rows are gone."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--all", action="store_true", help="re-mirror every memory, not only unsynced ones"
        )
        parser.add_argument("--since", help="re-mirror memories changed since this ISO date/time")

    def handle(self, *args, all: bool = False, since: str | None = None, **options):
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
            for start in range(0, len(ids), BATCH):
                mirror.sync_memories(ids[start : start + BATCH])
            orphans = self._orphans()
        except VectorStoreError as exc:
            raise CommandError(f"vector store: {exc}") from None
        self.stdout.write(f"Re-mirrored {len(ids)} memories; removed {orphans} orphaned points.")

    def _orphans(self) -> int:
        """Points whose memory row is gone or archived (a delete whose mirror task was lost)."""
        store = mirror.memory_store()
        live = {str(pk) for pk in Memory.objects.filter(archived_at=None).values_list("pk", flat=True)}
        orphaned = [point_id for point_id in store.ids(mirror.COLLECTION) if point_id not in live]
        if orphaned:
            store.delete(mirror.COLLECTION, orphaned)
        return len(orphaned)

import time

from django.core.management.base import BaseCommand, CommandError

from core import stores
from core.vectorstore import VectorStoreError
from core.vectorstore.edge import EdgeVectorStore


class Command(BaseCommand):
    help = (
        "Build the HNSW indexes of the embedded Qdrant Edge store and vacuum deleted points. Edge never does "
        "this by itself and searches unindexed points by brute force (at 100,000 chunks 120 ms instead of "
        "17 ms per search). The running server does the same by itself in the background when a collection is "
        "largely unindexed and the store is quiet (MNEMO_VECTOR_OPTIMIZE_SECONDS); this command is for a stopped "
        "server: it takes the store's lock and minutes at that size. "
        "A Qdrant server (QDRANT_URL) optimizes in the background and needs nothing."
    )

    def handle(self, *args, **options):
        store = stores.vector_store()
        if not isinstance(store, EdgeVectorStore):
            self.stdout.write(f"{store.backend}: the server optimizes its collections itself; nothing to do.")
            return
        try:
            collections = store.collections()
            if not collections:
                self.stdout.write("The embedded vector store has no collections yet.")
            for collection in collections:
                points, indexed, segments = store.index_status(collection)
                started = time.perf_counter()
                store.optimize(collection)
                seconds = time.perf_counter() - started
                _, indexed_after, segments_after = store.index_status(collection)
                self.stdout.write(
                    f"{collection}: {points:,} points; indexed vectors {indexed:,} -> {indexed_after:,}; "
                    f"segments {segments} -> {segments_after}; {seconds:.1f} s"
                )
        except VectorStoreError as exc:
            raise CommandError(f"vector store: {exc}") from None

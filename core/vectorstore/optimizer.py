"""Keep the embedded vector store optimized while the server runs: optimize a copy in a child process.

Qdrant Edge builds HNSW indexes only when asked (EdgeShard.optimize), and until then searches every vector a
segment holds by brute force. The Python binding holds the GIL for the whole pass (15 s at 20,000 points,
minutes at 100,000), so calling it in the serving process would freeze every request thread. Instead:

1. copy: the collection's shard is flushed and copied beside it (`.optimizing-<name>`). Writes to it wait during
   the copy, searches go on; from then on every update is journaled (EdgeVectorStore.copy_for_optimizing).
2. optimize: a child process (_optimize_child.py: low priority, one core) optimizes the copy. The server
   serves as before meanwhile, on the other core.
3. swap: reads and writes of the collection wait while the old shard is closed and moved aside, the copy is
   loaded in its place, and the journaled updates are replayed onto it (EdgeVectorStore.swap_optimized). The
   journal is the engine's own operations in their order, so the copy ends exactly as the old shard was.

start_when_due() begins one such pass, in its own thread and at most one at a time in this process, for a
collection with at least MIN_UNINDEXED_POINTS points, and UNINDEXED_SHARE of its vectors, outside an index, once the store has
seen no search or write for `quiet_seconds`. Each pass is appended to <store>/.optimize-log.jsonl.
"""

from __future__ import annotations

import atexit
import json
import logging
import shutil
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .base import VectorStoreError
from .edge import EdgeVectorStore

logger = logging.getLogger(__name__)

# Edge indexes a segment only past its indexing threshold (about 5,000 points of 512 dimensions), and brute force
# over fewer takes a few milliseconds: a pass needs at least this many unindexed points.
MIN_UNINDEXED_POINTS = 5_000
UNINDEXED_SHARE = 0.2  # start when at least this share of the vectors is outside an HNSW index
CHILD_CPUS = 1  # of the machine's cores, the child may use this many; the server keeps the rest
LOG = ".optimize-log.jsonl"
CHILD = Path(__file__).with_name("_optimize_child.py")

_one_at_a_time = threading.Lock()
_children: set[subprocess.Popen] = set()
# (store path, collection) -> points when a pass last left it unindexed: retried only once the points change.
_fruitless: dict[tuple[Path, str], int] = {}


def unindexed_share(store: EdgeVectorStore, collection: str) -> tuple[int, float]:
    """(points, share of the collection's vectors that no index covers)."""
    points, indexed, _ = store.index_status(collection)
    if not points:
        return 0, 0.0
    expected = points * sum(store.vector_names(collection))
    return points, max(0.0, 1 - indexed / expected)


def unindexed_points(store: EdgeVectorStore, collection: str, points: int, share: float) -> float:
    """About how many points have dense vectors outside an index (sparse ones are always indexed)."""
    dense, sparse = store.vector_names(collection)
    return points * share * (dense + sparse) / max(dense, 1)


def due_collections(store: EdgeVectorStore, spare_bytes: int | None = None) -> list[str]:
    """The collections worth a pass; with `spare_bytes`, only those whose copy fits in it (the copy writes every
    byte of the shard's files, sparse or not, and a disk filled by it would kill the server: core/disk.py)."""
    due = []
    for collection in store.collections():
        points, share = unindexed_share(store, collection)
        unindexed = unindexed_points(store, collection, points, share)
        if unindexed < MIN_UNINDEXED_POINTS or share < UNINDEXED_SHARE:
            continue
        if _fruitless.get((store.path, collection)) == points:
            continue
        if spare_bytes is not None and store.collection_bytes(collection) > spare_bytes:
            logger.warning(
                "not optimizing vector collection %s: its copy would not fit on the disk", collection
            )
            continue
        due.append(collection)
    return due


def start_when_due(
    store: EdgeVectorStore, *, quiet_seconds: float, spare_bytes: int | None = None
) -> threading.Thread | None:
    """Start optimizing the collections that need it, in a background thread, if the store is quiet."""
    if _one_at_a_time.locked() or store.idle_seconds() < quiet_seconds:
        return None
    due = due_collections(store, spare_bytes)
    if not due:
        return None
    thread = threading.Thread(target=_optimize_all, args=(store, due), name="edge-optimize", daemon=True)
    thread.start()
    return thread


def _optimize_all(store: EdgeVectorStore, collections: list[str]) -> None:
    if not _one_at_a_time.acquire(blocking=False):
        return
    try:
        for collection in collections:
            try:
                optimize_copy(store, collection)
            except Exception:  # logged and recorded; the next round may try again
                logger.exception("optimizing vector collection %s in the background failed", collection)
    finally:
        _one_at_a_time.release()


def optimize_copy(store: EdgeVectorStore, collection: str) -> dict[str, Any]:
    """One pass over `collection` (copy, optimize in a child, swap); returns what it did and cost."""
    points, share = unindexed_share(store, collection)
    record: dict[str, Any] = {
        "collection": collection,
        "started": _now(),
        "points": points,
        "unindexed_share": round(share, 3),
    }
    _append(store, {**record, "state": "started"})
    work = store.path / f".optimizing-{collection}"
    shutil.rmtree(work, ignore_errors=True)  # left by a pass that a stopped server interrupted
    began = time.perf_counter()
    try:
        store.copy_for_optimizing(collection, work)
        record["copy_s"] = round(time.perf_counter() - began, 3)
        record["child"] = _run_child(work)
        if record["child"].get("changed", True):
            swap_began = time.perf_counter()
            record["replayed"] = store.swap_optimized(collection, work)
            record["swap_ms"] = round((time.perf_counter() - swap_began) * 1000, 1)
        else:  # the copy is as it was: keep the open shard and spare the requests the swap
            store.stop_journal(collection)
            shutil.rmtree(work, ignore_errors=True)
            record["replayed"], record["swap_ms"] = 0, 0.0
    except Exception as exc:
        store.stop_journal(collection)
        shutil.rmtree(work, ignore_errors=True)
        _append(store, {**record, "state": "failed", "error": str(exc)[:500], "finished": _now()})
        raise
    record["seconds"] = round(time.perf_counter() - began, 2)
    points_after, share_after = unindexed_share(store, collection)
    record["unindexed_share_after"] = round(share_after, 3)
    if share_after >= UNINDEXED_SHARE:  # e.g. segments under Edge's indexing threshold: do not loop on them
        _fruitless[(store.path, collection)] = points_after
    _append(store, {**record, "state": "done", "finished": _now()})
    logger.info(
        "optimized vector collection %s in the background: %s points, %.0f s, writes paused %.2f s for the "
        "copy, reads and writes %.0f ms for the swap (%s updates replayed)",
        collection,
        points,
        record["seconds"],
        record["copy_s"],
        record["swap_ms"],
        record["replayed"],
    )
    return record


def history(store_path: Path) -> list[dict[str, Any]]:
    """The passes recorded in the store's log, oldest first (a `started` line, then `done` or `failed`)."""
    try:
        lines = (Path(store_path) / LOG).read_text().splitlines()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in lines if line.strip()]


def _run_child(directory: Path) -> dict[str, Any]:
    child = subprocess.Popen(  # noqa: S603 - our own script, run by our own interpreter
        [sys.executable, str(CHILD), str(directory), str(CHILD_CPUS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _children.add(child)
    try:
        out, err = child.communicate()
    finally:
        _children.discard(child)
    if child.returncode:
        raise VectorStoreError(f"the optimizer process exited with {child.returncode}: {err.strip()[-500:]}")
    return json.loads(out.strip().splitlines()[-1])


@atexit.register
def _stop_children() -> None:
    # A stopping server does not wait minutes for a pass: the copy is left and removed by the next pass.
    for child in list(_children):
        child.kill()


def _append(store: EdgeVectorStore, line: dict[str, Any]) -> None:
    with open(store.path / LOG, "a") as log:
        log.write(json.dumps(line) + "\n")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")

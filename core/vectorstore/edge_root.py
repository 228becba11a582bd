"""The process-wide registry of open Qdrant Edge store directories, for core/vectorstore/edge.py.

A store directory is opened once per process, however many EdgeVectorStore objects point at it: opening a shard
twice fails even within a process. Opening it takes an advisory lock on the directory (.mnemo-owner.lock) that
names this process, so a second process gets a clear VectorStoreLocked naming the holder, not a Rust error. The
open root also runs the one background flusher that persists written shards.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import re
import shutil
import sys
import threading
from pathlib import Path

import qdrant_edge as qe

from .base import VectorStoreDamaged, VectorStoreError, VectorStoreLocked
from .edge_shard import OpenShard

try:  # POSIX only; elsewhere we fall back on recognising the engine's own WAL-lock error.
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

OWNER_LOCK = ".mnemo-owner.lock"
SHARD_CONFIG = "edge_config.json"  # written by qdrant-edge into every shard directory
FLUSH_SECONDS = 1.0  # how often written collections are flushed to disk (see the writes in edge.py)
# A search reads a shard's segments one after another in one thread of the shard's pool, not in a pool thread
# per core: the calling thread holds Python's GIL until the answer is back, so the pool's parallelism never
# overlapped other requests' work, and its threads' hand-offs doubled the CPU of a search (10,000 memories, two
# segments: three searches 2.1 ms of CPU and 1.2 ms of wall time with the default pool, 1.0 and 1.0 with one).
SEARCH_THREADS = 1
logger = logging.getLogger(__name__)
# qdrant-edge 0.9 raises a bare Exception whose text is e.g.
# "Service runtime error: failed to open WAL …/wal: Can't init WAL: Kind(WouldBlock)".
_WAL_LOCKED = re.compile(r"WouldBlock|Resource temporarily unavailable|EWOULDBLOCK", re.IGNORECASE)


def locked_message(path: Path, holder: str = "") -> str:
    who = f" ({holder})" if holder else ""
    return (
        f"The embedded vector store at {path} is already open in another Mnemo process{who}, usually the "
        "running server (`make run`); only one process can open it at a time. Stop that process, or run "
        "this command through the running server, or use a Qdrant server by setting QDRANT_URL."
    )


_DISTANCES = {"cosine": qe.Distance.Cosine, "dot": qe.Distance.Dot, "euclid": qe.Distance.Euclid}


def edge_config(dense: dict[str, tuple[int, str]], sparse: dict[str, bool]) -> qe.EdgeConfig:
    """A shard's config: dense vectors by name (size, distance), sparse vectors by name (IDF modifier or not),
    searched with SEARCH_THREADS threads."""
    return qe.EdgeConfig(
        vectors={
            name: qe.EdgeVectorParams(size=size, distance=_DISTANCES[distance])
            for name, (size, distance) in dense.items()
        },
        sparse_vectors={
            name: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf if idf else None)
            for name, idf in sparse.items()
        },
        max_search_threads=SEARCH_THREADS,
    )


def read_shard_config(directory: Path) -> tuple[dict[str, tuple[int, str]], dict[str, bool]] | None:
    """Vector settings of an existing shard from its edge_config.json, or None if there is no shard.

    The Python binding exposes no getter for a loaded shard's config, and load(path, config) cannot run
    while the shard is open, so we read the file qdrant-edge persists. If its format ever changes we
    skip the check rather than refuse to start: a real size mismatch still fails on the first write.
    """
    try:
        raw = json.loads((directory / SHARD_CONFIG).read_text())
        dense = {
            name: (int(params["size"]), str(params["distance"]).lower())
            for name, params in raw.get("vectors", {}).items()
        }
        sparse = {
            name: str((params or {}).get("modifier") or "").lower() == "idf"
            for name, params in raw.get("sparse_vectors", {}).items()
        }
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return dense, sparse


def load_shard(directory: Path) -> qe.EdgeShard:
    """The shard in `directory`, searched with SEARCH_THREADS threads. A shard created before that setting is
    loaded with it once, and qdrant-edge persists it in the shard's config (the vectors must be restated for
    that: a config without them is refused)."""
    try:
        searched_with = json.loads((directory / SHARD_CONFIG).read_text()).get("max_search_threads")
    except (OSError, ValueError, AttributeError):
        searched_with = None
    found = read_shard_config(directory)
    # As qdrant-edge has it: already set, or a config this code cannot restate.
    if (
        searched_with == SEARCH_THREADS
        or found is None
        or any(d not in _DISTANCES for _, d in found[0].values())
    ):
        return qe.EdgeShard.load(str(directory))
    return qe.EdgeShard.load(str(directory), edge_config(*found))


class OpenRoot:
    """One store directory opened by this process: the owner lock and the shards opened under it."""

    def __init__(self, path: Path, lock_fd: int | None) -> None:
        self.path = path
        self.pid = os.getpid()
        self.users = 0
        self.shards: dict[str, OpenShard] = {}
        self.lock = threading.RLock()  # serialises opening/closing shards, not reads and writes
        self._lock_fd = lock_fd
        self._written: set[str] = set()
        self._closing = threading.Event()
        self._flusher: threading.Thread | None = None

    def written(self, name: str) -> None:
        """Note a write to shard `name`: the flusher persists its segments within FLUSH_SECONDS."""
        with self.lock:
            self._written.add(name)
            if self._flusher is None:
                self._flusher = threading.Thread(
                    target=self._flush_periodically, name="edge-flush", daemon=True
                )
                self._flusher.start()

    def _flush_periodically(self) -> None:
        while not self._closing.wait(FLUSH_SECONDS):
            self.flush_written()

    def flush_written(self) -> None:
        with self.lock:
            names, self._written = self._written, set()
            entries = [self.shards[name] for name in names if name in self.shards]
        for entry in entries:  # outside the lock: a flush takes milliseconds, and searches open shards
            try:
                with entry.flushing, entry.reading() as shard:  # a copy for optimizing waits for it
                    shard.flush()
            # Dropped meanwhile, or the disk failed: the write-ahead log still has the writes.
            except Exception as exc:
                logger.warning("flushing a vector collection under %s failed: %s", self.path, exc)

    def shard(self, name: str, create: qe.EdgeConfig | None = None) -> OpenShard:
        """The open shard for `name`, loading it from disk or creating it with `create`."""
        with self.lock:
            entry = self.shards.get(name)
            if entry is not None:
                return entry
            directory = self.path / name
            finish_interrupted_swap(self.path, name)
            try:
                if (directory / SHARD_CONFIG).exists():
                    shard = load_shard(directory)
                elif create is not None:
                    shard = qe.EdgeShard.create(str(directory), create)
                    shard.flush()
                else:
                    raise VectorStoreError(
                        f"Vector collection {name!r} does not exist in {self.path}; "
                        "ensure_collection() must create it first"
                    )
            except VectorStoreError:
                raise
            except Exception as exc:  # qdrant-edge raises bare Exception
                raise edge_error(exc, directory, "open the collection") from exc
            entry = self.shards[name] = OpenShard(shard)
            return entry

    def drop(self, name: str) -> None:
        with self.lock:
            entry = self.shards.pop(name, None)
            if entry is not None:
                with entry.writing, entry.gate.exclusive():
                    entry.closed = True
                    entry.shard.close()
            shutil.rmtree(self.path / name, ignore_errors=True)

    def close(self) -> None:
        self._closing.set()
        with self.lock:
            for entry in self.shards.values():
                try:
                    with entry.writing, entry.gate.exclusive():
                        entry.closed = True
                        entry.shard.flush()
                        entry.shard.close()
                except Exception:  # noqa: S112 - keep closing the others; the WAL makes writes durable
                    continue
            self.shards.clear()
            if self._lock_fd is not None:
                os.close(self._lock_fd)  # closing the only descriptor releases the flock
                self._lock_fd = None


_registry_lock = threading.Lock()
_registry: dict[Path, OpenRoot] = {}


def acquire(path: Path) -> OpenRoot:
    with _registry_lock:
        root = _registry.get(path)
        if root is not None and root.pid != os.getpid():
            # Inherited through fork() (gunicorn --preload, Celery prefork): the shards' threads did not
            # survive the fork and the parent still owns the files, so forget them without closing.
            root = None
        if root is None:
            root = OpenRoot(path, _take_owner_lock(path))
            _registry[path] = root
        root.users += 1
        return root


def release(root: OpenRoot) -> None:
    with _registry_lock:
        root.users -= 1
        if root.users > 0 or root.pid != os.getpid():
            return
        if _registry.get(root.path) is root:
            del _registry[root.path]
    root.close()


@atexit.register
def _close_all_at_exit() -> None:
    # Flushes what the periodic flusher has not yet and releases the WAL cleanly, so the next start skips replay.
    with _registry_lock:
        roots = [root for root in _registry.values() if root.pid == os.getpid()]
        _registry.clear()
    for root in roots:
        root.close()


def _take_owner_lock(path: Path) -> int | None:
    """Take an exclusive advisory lock on the store, or raise VectorStoreLocked naming the holder.

    The kernel drops a flock when its holder dies, so a crashed server never leaves a stale lock.
    """
    path.mkdir(parents=True, exist_ok=True)
    if fcntl is None:  # pragma: no cover
        return None
    fd = os.open(path / OWNER_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
        os.close(fd)
        raise VectorStoreLocked(locked_message(path, holder)) from None
    except BaseException:
        os.close(fd)
        raise
    # Record who we are, so the process that is refused can tell the user which one to stop.
    argv = sys.orig_argv or sys.argv
    command = " ".join([Path(argv[0]).name, *argv[1:]]).replace("\n", " ")
    command = command if len(command) <= 120 else command[:117] + "..."
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()}: {command}".encode(), 0)
    return fd


def finish_interrupted_swap(path: Path, name: str) -> None:
    """Undo a swap of an optimized copy that a crash interrupted (EdgeVectorStore.swap_optimized).

    `.replaced-<name>` exists only until the copy has every update: while it does, it is the true shard.
    """
    replaced, trash = path / f".replaced-{name}", path / f".trash-{name}"
    if replaced.is_dir():
        logger.warning(
            "an optimization of %s was interrupted mid-swap; restoring the shard it replaced", name
        )
        shutil.rmtree(path / name, ignore_errors=True)
        os.rename(replaced, path / name)
    shutil.rmtree(trash, ignore_errors=True)


def edge_error(exc: Exception, path: Path, action: str) -> VectorStoreError:
    """Translate a qdrant-edge exception (always a bare Exception) into ours."""
    if _WAL_LOCKED.search(str(exc)):
        return VectorStoreLocked(locked_message(path))
    if action == "open the collection":  # its files are there and cannot be read: a damaged segment
        return VectorStoreDamaged(f"Qdrant Edge could not {action} at {path}: {exc}")
    return VectorStoreError(f"Qdrant Edge could not {action} at {path}: {exc}")

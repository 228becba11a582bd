"""Disk space for Mnemo's data, and the reserve that no write may eat into.

A full disk is worse than a refused write. The embedded vector store maps its files into memory and grows them as
sparse files: a write into a page the file system can no longer back kills the process with SIGBUS. Seen on a
full 110 MB tmpfs: an upload answered 500, then the server crashed 11 times in 70 s, each restart resuming the
ingestion that filled the disk again. So every write that can grow the data folder by more than a few kilobytes
first checks that what it needs still leaves MNEMO_DISK_RESERVE_MB free: uploads, memory writes (single and
bulk) are refused with 507 Insufficient Storage, and an ingestion that cannot fit is paused with the reason (the
resume sweep starts it again once the space is there). The health check reports the free space and the reserve.

Every folder that holds Mnemo's data is watched (the data folder, uploads, the embedded vector store, the SQLite
file); the tightest file system decides. Messages name sizes, never paths.
"""

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.utils.translation import gettext_noop

from core.errors import RequestRefused
from core.stored_text import Text
from core.vectorstore import VectorStoreError

MB = 1024 * 1024
# What one memory or chunk adds besides its text: its point in the vector store (three dense vectors of 384-512
# floats, the lexical sparse vector, the payload), written to the store's log and its segment, and its rows' share
# of indexes. Measured near 12 KB a point on the embedded store; rounded up.
POINT_BYTES = 16 * 1024
# A text is stored in its row and passes through SQLite's write-ahead log (or PostgreSQL's) before it.
TEXT_COPIES = 3


class DiskFull(RequestRefused):
    """The write would leave less than the reserve free; `needed` is how many bytes it would have taken."""

    status = 507

    def __init__(self, message: str, needed: int = 0):
        super().__init__(message)
        self.needed = needed


class NoRoomForVectors(DiskFull, VectorStoreError):
    """The embedded vector store refused to grow past the reserve: searches and the mirrors take it as the store
    being unavailable (text matches, rows left for the sweep), ingestion as a full disk (it pauses)."""


@dataclass(frozen=True)
class DiskSpace:
    free: int  # bytes this process may still write on the tightest file system holding Mnemo's data
    total: int
    reserve: int

    @property
    def spare(self) -> int:
        """Bytes a write may take before it reaches the reserve (negative: the reserve is already eaten into)."""
        return self.free - self.reserve

    @property
    def ok(self) -> bool:
        return self.spare > 0

    def describe(self) -> Text:
        return Text(
            gettext_noop("%(free)s free of %(total)s; %(reserve)s kept in reserve (MNEMO_DISK_RESERVE_MB)"),
            free=_mb(self.free),
            total=_mb(self.total),
            reserve=_mb(self.reserve),
        )


def _mb(size: float) -> str:
    if abs(size) >= 10 * MB:
        return f"{size / MB:,.0f} MB"
    return f"{size / MB:,.1f} MB" if abs(size) >= MB / 10 else f"{size / 1024:,.0f} KB"


def data_paths() -> list[Path]:
    """The folders that hold Mnemo's data on this instance."""
    paths = [Path(settings.DATA_DIR), Path(settings.MEDIA_ROOT)]
    if not settings.QDRANT_URL:
        paths.append(Path(settings.QDRANT_EDGE_PATH))
    if connection.vendor == "sqlite":
        paths.append(Path(connection.settings_dict["NAME"]).parent)
    return paths


def disk_space() -> DiskSpace:
    """The free space of the tightest file system among data_paths()."""
    tightest: DiskSpace | None = None
    seen: set[int] = set()
    reserve = settings.MNEMO_DISK_RESERVE_MB * MB
    for path in data_paths():
        existing = next((p for p in (path, *path.parents) if p.exists()), None)
        if existing is None:
            continue
        device = existing.stat().st_dev
        if device in seen:
            continue
        seen.add(device)
        stats = os.statvfs(existing)
        space = DiskSpace(stats.f_bavail * stats.f_frsize, stats.f_blocks * stats.f_frsize, reserve)
        if tightest is None or space.free < tightest.free:
            tightest = space
    return tightest or DiskSpace(0, 0, reserve)


def texts_bytes(texts: Sequence[str]) -> int:
    """What storing `texts` as memories or chunks takes: each text's copies and its point."""
    # Not yet validated: a lone surrogate or a non-text is refused later with its own message.
    sizes = (len(text.encode("utf-8", "replace")) if isinstance(text, str) else 0 for text in texts)
    return sum(size * TEXT_COPIES + POINT_BYTES for size in sizes)


def require_space(needed: int, what: str) -> None:
    """Raise DiskFull unless `needed` more bytes leave the reserve untouched; `what` names them for the user."""
    space = disk_space()
    if needed > space.spare:
        amount = Text(gettext_noop("%(size)s needed, "), size=_mb(needed)) if needed else ""
        message = gettext_noop(
            "Not enough disk space to store %(what)s: %(amount)s%(free)s free and %(reserve)s kept in reserve. "
            "Free some space (delete documents or memories, or ask the operator) and try again."
        )
        free, reserve = _mb(space.free), _mb(space.reserve)
        raise DiskFull(Text(message, what=what, amount=amount, free=free, reserve=reserve), needed)


def require_vector_room() -> None:
    """The embedded vector store's check before it grows its files (core.vectorstore.edge)."""
    space = disk_space()
    if not space.ok:
        raise NoRoomForVectors(
            Text(gettext_noop("The vector store has no room to write: %(space)s."), space=space.describe())
        )

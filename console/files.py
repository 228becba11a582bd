"""The files in MEDIA_ROOT that no row names, and their removal (`manage.py sweep_files`).

Rows delete their files when they go (core.files), but files were left behind before that, by a crash between
writing a file and committing its row, and by deletes kept for an undo that never came. A file counts as an
orphan when no perceptual memory and no document names it and it has not changed for the grace period: an upload
writes its file a moment before its row commits, and a file kept for an undo is touched when its row goes.
"""

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings

from knowledge.models import Document
from memories.models import Memory

ORPHAN_GRACE = timedelta(hours=24)


@dataclass(frozen=True)
class Orphan:
    name: str  # relative to MEDIA_ROOT, as a FileField stores it
    size: int


def _stored_names() -> set[str]:
    names: set[str] = set()
    for model in (Memory, Document):
        names |= set(model._default_manager.exclude(file="").values_list("file", flat=True))
    return names


def orphan_files(*, grace: timedelta = ORPHAN_GRACE) -> Iterator[Orphan]:
    """The files under MEDIA_ROOT no row names, unchanged for `grace`."""
    root = Path(settings.MEDIA_ROOT)
    if not root.is_dir():
        return
    named = _stored_names()
    cutoff = time.time() - grace.total_seconds()
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        name = path.relative_to(root).as_posix()
        status = path.stat()
        if name not in named and status.st_mtime <= cutoff:
            yield Orphan(name, status.st_size)


def sweep_orphans(*, grace: timedelta = ORPHAN_GRACE, dry_run: bool = False) -> list[Orphan]:
    """Delete the orphans (or only list them); the ones found. Emptied folders go too."""
    root = Path(settings.MEDIA_ROOT)
    found = list(orphan_files(grace=grace))
    if dry_run:
        return found
    for orphan in found:
        (root / orphan.name).unlink(missing_ok=True)
    for folder in sorted(
        (p for p in root.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True
    ):
        if not any(folder.iterdir()):
            folder.rmdir()
    return found

"""Stored files follow their rows: a deleted row's file is deleted once the delete commits.

A perceptual memory's file and a document's original are deleted by the apps' post_delete receivers, so every
path that deletes the row (a service, a bulk action, forget, clear_all, the admin, a cascade from its user)
takes the file too, and a rolled-back delete leaves it. Deletes made inside `files_kept()` (a bulk delete the
page can undo) keep their files for the undo and mark them as just released: console.files' orphan sweep removes
what stays unclaimed past its grace period, with any other file on disk that no row names.
"""

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.db import transaction
from django.db.models.fields.files import FieldFile

logger = logging.getLogger(__name__)

_kept: ContextVar[bool] = ContextVar("files_kept_for_undo", default=False)


@contextmanager
def files_kept() -> Iterator[None]:
    """Rows deleted inside this block keep their files (an undo may bring the rows back)."""
    token = _kept.set(True)
    try:
        yield
    finally:
        _kept.reset(token)


def delete_file_on_commit(stored: FieldFile) -> None:
    """Delete a deleted row's file once the transaction commits (at once outside one)."""
    name, storage = stored.name, stored.storage
    if not name:
        return
    if _kept.get():
        transaction.on_commit(lambda: _released(storage, name))
        return
    transaction.on_commit(lambda: _delete(storage, name))


def _delete(storage, name: str) -> None:
    try:
        storage.delete(name)
    except OSError:  # the sweep finds it again; a failed delete must not fail the request that committed
        logger.warning("could not delete the stored file %s of a deleted row", name, exc_info=True)


def _released(storage, name: str) -> None:
    """The sweep's grace period counts from now, not from the upload: an undo has that long to claim it."""
    try:
        os.utime(storage.path(name))
    except (OSError, NotImplementedError):
        pass

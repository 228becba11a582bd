"""The write side of memories, one module per concern (Zulip's zerver/actions is the model): `write` (add one or
many; undo), `edit` (update, restore a version, archive, fold a repeat, supersede, reinstate), `forgetting`
(delete, forget, clear; consolidate) and `access` (the access log), all on `rules` (limits, checks, screening).

Each change is one transaction, then the vector mirror right after the commit, inside the caller's request, so a
memory is searchable as soon as the call that wrote it returns (read-your-writes; memories.mirror). If the vector
store is down the rows stay committed and marked, and the mirror sweep, or `resync_mirrors`, syncs them later.
Deletes are mirrored by memories.signals alone, which hears every path (these actions, the admin, querysets,
cascades) and removes a transaction's points in one call.
"""

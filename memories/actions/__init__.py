"""The write side of memories, one module per concern (Zulip's zerver/actions is the model): `write` (add one or
many; undo), `edit` (update, restore a version, archive, fold a repeat, supersede, reinstate), `forgetting`
(delete, forget, clear; consolidate) and `access` (the access log), all on `rules` (limits, checks, screening).

Each change is one transaction, which also adds the changed memories to the mirror outbox (core.mirror_outbox: a
save or delete through memories.signals, a bulk write through memories.mirror.enqueue); right after the commit the
outbox is drained inside the caller's request, so a memory is searchable as soon as the call that wrote it returns
(read-your-writes). If the vector store is down the rows and their entries stay committed, and the drain's retry,
the mirror sweep, or `resync_mirrors`, syncs them later. A transaction's deletes are one call to the store.
"""

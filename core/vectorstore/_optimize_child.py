"""Child process of core/vectorstore/optimizer.py: optimize the copy of one Edge shard, then exit.

    python core/vectorstore/_optimize_child.py <shard directory> <cpus>

Run as a script, not imported: it needs only qdrant-edge, not Django or the rest of Mnemo. The parent server
keeps serving meanwhile; this process holds its own GIL. It runs at low priority on at most <cpus> cores
(qdrant-edge sizes its indexing threads by the cores it may use), and dies with the thread that started it.
"""

import ctypes
import json
import os
import signal
import sys
import time


def die_with_parent() -> None:
    try:  # Linux: a killed server must not leave this process optimizing an orphaned copy for minutes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def main(directory: str, cpus: int) -> None:
    die_with_parent()
    os.nice(10)
    if hasattr(os, "sched_setaffinity"):
        allowed = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, set(allowed[-cpus:]))
    import qdrant_edge as qe

    started = time.perf_counter()
    shard = qe.EdgeShard.load(directory)
    changed = shard.optimize()
    shard.flush()
    info = shard.info()
    shard.close()
    print(
        json.dumps(
            {
                "changed": bool(changed),
                "seconds": round(time.perf_counter() - started, 2),
                "points": info.points_count,
                "indexed_vectors": info.indexed_vectors_count,
                "segments": info.segments_count,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))

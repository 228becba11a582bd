"""How long writes wait when the Celery broker is down: uploads and memory adds against a served Mnemo whose
CELERY_BROKER_URL (and so its result backend) points at a dead Redis.

    .venv/bin/python bench/broker_down.py              # → results/broker_down.md
    .venv/bin/python bench/broker_down.py --no-write

Two kinds of dead: nothing listens on the port ("closed": the connection is refused at once), and a socket that
accepts connections and never answers ("hanging": only a timeout ends the wait). For each, a fresh Mnemo served
as `make run` serves it (bench/memory_bench.py's `mnemo`, with the broker URL added), then `--rounds` rounds
`--gap` seconds apart, each one `POST /api/v1/documents` (a small text file) and one `POST /api/v1/memories/`;
client-side wall time per request. The README's figure comes from here.
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory_bench import RESULTS, machine, mnemo, versions  # noqa: E402
from report import load  # noqa: E402

BEFORE = """| broker | request | n | first s | max s | median s |
|---|---|---|---|---|---|
| closed | upload | 3 | 19.45 | 19.45 | 19.09 |
| closed | memory add | 3 | 0.32 | 0.32 | 0.23 |
| hanging | upload | 3 | 129.33 | 129.33 | 129.16 |
| hanging | memory add | 3 | 0.65 | 0.65 | 0.31 |"""


@contextmanager
def dead_broker(kind: str):
    """A redis:// URL where nothing answers: a closed port, or one that accepts and stays silent."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        if kind == "hanging":
            sock.listen(64)
        yield f"redis://127.0.0.1:{sock.getsockname()[1]}/0"


def run_kind(kind: str, args: argparse.Namespace) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {"upload": [], "memory add": []}
    with (
        dead_broker(kind) as url,
        mnemo(["writer"], threads=8, stack_env={"CELERY_BROKER_URL": url}) as server,
    ):
        http = requests.Session()
        http.headers["X-API-Key"] = server.keys["writer"]
        base = f"{server.base_url}/api/v1"
        # The first memory add loads the embedding models: not the broker's time.
        http.post(f"{base}/memories/", json={"content": "Warm-up.", "memory_type": "episodic"}, timeout=300)
        for round_ in range(args.rounds):
            began = time.perf_counter()
            files = {
                "file": (f"notes-{kind}-{round_}.txt", f"Harbour log {round_}: calm.".encode(), "text/plain")
            }
            response = http.post(f"{base}/documents", files=files, timeout=300)
            timings["upload"].append(time.perf_counter() - began)
            assert response.status_code == 201, response.text
            began = time.perf_counter()
            body = {"content": f"The ferry left at {round_} past six.", "memory_type": "episodic"}
            response = http.post(f"{base}/memories/", json=body, timeout=300)
            timings["memory add"].append(time.perf_counter() - began)
            assert response.status_code == 201, response.text
            print(
                f"{kind} round {round_}: upload {timings['upload'][-1]:.2f} s, add {timings['memory add'][-1]:.2f} s"
            )
            time.sleep(args.gap)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--gap", type=float, default=10.0, help="seconds between rounds (the old breaker: 30)"
    )
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    started_at, info = datetime.now(UTC), machine()
    rows = ["| broker | request | n | first s | max s | median s |", "|---|---|---|---|---|---|"]
    for kind in ("closed", "hanging"):
        for name, seconds in run_kind(kind, args).items():
            values = np.array(seconds)
            rows.append(
                f"| {kind} | {name} | {len(values)} | {values[0]:.2f} | {values.max():.2f} | "
                f"{np.median(values):.2f} |"
            )
    print("\n".join(rows))
    if args.no_write:
        return
    report = f"""# Writes with the Celery broker down

Measured {started_at:%Y-%m-%d %H:%M} UTC by `bench/broker_down.py --rounds {args.rounds} --gap {args.gap:g}`.
Machine: nproc {info["nproc"]}, {info["cpu"]}; load average {info["load"]} before, {load()} after.
Versions: {versions(["celery", "kombu", "redis"])}.

## Method

For each kind of dead broker (a closed port; a socket that accepts and never answers), a fresh Mnemo served as
`make run` serves it (gunicorn, one worker, 8 threads) with `CELERY_BROKER_URL` (and so the result backend) at
that port and no worker. After one warm-up memory add (the models load), {args.rounds} rounds {args.gap:g} s apart
each send `POST /api/v1/documents` (a small text file) and `POST /api/v1/memories/`. Client-side wall time.

## Results

{chr(10).join(rows)}

Every request answered 201; its task waits in the server's outbox (core/outbox.py), which retries the broker in
the background.

Before the outbox (e6d7744, the same script with `--rounds 3 --gap 31` on a copy of that revision, 2026-12-06,
load average about 11): every upload waited on the broker in the request, each round again since the old circuit
breaker let one request try every 30 s (a memory add queued no task there).

{BEFORE}
"""
    path = RESULTS / "broker_down.md"
    path.write_text(report)
    print(f"Wrote {path}")


if __name__ == "__main__":
    main()

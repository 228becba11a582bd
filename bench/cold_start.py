"""Cold start as a person meets it: `make run` on a fresh data folder, then again on the same folder a few times,
and after each restart the first page, add and search beside the ones that follow.

    .venv/bin/python bench/cold_start.py              # → bench/results/cold_start.md
    .venv/bin/python bench/cold_start.py --no-write   # print only

Each start is the README's command, `make run` (migrate, collectstatic, the demo data, gunicorn as
config/gunicorn.conf.py sets it up), on a free port with MNEMO_DATA_DIR in a fresh temporary folder and the
virtualenv already installed. "Ready" is the time from launching `make run` until `GET /api/v1/health` first
answers; the warm-up's own log line (config/warmup.py) gives the part spent loading the models. The first start
migrates an empty database and loads the demo data; each restart finds both done, which is the README's "a second
`make run`".

After each restart (`--restarts` of them), as the demo user: the first dashboard page (signed in over HTTP with the
login form), the first `POST /api/v1/memories/` and the first `POST /api/v1/memories/search`, then `--repeats`
more of each in turn. The issue's bound: the median of the first requests within 1.5x of the median of the later
ones (one first request per restart is one sample; the machine's noise is in both).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory_bench import free_port  # noqa: E402
from report import load, machine, markdown, revision  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PYTHON = str(ROOT / ".venv" / "bin" / "python")
PASSWORD = "cold-start-bench-pw-8512"
BOUND = 1.5
_WARMED = re.compile(r"warmed up in (\d+(?:\.\d+)?) s", re.IGNORECASE)


def launch(data_dir: Path, port: int, log: Path) -> subprocess.Popen:
    env = dict(os.environ) | {
        "MNEMO_DATA_DIR": str(data_dir),
        "PORT": str(port),
        "HOST": "127.0.0.1",
        "MNEMO_DEMO_PASSWORD": PASSWORD,
    }
    with open(log, "ab") as out:
        return subprocess.Popen(
            ["make", "--no-print-directory", "run"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def wait_ready(process: subprocess.Popen, base_url: str, log: Path, limit_s: float = 600) -> float:
    started = time.monotonic()
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"make run exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            requests.get(f"{base_url}/api/v1/health", timeout=30)
            return time.monotonic() - started
        except requests.RequestException:
            pass
        if time.monotonic() - started > limit_s:
            raise RuntimeError(f"no answer in {limit_s:.0f} s:\n{log.read_text()[-3000:]}")
        time.sleep(0.05)


def stop(process: subprocess.Popen) -> None:
    """SIGTERM to the process group `make run` leads (gunicorn's master stops its worker), then SIGKILL."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def warm_up_seconds(log: Path, after: int) -> float | None:
    found = _WARMED.findall(log.read_text(errors="replace")[after:])
    return float(found[-1]) if found else None


def signed_in(base_url: str) -> requests.Session:
    http = requests.Session()
    http.get(f"{base_url}/login/", timeout=60)
    response = http.post(
        f"{base_url}/login/",
        data={"username": "demo", "password": PASSWORD, "csrfmiddlewaretoken": http.cookies["csrftoken"]},
        headers={"Referer": f"{base_url}/login/"},
        timeout=60,
    )
    if "sessionid" not in http.cookies:
        raise RuntimeError(f"sign-in failed: HTTP {response.status_code}")
    return http


def api_key(data_dir: Path) -> str:
    env = dict(os.environ) | {"MNEMO_DATA_DIR": str(data_dir)}
    done = subprocess.run(
        [PYTHON, "manage.py", "create_api_key", "demo", "--name", "cold-start-bench"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


def timed(call, n: int) -> float:
    started = time.perf_counter()
    response = call(n)
    elapsed = time.perf_counter() - started
    if response.status_code >= 400:
        raise RuntimeError(f"HTTP {response.status_code}: {response.text[:300]}")
    return elapsed * 1000


def first_requests(base_url: str, key: str, repeats: int) -> dict[str, list[float]]:
    page = signed_in(base_url)
    api = requests.Session()
    api.headers["X-API-Key"] = key
    calls = {
        "dashboard page": lambda n: page.get(f"{base_url}/", timeout=120),
        "add a memory": lambda n: api.post(
            f"{base_url}/api/v1/memories/",
            json={
                "content": f"Cold start note {n}: Ravi moved the standup to 9:{n:02d}.",
                "memory_type": "episodic",
            },
            timeout=120,
        ),
        "search": lambda n: api.post(
            f"{base_url}/api/v1/memories/search",
            json={
                "query": ["When is the standup?", "张三在哪里工作？", "what does the user like"][n % 3],
                "limit": 10,
            },
            timeout=120,
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in calls}
    for n in range(repeats + 1):
        for name, call in calls.items():
            times[name].append(timed(call, n))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=20, help="requests of each kind after the first")
    parser.add_argument(
        "--restarts", type=int, default=3, help="starts on the prepared folder, each measured"
    )
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="mnemo-cold-"))
    log = data_dir.parent / f"{data_dir.name}.log"
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    load_before = load()
    starts: list[tuple[str, float, float | None]] = []
    firsts: dict[str, list[float]] = {}
    laters: dict[str, list[float]] = {}
    labels = ["first (empty folder: migrate, demo data)"] + [
        f"again ({n} of {args.restarts}: the README's second `make run`)" for n in range(1, args.restarts + 1)
    ]
    try:
        for label in labels:
            key = api_key(data_dir) if starts else ""
            offset = log.stat().st_size if log.exists() else 0
            process = launch(data_dir, port, log)
            try:
                ready = wait_ready(process, base_url, log)
                starts.append((label, ready, warm_up_seconds(log, offset)))
                print(f"{label}: answering after {ready:.1f} s", flush=True)
                if key:
                    for name, values in first_requests(base_url, key, args.repeats).items():
                        firsts.setdefault(name, []).append(values[0])
                        laters.setdefault(name, []).extend(values[1:])
            finally:
                stop(process)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
        log.unlink(missing_ok=True)

    start_rows = [
        [label, f"{ready:.1f}", "—" if warm is None else f"{warm:.1f}"] for label, ready, warm in starts
    ]
    request_rows = []
    for name, values in firsts.items():
        first, later = float(np.median(values)), float(np.median(laters[name]))
        ratio = first / later
        request_rows.append(
            [
                name,
                " / ".join(f"{value:.0f}" for value in values),
                f"{first:.0f}",
                f"{later:.0f}",
                f"{np.percentile(laters[name], 95):.0f}",
                f"{ratio:.2f}",
                "yes" if ratio <= BOUND else "**no**",
            ]
        )
    starts_table = markdown(["`make run`", "ready after, s", "of which warm-up, s"], start_rows)
    requests_table = markdown(
        [
            "after each restart",
            "first, ms (each restart)",
            "first, median",
            f"the next {args.repeats} of each restart, median ms",
            "their p95, ms",
            "first / later",
            f"within {BOUND}x",
        ],
        request_rows,
    )
    print(starts_table)
    print(requests_table)
    if args.no_write:
        return
    report = f"""# Cold start

Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `bench/cold_start.py --repeats {args.repeats} --restarts {args.restarts}` at {revision()}.
Machine: {machine()}; load average before {load_before}, after {load()}. The machine is shared: read the ratios.

## Method

{__doc__.split(chr(10) + chr(10), 2)[2].strip()}

## `make run` on one data folder: the first start, then the restarts

{starts_table}

## The first requests after each restart

{requests_table}
"""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cold_start.md").write_text(report)
    print(f"wrote {RESULTS / 'cold_start.md'}")


if __name__ == "__main__":
    main()

"""gunicorn settings for `make run` and for the tests that serve Mnemo the same way (tests/served.py).

The address is not here: `make run` passes `--bind $(HOST):$(PORT)` and the tests a free port.
"""

import os
from pathlib import Path

wsgi_app = "config.wsgi"
# One process owns the embedded stores (SQLite writer, Qdrant Edge); threads serve requests concurrently.
workers = 1
threads = 8
timeout = 120
# An idle connection should be closed by the client, not the server: a request a client sends just as the server
# closes the connection fails with "Server disconnected without sending a response" (a client polling every 2 s
# met gunicorn's 2 s default). 75 s outlasts the clients' own idle limits (httpx 5 s, nginx's upstream keepalive
# 60 s), and idle connections wait in the worker's poller, not in a thread.
keepalive = 75
accesslog = "-"

# gunicorn's default control socket is one per user ($XDG_RUNTIME_DIR/gunicorn.ctl or ~/.gunicorn/gunicorn.ctl):
# a second install started by the same user would unlink the first one's socket and take its place, so
# `gunicornc` would reach (and could stop) the wrong server. Each install keeps its own in its data folder,
# which config/settings.py resolves with the same default.
_default_data_dir = Path(__file__).resolve().parent.parent / "var"
_data_dir = Path(os.environ.get("MNEMO_DATA_DIR", str(_default_data_dir)).strip()).resolve()
control_socket = str(_data_dir / "gunicorn.ctl")

import functools
import json
import os
import shutil
import subprocess
import tempfile
import time
import types
from pathlib import Path

import pytest
from django.test import Client
from hypothesis import settings as hypothesis_settings

from core.services import api_key_create
from tests.served import free_port

# Playwright's sync API runs an event loop in the test thread; Django's ORM refuses to run there without this.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

# The same examples on every run, so a run's outcome and its coverage (the floors `make test` checks) do not
# depend on the draw; HYPOTHESIS_PROFILE=explore draws new ones when hunting for bugs.
hypothesis_settings.register_profile("repeatable", derandomize=True, database=None)
hypothesis_settings.register_profile("explore")
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

# Tests' throw-away folders (tmp_path: each test's vector store, data folders, files) go to RAM where there is a
# tmpfs. Qdrant Edge fsyncs when it creates, flushes and closes a collection: on this machine's disk that took
# ~1 s for each test that writes a vector (0.6-0.8 s to create a collection, 0.2 s to close it) against 0.02 s on
# /dev/shm, and all of it waiting, not computing. Nothing in these folders outlives its test, so RAM loses nothing;
# pyproject.toml keeps only the last session's failed tests' folders, to bound the RAM used. TMPDIR, when set,
# still chooses.
SHARED_MEMORY = Path("/dev/shm")
if "TMPDIR" not in os.environ and SHARED_MEMORY.is_dir() and os.access(SHARED_MEMORY, os.W_OK | os.X_OK):
    tempfile.tempdir = str(SHARED_MEMORY)

TESTS = Path(__file__).resolve().parent
# The lanes (CONTRIBUTING.md): `make test` runs them all, `make test-fast` the unit lane (-m unit).
PRODUCTION_FIXTURES = {"postgres", "redis_url", "neo4j_uri"}
PRODUCTION_MARKS = ("production", "celery", "neo4j")


def names_used(function) -> set[str]:
    """The global names a function's code (its nested functions too) refers to."""
    names: set[str] = set()
    codes = [getattr(function, "__code__", None)]
    while codes:
        code = codes.pop()
        if code is not None:
            names.update(code.co_names)
            codes.extend(const for const in code.co_consts if isinstance(const, types.CodeType))
    return names


@functools.cache  # a fixture is shared by hundreds of tests
def reached_names(function) -> frozenset[str]:
    """names_used() of a function and of the functions of its own module that it calls, however deep."""
    names: set[str] = set()
    seen: set[types.FunctionType] = set()
    todo = [function]
    while todo:
        function = todo.pop()
        used = names_used(function)
        names |= used
        module_globals = getattr(function, "__globals__", {})
        for name in used:
            helper = module_globals.get(name)
            if isinstance(helper, types.FunctionType) and helper.__module__ == function.__module__:
                if helper not in seen:
                    seen.add(helper)
                    todo.append(helper)
    return frozenset(names)


def names_reached(item: pytest.Item) -> set[str]:
    """What the test and the fixtures it uses refer to, through their module's helpers."""
    functions = [getattr(item, "function", None)]
    fixture_info = getattr(item, "_fixtureinfo", None)
    if fixture_info is not None:
        functions += [d.func for defs in fixture_info.name2fixturedefs.values() for d in defs]
    return set().union(*(reached_names(function) for function in functions if function is not None))


def lane(item: pytest.Item) -> str:
    """The one lane a test runs in, from what it uses, so that a new test needs no marker to find its lane."""
    path = Path(item.path)
    if path.is_relative_to(TESTS / "browser"):
        return "browser"
    if path.name == "test_api_schema.py":
        return "schemathesis"
    fixtures = set(getattr(item, "fixturenames", ()))
    if fixtures & PRODUCTION_FIXTURES or any(item.get_closest_marker(mark) for mark in PRODUCTION_MARKS):
        return "production"
    reached = names_reached(item)
    if "ServedInstance" in reached:  # gunicorn as `make run` serves it (tests/served.py)
        return "served"
    if reached & {"subprocess", "Popen"}:  # another program: a manage.py command, a Python, make, msgfmt
        return "process"
    return "unit"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(lane(item))


CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    # Chromium comes from Debian (make test installs it); Playwright cannot download its own build here.
    return {**browser_type_launch_args, "executable_path": "/usr/bin/chromium", "args": CHROMIUM_ARGS}


@pytest.fixture(autouse=True)
def own_media_folder(settings, tmp_path):
    """Each test stores uploads in a folder of its own: the xdist workers share the run's data folder, and a test
    that compares the files before and after must not see another worker's."""
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture(autouse=True)
def isolated_vector_store(settings, tmp_path):
    """Each test gets its own embedded vector store; the loaded embedding models are kept."""
    from core import stores

    settings.QDRANT_EDGE_PATH = tmp_path / "qdrant-edge"
    stores.reset(embeddings=False)
    yield
    stores.reset(embeddings=False)


def forget_broker_connections(app) -> None:
    """Drop the Celery app's cached connection pools and result backend, which keep the URLs they were made
    with: a test that changes app.conf.broker_url or result_backend needs new ones."""
    app._pool = None
    app.amqp._producer_pool = None
    app._backend_cache = None
    app._local.__dict__.pop("backend", None)


@pytest.fixture
def short_graph_waits(monkeypatch):
    """Neo4j is given up on after half a second instead of three: for tests of a graph server that is down, which
    wait out every timeout and retry and check what follows, not how long it took."""
    from core.graphstore import neo4j

    monkeypatch.setattr(neo4j, "WAIT_SECONDS", 0.5)


@pytest.fixture(params=["closed", "hanging"])
def dead_port(request):
    """A port on 127.0.0.1 where a backend is down: nothing listens ("closed"), or a socket accepts connections
    and never answers ("hanging", the harder case: only a timeout ends the wait)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        if request.param == "hanging":
            sock.listen(64)
        port = sock.getsockname()[1]
        if request.param == "hanging":
            yield port
            return
    yield port


@pytest.fixture(autouse=True)
def english_after_each_test():
    """A request through LocaleMiddleware leaves its language active in the thread; the next test starts in the
    default language (English) whatever the one before asked for."""
    from django.utils import translation

    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    """Failure counters live in the process's cache; each test starts with none."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user(username="alice", password="correct horse battery")


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user(username="mallory", password="another secret pass")


@pytest.fixture
def logged_in(client: Client, user) -> Client:
    client.force_login(user)
    return client


@pytest.fixture
def api(client, write_key):
    """JSON API calls under /api/v1 with the write key (or `key`)."""

    def call(method: str, path: str, body=None, key: str | None = None):
        kwargs = {"HTTP_X_API_KEY": key or write_key}
        if body is not None:
            kwargs.update(data=json.dumps(body), content_type="application/json")
        return getattr(client, method)(f"/api/v1{path}", **kwargs)

    return call


@pytest.fixture
def chat_completions(client, write_key):
    """POST /v1/chat/completions (the OpenAI-compatible endpoint) with `body`, as the write key (or `key`)."""

    def call(body, key: str | None = None):
        return client.post(
            "/v1/chat/completions",
            data=json.dumps(body),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {key or write_key}",
        )

    return call


@pytest.fixture
def write_key(user) -> str:
    return api_key_create(user=user, name="agent", scope="write")[1]


@pytest.fixture
def read_key(user) -> str:
    return api_key_create(user=user, name="reader", scope="read")[1]


@pytest.fixture(scope="session")
def neo4j_uri(tmp_path_factory):
    """A real Neo4j: NEO4J_TEST_URI/NEO4J_URI when given, else the neo4j-harness JVM when make test asks for it."""
    given = os.environ.get("NEO4J_TEST_URI") or os.environ.get("NEO4J_URI")
    if given:
        yield given
        return
    if os.environ.get("MNEMO_NEO4J_HARNESS") != "1":
        pytest.skip("no Neo4j: set NEO4J_URI, or run through `make test`, which starts the neo4j-harness")
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "MNEMO_RUN_DIR": str(tmp_path_factory.mktemp("neo4j-run"))}
    script = str(root / "scripts" / "neo4j-harness.sh")
    # A free port, not the script's default: two test runs (or xdist workers) on one machine each get their own.
    started = subprocess.run(
        [script, "start", str(free_port())], env=env, capture_output=True, text=True, timeout=600
    )
    if started.returncode != 0:
        pytest.fail(f"the neo4j-harness did not start:\n{started.stderr[-3000:]}")
    uri = started.stdout.strip().splitlines()[-1].removeprefix("NEO4J_URI=")
    yield uri
    subprocess.run([script, "stop"], env=env, capture_output=True, timeout=120)


@pytest.fixture
def fake_llm(settings):
    """The scripted OpenAI-compatible LLM (tests/fake_llm.py) on 127.0.0.1, configured as Mnemo's LLM."""
    from tests.fake_llm import FakeLLM

    with FakeLLM() as fake:
        settings.LLM_BASE_URL = fake.url
        settings.LLM_API_KEY = "test"
        settings.LLM_MODEL = "fake-model"
        settings.LLM_TIMEOUT = 10
        yield fake


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    """A real redis-server on a free port, for the modules that need a broker."""
    if not shutil.which("redis-server"):
        pytest.fail("redis-server is not installed: `make test` installs it (apt-get install redis-server)")
    port = free_port()
    workdir = tmp_path_factory.mktemp("redis")
    server = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
    )
    for _ in range(300):
        if (
            subprocess.run(
                ["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True
            ).stdout.strip()
            == "PONG"
        ):
            break
        assert server.poll() is None, f"redis-server exited ({server.returncode}) before answering on {port}"
        time.sleep(0.1)
    else:
        pytest.fail(f"redis-server did not answer PING on port {port} within 30 s")
    yield f"redis://127.0.0.1:{port}/0"
    server.terminate()
    server.wait(timeout=10)


@pytest.fixture(scope="session")
def postgres():
    """A throw-away PostgreSQL cluster (tests/postgres.py), one per test session."""
    from tests.postgres import PostgresCluster, postgres_bin

    if postgres_bin() is None:
        pytest.fail("PostgreSQL is not installed: `make test` installs it (apt-get install postgresql)")
    cluster = PostgresCluster()
    cluster.start()
    yield cluster
    cluster.stop()

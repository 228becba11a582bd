"""The test set-up itself: every test has one lane, and no test reaches beyond this machine."""

import socket
import subprocess
from types import SimpleNamespace

import pytest
from pytest_socket import SocketConnectBlockedError

from tests.conftest import TESTS, lane
from tests.served import ServedInstance

LANES = {"unit", "process", "served", "browser", "production", "schemathesis"}


def test_a_test_gets_exactly_one_lane_from_what_it_uses(request):
    assert {mark.name for mark in request.node.iter_markers()} & LANES == {"unit"}


def collected(path, *, function=None, fixtures=(), marks=()):
    """What lane() reads of a collected test, for a test that is not there."""
    return SimpleNamespace(
        path=TESTS / path,
        fixturenames=[name for name, _ in fixtures],
        function=function,
        _fixtureinfo=SimpleNamespace(
            name2fixturedefs={name: [SimpleNamespace(func=f)] for name, f in fixtures}
        ),
        get_closest_marker=lambda name: name if name in marks else None,
    )


def starts_a_server(tmp_path):
    ServedInstance(tmp_path).start()


def starts_one_in_a_helper(tmp_path):
    return lambda: ServedInstance(tmp_path)


def runs_a_command(tmp_path):
    return subprocess.run(["true"], cwd=tmp_path)


def calls_a_helper_that_runs_a_command(tmp_path):
    return runs_a_command(tmp_path)


def test_the_lane_follows_what_the_test_or_its_fixtures_start():
    def plain(client):
        return client

    assert lane(collected("test_x.py", function=plain, fixtures=[("client", plain)])) == "unit"
    assert lane(collected("test_x.py", function=starts_a_server)) == "served"
    assert (
        lane(collected("test_x.py", function=plain, fixtures=[("served", starts_one_in_a_helper)]))
        == "served"
    )
    assert lane(collected("test_x.py", function=runs_a_command)) == "process"
    assert lane(collected("test_x.py", function=calls_a_helper_that_runs_a_command)) == "process"
    assert lane(collected("test_x.py", function=plain, fixtures=[("data", runs_a_command)])) == "process"
    assert (
        lane(collected("test_x.py", function=runs_a_command, fixtures=[("served", starts_a_server)]))
        == "served"
    )
    assert lane(collected("test_x.py", function=plain, fixtures=[("redis_url", plain)])) == "production"
    assert lane(collected("test_x.py", function=starts_a_server, marks=("neo4j",))) == "production"
    assert lane(collected("browser/test_x.py", function=starts_a_server)) == "browser"
    assert lane(collected("test_api_schema.py", function=plain)) == "schemathesis"


@pytest.mark.filterwarnings("ignore:A test tried to use socket:UserWarning")
def test_a_connection_beyond_loopback_fails_loudly():
    with socket.socket() as sock, pytest.raises(SocketConnectBlockedError, match="192.0.2.1"):
        sock.connect(("192.0.2.1", 80))  # TEST-NET-1: routed nowhere, and refused before it is tried
    with pytest.raises(SocketConnectBlockedError):
        socket.create_connection(("192.0.2.1", 443), timeout=1)


def test_loopback_connections_go_through():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname(), timeout=5) as client:
            accepted, _ = server.accept()
            accepted.sendall(b"hello")
            assert client.recv(5) == b"hello"
            accepted.close()

import os
import socket

import pytest
from django.test import Client

from core.services import api_key_create

# Playwright's sync API runs an event loop in the test thread; Django's ORM refuses to run there without this.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

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
def write_key(user) -> str:
    return api_key_create(user=user, name="agent", scope="write")[1]


@pytest.fixture
def read_key(user) -> str:
    return api_key_create(user=user, name="reader", scope="read")[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]

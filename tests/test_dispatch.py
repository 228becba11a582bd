import threading

import pytest
from celery import shared_task
from django.db import transaction

from core import dispatch
from core.tasks import ping

calls: list[int] = []
flaky_failures = {"left": 0}


class Flaky(Exception):
    pass


@shared_task(name="tests.write_marker")
def write_marker(path: str, text: str) -> str:
    """Registered only where the tests import it, never in the production app."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


@shared_task(name="tests.flaky", autoretry_for=(Flaky,))
def flaky(value: int) -> int:
    if flaky_failures["left"] > 0:
        flaky_failures["left"] -= 1
        raise Flaky("not yet")
    calls.append(value)
    return value


def test_without_a_broker_tasks_run_on_the_local_pool(settings):
    settings.CELERY_BROKER_URL = ""
    settings.MNEMO_TASKS_EAGER = False
    future = dispatch.dispatch(ping, "x")
    assert future.result(timeout=10)["pong"] == "x"
    assert dispatch.worker_description().startswith("in-process pool")


def test_the_local_pool_runs_in_another_thread(settings, tmp_path):
    settings.CELERY_BROKER_URL = ""
    settings.MNEMO_TASKS_EAGER = False
    seen = []
    original = write_marker.run

    def spy(path, text):
        seen.append(threading.current_thread().name)
        return original(path, text)

    write_marker.run = spy
    try:
        dispatch.dispatch(write_marker, str(tmp_path / "m.txt"), "hi").result(timeout=10)
    finally:
        write_marker.run = original
    assert seen[0].startswith("mnemo-worker")
    assert (tmp_path / "m.txt").read_text() == "hi"


def test_retryable_failures_are_retried_with_backoff(settings, monkeypatch):
    settings.CELERY_BROKER_URL = ""
    settings.MNEMO_TASKS_EAGER = False
    monkeypatch.setattr(dispatch, "LOCAL_BACKOFF_SECONDS", 0.01)
    calls.clear()
    flaky_failures["left"] = 2
    dispatch.dispatch(flaky, 7)
    for _ in range(200):
        if calls:
            break
        threading.Event().wait(0.02)
    assert calls == [7]
    assert flaky_failures["left"] == 0


@pytest.mark.django_db(transaction=True)
def test_dispatch_on_commit_waits_for_the_commit(settings, tmp_path):
    settings.CELERY_BROKER_URL = ""
    settings.MNEMO_TASKS_EAGER = False
    marker = tmp_path / "after-commit.txt"
    with transaction.atomic():
        dispatch.dispatch_on_commit(write_marker, str(marker), "committed")
        dispatch.wait_for_local_tasks()
        assert not marker.exists()
    dispatch.wait_for_local_tasks()
    assert marker.read_text() == "committed"


@pytest.mark.django_db(transaction=True)
def test_dispatch_on_commit_drops_the_task_on_rollback(settings, tmp_path):
    settings.CELERY_BROKER_URL = ""
    settings.MNEMO_TASKS_EAGER = False
    marker = tmp_path / "rolled-back.txt"
    with pytest.raises(RuntimeError), transaction.atomic():
        dispatch.dispatch_on_commit(write_marker, str(marker), "never")
        raise RuntimeError("rollback")
    dispatch.wait_for_local_tasks()
    assert not marker.exists()


def test_broker_urls_are_shown_without_passwords():
    assert dispatch.redact_url("redis://:s3cret@redis:6379/0") == "redis://…@redis:6379/0"
    assert dispatch.redact_url("redis://redis:6379/0") == "redis://redis:6379/0"


def test_every_task_celery_beat_schedules_is_a_registered_task(settings):
    # A misspelt name in the schedule would be sent on time and dropped by every worker, unnoticed.
    from importlib import import_module
    from importlib.util import find_spec

    from django.apps import apps

    from config.celery import app

    for config in apps.get_app_configs():  # what the worker's autodiscover_tasks() imports
        if find_spec(f"{config.name}.tasks"):
            import_module(f"{config.name}.tasks")
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "memories.prune_access_log" in scheduled
    assert scheduled <= set(app.tasks)


def test_periodic_work_runs_on_the_local_pool(settings, monkeypatch):
    settings.CELERY_BROKER_URL = ""
    settings.MNEMO_TASKS_EAGER = False
    calls.clear()
    flaky_failures["left"] = 0

    ticks = threading.Event()
    original = flaky.run

    def counting(value=1):
        ticks.set()
        return original(value)

    monkeypatch.setattr(flaky, "run", counting)
    stop = dispatch.start_periodic(flaky, 0.05)
    try:
        assert ticks.wait(5)
    finally:
        stop.set()


@pytest.mark.django_db
def test_with_the_broker_down_writes_and_uploads_answer_at_once_and_their_tasks_wait(
    api, client, write_key, settings, django_capture_on_commit_callbacks, dead_port
):
    """Before, with Redis down as broker and result backend, an upload waited 19 s in the request (kombu's and
    the result backend's reconnection retries), and again every 30 s. Now the request hands its task to the
    outbox (core/outbox.py) and answers; the outbox keeps trying in the background."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from config.celery import app
    from core.outbox import outbox
    from memories.models import Memory
    from tests.conftest import forget_broker_connections

    # The models (and jieba's dictionary) load on the first writes: that is not the broker's time.
    for content in ("Warm-up: Bo likes tea", "用户喜欢喝茶"):
        assert api("post", "/memories/", {"content": content, "memory_type": "semantic"}).status_code == 201
    dead = f"redis://127.0.0.1:{dead_port}/0"
    settings.CELERY_BROKER_URL = dead
    settings.MNEMO_TASKS_EAGER = False
    app.conf.broker_url = app.conf.result_backend = dead
    forget_broker_connections(app)
    outbox.discard_waiting()
    try:
        for content in ("Ana works at Acme", "用户住在上海"):
            with django_capture_on_commit_callbacks(execute=True):
                response = api("post", "/memories/", {"content": content, "memory_type": "semantic"})
            assert response.status_code == 201, response.content
        with django_capture_on_commit_callbacks(execute=True):
            upload = client.post(
                "/api/v1/documents",
                {"file": SimpleUploadedFile("notes.txt", b"The harbour opens at six.")},
                HTTP_X_API_KEY=write_key,
            )
        assert upload.status_code == 201 and upload.json()["status"] == "queued"
        assert Memory.objects.count() == 4
        assert outbox.waiting() >= 1  # the ingestion task, kept for when the broker answers
    finally:
        outbox.discard_waiting()
        app.conf.broker_url = app.conf.result_backend = None
        forget_broker_connections(app)

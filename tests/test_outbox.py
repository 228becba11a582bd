"""The broker outbox's sender (core/outbox.py) on its own: an injected publish function stands in for the broker
(tests/test_celery.py and tests/test_dispatch.py run it against a real Redis and a dead port), so the outage,
the order, the limit and a task cancelled mid-send are each reached every run instead of when timing allows."""

import threading
from types import SimpleNamespace

import pytest

from core.outbox import Outbox

pytestmark = pytest.mark.unit


class Broker:
    """Refuses while down; records what it took, in order."""

    def __init__(self) -> None:
        self.up = threading.Event()
        self.refusals = 0
        self.refused_twice = threading.Event()  # by then the outbox has recorded the first refusal
        self.sent: list[str] = []

    def publish(self, task, args, kwargs, options):
        if not self.up.is_set():
            self.refusals += 1
            if self.refusals >= 2:
                self.refused_twice.set()
            raise ConnectionRefusedError("Connection refused")
        self.sent.append(task.name)
        return f"sent {task.name}"


def task(name: str) -> SimpleNamespace:
    return SimpleNamespace(name=name)


def quick_outbox(publish, **options) -> Outbox:
    return Outbox(publish, first_retry_seconds=0.01, retry_max_seconds=0.05, **options)


def test_tasks_wait_while_the_broker_is_down_and_go_in_order_once_it_answers():
    broker = Broker()
    outbox = quick_outbox(broker.publish)
    futures = [outbox.put(task(name), (), {}) for name in ("first", "second", "third")]
    assert broker.refused_twice.wait(5)

    assert outbox.down_since is not None and outbox.last_error == "Connection refused"
    assert outbox.waiting() == 3 and not any(future.done() for future in futures)

    broker.up.set()
    assert outbox.flush(5)
    assert [future.result(timeout=1) for future in futures] == ["sent first", "sent second", "sent third"]
    assert broker.sent == ["first", "second", "third"]
    assert outbox.down_since is None and outbox.last_error == ""


def test_past_its_limit_the_outbox_leaves_the_oldest_task_to_the_sweeps():
    broker = Broker()
    outbox = quick_outbox(broker.publish, limit=2)
    oldest = outbox.put(task("oldest"), (), {})
    assert broker.refused_twice.wait(5)
    kept = [outbox.put(task(name), (), {}) for name in ("second", "third")]

    assert oldest.cancelled() and outbox.waiting() == 2
    broker.up.set()
    assert outbox.flush(5)
    assert broker.sent == ["second", "third"] and all(future.done() for future in kept)


def test_a_task_cancelled_while_it_is_being_sent_does_not_stop_the_sender():
    """Cancelling the future of the task in flight made set_result raise in the sender thread, which ended it:
    every later task then waited forever."""
    in_flight, release = threading.Event(), threading.Event()

    def slow_publish(task, args, kwargs, options):
        if task.name == "slow":
            in_flight.set()
            assert release.wait(5)
        return f"sent {task.name}"

    outbox = quick_outbox(slow_publish)
    slow = outbox.put(task("slow"), (), {})
    assert in_flight.wait(5)
    outbox.discard_waiting()
    release.set()

    assert slow.cancelled()
    assert outbox.put(task("next"), (), {}).result(timeout=5) == "sent next"

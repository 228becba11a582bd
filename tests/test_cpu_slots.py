"""core.cpu_slots: at most MNEMO_CPU_SLOTS threads compute at once, and no wait can deadlock."""

import threading
import time

import pytest
from django.db import transaction

from core import cpu_slots
from core.cpu_slots import uses_cpu, waiting_elsewhere


@pytest.fixture
def slots(monkeypatch):
    def set_slots(count: int) -> None:
        monkeypatch.setattr(cpu_slots, "_slots", threading.BoundedSemaphore(count))

    return set_slots


def most_at_once(threads: int, work) -> int:
    """Run `work` in `threads` threads at once; how many were inside it at the same time, at most."""
    inside, most, lock = 0, 0, threading.Lock()

    @uses_cpu
    def step() -> None:
        nonlocal inside, most
        with lock:
            inside += 1
            most = max(most, inside)
        work()
        with lock:
            inside -= 1

    runners = [threading.Thread(target=step) for _ in range(threads)]
    for runner in runners:
        runner.start()
    for runner in runners:
        runner.join(timeout=10)
    assert not any(runner.is_alive() for runner in runners)
    return most


def test_no_more_threads_compute_at_once_than_there_are_slots(slots):
    slots(2)
    assert most_at_once(8, lambda: time.sleep(0.05)) == 2
    slots(1)
    assert most_at_once(4, lambda: time.sleep(0.02)) == 1


def test_a_thread_holding_a_slot_takes_no_second_one(slots):
    # A chat turn searches, then writes: both take a slot, in one thread.
    slots(1)

    @uses_cpu
    def search() -> str:
        return "found"

    @uses_cpu
    def chat_turn() -> str:
        return search()

    finished: list[str] = []
    runner = threading.Thread(target=lambda: finished.append(chat_turn()))
    runner.start()
    runner.join(timeout=5)
    assert finished == ["found"]


@pytest.mark.django_db
def test_a_thread_inside_a_transaction_never_waits_for_a_slot(slots, monkeypatch, caplog):
    # On SQLite the transaction holds the write lock that the slot holders may be waiting for.
    slots(1)
    monkeypatch.setattr(cpu_slots, "SLOT_WAIT_SECONDS", 0.2)  # a wait would end in the log line below
    taken, release = threading.Event(), threading.Event()

    @uses_cpu
    def hold_the_slot() -> None:
        taken.set()
        release.wait(10)

    holder = threading.Thread(target=hold_the_slot)
    holder.start()
    try:
        assert taken.wait(5)
        with transaction.atomic():
            assert uses_cpu(lambda: "written")() == "written"
        assert "no CPU slot came free" not in caplog.text
    finally:
        release.set()
        holder.join(timeout=5)


def test_no_thread_waits_for_a_slot_longer_than_the_bound(slots, monkeypatch, caplog):
    # Slots that something never gives back must not stall every request behind them.
    slots(1)
    monkeypatch.setattr(cpu_slots, "SLOT_WAIT_SECONDS", 0.2)
    taken, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=uses_cpu(lambda: (taken.set(), release.wait(10))))
    holder.start()
    try:
        assert taken.wait(5)
        began = time.monotonic()
        assert uses_cpu(lambda: "computed")() == "computed"
        assert (
            time.monotonic() - began >= 0.2
        )  # it did wait its bound (only a floor: a busy machine is slower)
        assert "no CPU slot came free" in caplog.text
    finally:
        release.set()
        holder.join(timeout=5)
    # The holder gave its slot back and the unslotted call released nothing: exactly one slot is free.
    assert cpu_slots._semaphore().acquire(timeout=1)
    assert not cpu_slots._semaphore().acquire(timeout=0.1)
    cpu_slots._semaphore().release()


def test_a_thread_waiting_on_another_server_lends_its_slot(slots):
    # The LLM or a remote embedder: while one request waits on it, another computes.
    slots(1)
    answered, asked, others_ran = threading.Event(), threading.Event(), threading.Event()

    @uses_cpu
    def ask_the_llm() -> None:
        with waiting_elsewhere():
            asked.set()
            assert others_ran.wait(5), "no other thread got the slot while this one waited"
        answered.set()

    asking = threading.Thread(target=ask_the_llm)
    asking.start()
    assert asked.wait(5)
    other = threading.Thread(target=uses_cpu(others_ran.set))
    other.start()
    other.join(timeout=5)
    asking.join(timeout=5)
    assert others_ran.is_set() and answered.is_set()
    # Every slot is back: the one slot can be taken again.
    assert cpu_slots._semaphore().acquire(timeout=1)
    cpu_slots._semaphore().release()


def computes_meanwhile(wait_on_a_server) -> bool:
    """Whether, with one slot, another thread computes while `wait_on_a_server` runs in that slot."""
    computed_at: list[float] = []
    finished_at: list[float] = []

    @uses_cpu
    def waiting() -> None:
        wait_on_a_server()
        finished_at.append(time.monotonic())

    asking = threading.Thread(target=waiting)
    asking.start()
    time.sleep(0.3)  # the request is with the server now
    other = threading.Thread(target=uses_cpu(lambda: computed_at.append(time.monotonic())))
    other.start()
    other.join(timeout=10)
    asking.join(timeout=10)
    return bool(computed_at and finished_at and computed_at[0] < finished_at[0])


def test_the_llm_client_lends_its_slot_while_it_waits(slots):
    from core.llm import LLMClient
    from tests.fake_llm import FakeLLM

    slots(1)
    with FakeLLM() as fake:
        fake.delay = 0.8
        client = LLMClient(fake.url, "key", "model", timeout=5)
        assert computes_meanwhile(lambda: client.ask("system", "Hello"))
    assert len(fake.requests) == 1


@pytest.mark.parametrize("backend", ["qdrant", "neo4j"])
def test_a_thread_waiting_on_the_vector_or_graph_server_lends_its_slot(slots, backend):
    # A socket that accepts and never answers: the call waits out its timeout, and another thread computes
    # meanwhile instead of waiting behind it.
    import socket

    from core.graphstore.base import GraphStoreError
    from core.vectorstore import VectorStoreError

    slots(1)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        if backend == "qdrant":
            from core.vectorstore.qdrant import QdrantServerStore

            store = QdrantServerStore(f"http://127.0.0.1:{port}", timeout=1.0)
            call, failure = (lambda: store.count("memories")), VectorStoreError
        else:
            from core.graphstore.neo4j import Neo4jGraphStore

            graph = Neo4jGraphStore(f"bolt://127.0.0.1:{port}", timeout=1.0)
            call, failure = (lambda: graph.neighbors("user", ["entity"])), GraphStoreError

        def ask_the_server() -> None:
            with pytest.raises(failure):
                call()

        assert computes_meanwhile(ask_the_server)


@pytest.mark.django_db(transaction=True)  # outside a test transaction, as a served request: the slot is taken
def test_a_search_whose_client_left_while_it_waited_computes_nothing_and_answers_499(
    client, write_key, slots, monkeypatch
):
    import json
    import socket

    from memories import retrieval

    slots(1)
    searched: list[str] = []
    real_search = retrieval.hybrid.search

    def counting_search(*args, **kwargs):
        searched.append(kwargs["query"])
        return real_search(*args, **kwargs)

    def search(query: str, sock: socket.socket):
        return client.post(
            "/api/v1/memories/search",
            data=json.dumps({"query": query}),
            content_type="application/json",
            HTTP_X_API_KEY=write_key,
            **{"gunicorn.socket": sock},  # what gunicorn puts in the environ: the client's connection
        )

    monkeypatch.setattr(retrieval.hybrid, "search", counting_search)
    server_end, client_end = socket.socketpair()
    with server_end, client_end:
        assert search("who is still here?", server_end).status_code == 200
        client_end.close()  # the client goes away before its turn
        assert search("who left?", server_end).status_code == 499
    assert searched == ["who is still here?"]
    assert cpu_slots._semaphore().acquire(timeout=1)  # the slot was given back
    cpu_slots._semaphore().release()

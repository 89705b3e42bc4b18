"""app/server/admission.py: a bounded number of jobs at once, the rest served in arrival order with their place told,
refused with a time to retry when the queue is full or the wait too long."""

import re
import threading
import time

import pytest

from app.server.admission import Admission, Refused


def test_jobs_run_one_at_a_time_in_arrival_order_and_each_waiting_visitor_is_told_their_place():
    counter = Admission("search", slots=1, max_waiting=8, wait_limit_s=30, typical_s=1)
    order, told, running, most = [], {}, [0], [0]
    lock = threading.Lock()

    def visitor(name: str) -> None:
        told[name] = []
        with counter.admitted(name, tell=told[name].append):
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            order.append(name)
            time.sleep(0.4)
            with lock:
                running[0] -= 1

    threads = []
    for name in "abc":
        threads.append(threading.Thread(target=visitor, args=(name,)))
        threads[-1].start()
        time.sleep(0.1)  # a arrives first, then b, then c
    for thread in threads:
        thread.join()
    assert order == ["a", "b", "c"] and most == [1]
    assert told["a"] == [] and told["b"][0].startswith("Waiting for another visitor's search (a for ")
    assert "1 more ahead of yours" in told["c"][0]
    assert counter.waiting() == 0 and counter.running() == []


def test_a_full_queue_and_a_long_wait_are_refused_with_when_to_retry():
    counter = Admission("search", slots=1, max_waiting=1, wait_limit_s=0.6, typical_s=10)
    release = threading.Event()

    def holder() -> None:
        with counter.admitted("long"):
            release.wait(5)

    first = threading.Thread(target=holder)
    first.start()
    time.sleep(0.1)
    outcome = []

    def waits_too_long() -> None:
        try:
            with counter.admitted("second"):
                outcome.append("ran")
        except Refused as refusal:
            outcome.append(str(refusal))

    second = threading.Thread(target=waits_too_long)
    second.start()
    time.sleep(0.1)
    with pytest.raises(Refused, match=r"1 search\(es\) running and 1 waiting, the most this server queues: try again"):
        with counter.admitted("third"):
            pass
    second.join()  # refused after waiting its 0.6 s, and gone from the queue
    assert len(outcome) == 1 and re.match(r"waited \d s for another visitor's search to end", outcome[0]), outcome
    assert counter.waiting() == 0
    with pytest.raises(Refused, match=r"waited \d s for another visitor's search to end"):
        with counter.admitted("fourth"):
            pass
    release.set()
    first.join()
    with counter.admitted("fifth") as waited:  # free again at once
        assert waited < 0.5


def test_a_visitor_who_leaves_while_waiting_leaves_the_queue():
    counter = Admission("search", slots=1, max_waiting=4, wait_limit_s=30, typical_s=1)

    def leave(text: str) -> None:
        raise KeyboardInterrupt  # Streamlit stops a script the same way: an exception where it waits

    with counter.admitted("long"):
        with pytest.raises(KeyboardInterrupt):
            with counter.admitted("leaver", tell=leave):
                pass
        assert counter.waiting() == 0


def test_a_job_of_lower_priority_waits_behind_every_waiting_job_of_a_higher_one_and_is_named_to_them():
    counter = Admission("search", slots=1, max_waiting=8, wait_limit_s=30, typical_s=1)
    order, told = [], {}
    first_in = threading.Event()

    def visitor(name: str, priority: int, kind: str = "") -> None:
        told[name] = []
        with counter.admitted(name, tell=told[name].append, priority=priority, kind=kind):
            first_in.set()
            order.append(name)
            time.sleep(0.3)

    threads = [threading.Thread(target=visitor, args=("reading 1", 1, "reading"))]
    threads[0].start()
    first_in.wait(5)  # a reading runs; then a second reading and a search arrive, the reading first
    for name, priority in (("reading 2", 1), ("search", 0)):
        threads.append(threading.Thread(target=visitor, args=(name, priority, "reading" if priority else "")))
        threads[-1].start()
        while counter.waiting() < len(threads) - 1:
            time.sleep(0.01)
    for thread in threads:
        thread.join()
    assert order == ["reading 1", "search", "reading 2"]
    assert told["search"][0].startswith("Waiting for another visitor's reading (reading 1 for ")

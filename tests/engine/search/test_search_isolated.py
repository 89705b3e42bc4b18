"""Searches in a child process (``engine.search.isolated``, what the app's Search page uses): the same answer as
in this process, the child's start counted in the visitor's limit, run below the server's priority, ended past
its limit with a message that says so."""

import os
import signal
import threading
import time

import pytest

from engine import UNIT, Costs
from engine.runtime.errors import RunFailed
from engine.runtime.isolated import call_isolated
from engine.runtime.lifetime import stop_signals
from engine.search import SearchProblem, exact, search
from engine.search.isolated import (
    FORK_SERVER,
    NICENESS,
    _search_counting_start,
    frontier_isolated,
    search_isolated,
    start_fork_server,
)

HARD_COSTS = "F=1:1.5:1:2:1:1:1.25:1:1:1:1:2:1:1:1.5:1,I=" + ":".join(["1"] * 16) + ",W=" + ":".join(["1"] * 16)
"""Uneven forwards over 16 stages (8 ranks in a V): CP-SAT proves nothing in seconds (as in search_crowd.py)."""


def test_a_search_in_a_child_finds_what_it_finds_here():
    problem = SearchProblem(4, 8, UNIT, memory_budget=4, time_limit_s=10)
    there, here = search_isolated(problem), search(problem)
    assert (there.makespan, there.status, there.schedule.ranks) == (here.makespan, here.status, here.schedule.ranks)
    assert there.makespan == 27.0  # 1F1B's (p − 1 + m)·(F + B) = 11 × 3 would be 33: the search beats it


def test_the_childs_start_is_counted_in_the_visitors_limit():
    problem = SearchProblem(2, 4, UNIT, memory_budget=4, time_limit_s=5)
    result = _search_counting_start(problem, time.time() - 3.0, False, progress=lambda *_: None)
    assert 1.7 <= result.problem.time_limit_s <= 1.8  # 5 s asked, 3 s gone before the child started, 0.2 s to return


def test_a_frontier_in_a_child_gives_one_point_per_budget():
    found = frontier_isolated(3, 6, UNIT, "loop", (2.0, 3.0), time_limit_per_budget_s=1, objective="makespan")
    assert [point.memory_budget for point in found.points] == [2.0, 3.0]
    assert found.points[1].result.makespan <= found.points[0].result.makespan


def test_a_refused_search_is_a_value_error_from_the_child():
    with pytest.raises(ValueError, match="below the 1 micro-batch the first forward needs"):
        search_isolated(SearchProblem(4, 8, UNIT, memory_budget=0.5))


@pytest.mark.timing  # "stopped before its limit" is measured: run alone, not beside the parallel tests
def test_a_search_stopped_at_the_visitors_limit_answers_with_its_best_so_far(monkeypatch):
    costs = Costs.parse(HARD_COSTS, num_stages=16, where="the test", comm=0.5)
    problem = SearchProblem(8, 32, costs, memory_budget=3, placement="v", time_limit_s=30, objective="period")
    solving = threading.Event()  # set once CP-SAT starts: the greedy's schedule is the best so far by then
    original = exact.solve_until
    monkeypatch.setattr(exact, "solve_until", lambda *args, **kwargs: solving.set() or original(*args, **kwargs))

    def stop_once_solving() -> None:  # what the parent sends at the limit: once CP-SAT runs, or after 10 s all the
        solving.wait(10)  # same (a busy host may spend the search's time building the model; the greedy's is kept)
        os.kill(os.getpid(), signal.SIGTERM)

    stopper = threading.Thread(target=stop_once_solving, daemon=True)
    stopper.start()
    started = time.monotonic()
    with stop_signals():
        result = _search_counting_start(problem, time.time(), False, progress=lambda *_: None)
    assert time.monotonic() - started < 20  # not the 30 s the search had
    assert result.detail.endswith("; stopped at the time limit") and result.makespan > 0


def _answers_when_stopped(progress) -> str:
    try:
        time.sleep(60)
    except KeyboardInterrupt:  # the parent's SIGTERM at the limit
        return "the best so far"
    return "slept"


def test_a_child_asked_to_stop_at_its_limit_is_heard_within_the_grace():
    start_fork_server()  # its own start (seconds on a busy host) is not the child's
    started = time.monotonic()
    answer = call_isolated(
        _answers_when_stopped, (), time_limit_s=1, what="search", context=FORK_SERVER, answer_grace_s=2
    )
    assert answer == "the best so far"  # sent within the grace: past it, call_isolated raises RunFailed
    assert time.monotonic() - started < 10  # not the child's 60 s sleep


def _own_niceness(progress) -> int:
    return os.nice(0)


def _sleep_long(progress) -> None:
    time.sleep(60)


def test_the_child_runs_below_the_servers_priority_and_is_ended_past_its_limit():
    def call(function, limit):
        return call_isolated(function, (), time_limit_s=limit, what="search", niceness=NICENESS, context=FORK_SERVER)

    assert NICENESS > 0 and call(_own_niceness, 30) == os.nice(0) + NICENESS
    started = time.monotonic()
    with pytest.raises(RunFailed, match="the search took longer than its limit of 2 s on this server and was ended$"):
        call(_sleep_long, 2)
    assert time.monotonic() - started < 15

"""app/frame/kept.py: the server keeps engine results by the bytes they hold — weighed close to what they take
(against tracemalloc), the least recently used out first past the budget, the heaviest never kept, and one
computation for visitors who ask for the same thing at once."""

import json
import threading
import time
import tracemalloc

import numpy as np
import pandas as pd

from app.charts import timeline_figure
from app.frame.kept import LARGEST_SHARE, KeptResults, kept_bytes
from engine import Costs, build_schedule, simulate


def traced(make):
    """``make()``'s value and the bytes its allocations still hold (tracemalloc: an independent measure)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        value = make()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    return value, held


def test_a_simulation_and_its_figure_weigh_what_tracemalloc_says_they_hold():
    costs = Costs.of({"F": 1.0, "I": 1.2, "W": 0.8})
    timeline_figure(simulate(build_schedule("interleaved-zb", 4, 8, 2), costs), title="warm")  # what every
    # figure shares (Plotly's validators, the compiled walk) is made once per process, before the measure

    def simulation():
        schedule = build_schedule("interleaved-zb", 8, 64, 2)
        return schedule, simulate(schedule, costs)

    simulation()  # once untraced: whatever the first simulation of this size loads in this process (a module a
    # test run's earlier tests did not import) is not the result's own weight
    (schedule, timeline), held = traced(simulation)
    assert 0.5 * held <= kept_bytes((schedule, timeline)) <= 2.0 * held, (kept_bytes((schedule, timeline)), held)

    def figure():
        built = timeline_figure(timeline, title="ZB")
        return built, json.loads(built.to_json())

    drawn, held = traced(figure)
    assert 0.5 * held <= kept_bytes(drawn) <= 2.0 * held, (kept_bytes(drawn), held)


def test_arrays_frames_and_shared_objects_are_counted_once():
    array = np.zeros(1_000_000)  # 8 MB
    assert 8e6 <= kept_bytes(array) < 8.1e6
    assert kept_bytes((array, array, array[::2])) < 8.1e6  # the same buffer, and a view of it
    frame = pd.DataFrame({"a": np.arange(100_000, dtype=np.int64)})
    assert 8e5 <= kept_bytes(frame) < 9e5
    text = "x" * 10_000
    assert kept_bytes([text] * 100) < 12_000


def test_past_the_budget_the_least_recently_used_go_first():
    store = KeptResults(budget_bytes=100_000)
    for key in "abcd":
        store.get(key, lambda: np.zeros(2_900))  # 23 kB each: four fit
    store.get("a", lambda: None)  # a used again: b is now the oldest
    store.get("e", lambda: np.zeros(2_900))
    assert len(store) == 4 and store.bytes <= 100_000
    made = []
    store.get("b", lambda: made.append("b") or np.zeros(1))
    store.get("a", lambda: made.append("a") or np.zeros(1))
    assert made == ["b"]  # b was dropped, a was kept


def test_a_value_heavier_than_its_share_of_the_budget_is_returned_and_not_kept():
    store = KeptResults(budget_bytes=100_000)
    small = store.get("small", lambda: np.zeros(100))
    heavy = store.get("heavy", lambda: np.zeros(100_000 // LARGEST_SHARE // 8 + 100))
    assert heavy.size > 0 and len(store) == 1 and store.get("small", lambda: None) is small


def test_visitors_asking_for_one_key_at_once_wait_for_one_computation():
    store = KeptResults(budget_bytes=10**6)
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.3)
        return np.ones(10)

    results = []
    threads = [threading.Thread(target=lambda: results.append(store.get("k", slow))) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1 and all(result is results[0] for result in results)
    assert not store._making  # no state left for a key once it is made

"""Transfers that occupy their link (engine/links.py) against the pure-delay model and a hand count."""

import pytest

from engine import FAMILIES, Costs, build_schedule, simulate
from engine.chrome_trace import chrome_trace

SPLIT = {"F": 1, "I": 1, "W": 1}


def chunks(name: str) -> int | None:
    return 2 if FAMILIES[name].takes_chunks else None


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_shared_links_never_beat_the_delay_model_and_agree_without_contention(name):
    schedule = build_schedule(name, 4, 8, chunks(name))
    for comm in (0.25, 1.0):
        delay = simulate(schedule, Costs.of(SPLIT, comm=comm))
        shared = simulate(schedule, Costs.of(SPLIT, comm=comm, shared_links=True))
        assert shared.makespan >= delay.makespan - 1e-9
        moves = shared.transfers
        assert (moves["arrive"] - moves["depart"]).round(9).eq(comm).all()  # each takes comm on the link
        for _, link in moves.groupby(["from_rank", "to_rank"]):  # one at a time on each direction
            ordered = link.sort_values("depart")
            assert (ordered["depart"].to_numpy()[1:] >= ordered["arrive"].to_numpy()[:-1] - 1e-9).all()
        assert (moves["needed_at"] >= moves["arrive"] - 1e-9).all()  # nothing starts before its input arrived


def test_two_products_on_one_link_queue_behind_each_other():
    """GPipe with zero-cost forwards on 2 ranks: rank 0's m activations are made at once, so over a shared link
    the k-th arrives after k + 1 transfer times (hand count), where the delay model has them all at comm."""
    m, comm = 4, 1.0
    costs = Costs.of({"F": 0, "B": 1e-9}, comm=comm, shared_links=True)
    moves = simulate(build_schedule("gpipe", 2, m), costs).transfers
    forward_moves = moves[moves["from_rank"] == 0].sort_values("depart")
    assert forward_moves["arrive"].tolist() == pytest.approx([comm * (k + 1) for k in range(m)])
    delay = simulate(build_schedule("gpipe", 2, m), Costs.of({"F": 0, "B": 1e-9}, comm=comm)).transfers
    assert delay[delay["from_rank"] == 0]["arrive"].tolist() == pytest.approx([comm] * m)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_the_event_driven_walk_times_every_slot_as_the_dependency_walk_when_links_are_free(name):
    from engine.links import walk_on_links
    from engine.simulator import slot_durations
    from engine.walk import walk

    schedule = build_schedule(name, 4, 8, chunks(name))
    durations = slot_durations(schedule, Costs.of({"F": 1, "I": 1.5, "W": 0.5}))
    free, shared = walk(schedule, durations, 0.0), walk_on_links(schedule, durations, 0.0)
    assert shared.starts == pytest.approx(free.starts) and shared.ends == pytest.approx(free.ends)


def test_the_perfetto_trace_puts_transfers_on_their_own_track_with_flow_arrows():
    timeline = simulate(build_schedule("1f1b", 3, 4), Costs.of({"F": 1, "B": 2}, comm=0.5))
    events = chrome_trace(timeline)["traceEvents"]
    moves = len(timeline.transfers)
    assert moves == 2 * 2 * 4  # 2 hops down and 2 back up, 4 micro-batches
    starts = [e for e in events if e["ph"] == "s"]
    finishes = [e for e in events if e["ph"] == "f"]
    assert len(starts) == len(finishes) == moves and {e["id"] for e in starts} == {e["id"] for e in finishes}
    sends = [e for e in events if e["ph"] == "X" and e["cat"] == "transfer"]
    assert len(sends) == 2 * moves and all(e["tid"] == 1 and e["dur"] == pytest.approx(500.0) for e in sends)
    computes = [e for e in events if e["ph"] == "X" and e["cat"] in "FB"]
    assert len(computes) == len(timeline.frame) and {e["tid"] for e in computes} == {0}
    assert {e["pid"] for e in computes} == {0, 1, 2}  # one process per rank


def test_each_transfer_says_how_long_it_waited_for_its_link_and_the_playground_says_so():
    """The same GPipe burst: the k-th activation waits k transfer times for the link (hand count), none waits under
    the delay model, and the Playground's sentence gives the engine's counts and both step times."""
    from app.frame.timeline_panels import shared_links_effect

    m, comm = 4, 1.0
    schedule = build_schedule("gpipe", 2, m)
    shared = simulate(schedule, Costs.of({"F": 0, "B": 1e-9}, comm=comm, shared_links=True))
    delayed = simulate(schedule, Costs.of({"F": 0, "B": 1e-9}, comm=comm))
    forward = shared.transfers["from_rank"].to_numpy() == 0
    assert sorted(shared.link_waits()[forward]) == pytest.approx([comm * k for k in range(m)])
    assert not delayed.link_waits().any() and (shared.transfers["made"] <= shared.transfers["depart"]).all()
    sentence = shared_links_effect(shared, delayed)
    waited = int((shared.link_waits() > 1e-9).sum())
    total = shared.link_waits().sum()  # the forwards' 0 + 1 + 2 + 3 and as much again on the way back
    assert total == pytest.approx(2 * 6 * comm)
    assert sentence.startswith(f"Shared links: {waited} of {2 * m} transfers waited for their link, {total:.4g} in all")
    assert f"the step takes {shared.makespan:.4g} against {delayed.makespan:.4g}" in sentence

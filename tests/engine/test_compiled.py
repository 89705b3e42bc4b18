"""The compiled schedule's named accessors, checked against the Schedule they were compiled from, and the
derived values a schedule keeps."""

import pickle
from dataclasses import replace

import pytest

from engine import Kind, build_schedule
from engine.dependencies import compiled
from engine.ir import all_actions, slot_actions
from engine.schedules import FAMILIES
from engine.walk import execution_order


def schedule_of(name: str):
    return build_schedule(name, *FAMILIES[name].accepted_sizes(3, 6), 2 if FAMILIES[name].takes_chunks else None)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_actions_and_labels_round_trip(name):
    schedule = schedule_of(name)
    c = compiled(schedule)
    listed = [action for _, action in all_actions(schedule)]  # rank-then-list order, as compiled
    assert [c.action(i) for i in range(c.num_actions)] == listed
    assert [c.label(i) for i in range(c.num_actions)] == [str(action) for action in listed]
    assert list(c.labels(range(c.num_actions))) == [str(action) for action in listed]
    assert list(c.labels([])) == []


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_ranks_and_slots_hold_their_lists(name):
    schedule = schedule_of(name)
    c = compiled(schedule)
    for rank, slots in enumerate(schedule.ranks):
        assert [c.action(i) for i in c.rank_actions(rank)] == [a for slot in slots for a in slot_actions(slot)]
        assert len(c.rank_slots(rank)) == len(slots)
        for step, (flat, slot) in enumerate(zip(c.rank_slots(rank), slots, strict=True)):
            assert [c.action(i) for i in c.slot_actions(flat)] == list(slot_actions(slot))
            assert all(c.rank[i] == rank and c.step[i] == step for i in c.slot_actions(flat))


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_producers_inputs_and_receivers_follow_the_hand_off_rules(name):
    """F(s) needs F(s−1); I/B(s) needs F(s) and I/B(s+1); W(s) needs I(s) — written out here, once more,
    as the test's own reading of [Note: hand-off rules]. "First" and "last" are of the micro-batch's route:
    DualPipe's second half of micro-batches goes through stages p..2p−1 only, the first half through 0..p−1."""
    schedule = schedule_of(name)
    c = compiled(schedule)
    where = {c.action(i): i for i in range(c.num_actions)}
    m, copies = schedule.num_microbatches, (2 if name == "dualpipe" else 1)
    per_copy = schedule.num_stages // copies

    def gradient(stage: int, mb: int) -> int:
        return where.get((stage, Kind.B, mb), where.get((stage, Kind.I, mb)))

    for i in range(c.num_actions):
        stage, kind, mb = c.action(i)
        first = (mb // (m // copies)) * per_copy
        last = first + per_copy - 1
        assert first <= stage <= last
        if kind is Kind.F:
            neighbour = where[(stage - 1, Kind.F, mb)] if stage > first else -1
            own, receiver_stage = -1, stage + 1
        elif kind is Kind.W:
            neighbour, own, receiver_stage = -1, where[(stage, Kind.I, mb)], -1
        else:
            neighbour = gradient(stage + 1, mb) if stage < last else -1
            own, receiver_stage = where[(stage, Kind.F, mb)], stage - 1
        assert c.producer(i) == neighbour
        expected_inputs = [(own, False)] if own >= 0 else []
        if neighbour >= 0:
            expected_inputs.append((neighbour, schedule.rank_of(stage) != c.rank[neighbour]))
        assert [tuple(found) for found in c.inputs(i)] == expected_inputs
        handed_on = first <= receiver_stage <= last
        assert c.receiver(i) == (schedule.rank_of(receiver_stage) if handed_on else -1)


def test_a_schedule_keeps_what_is_derived_from_it():
    schedule = build_schedule("zb-v", 2, 4, 2)
    c = compiled(schedule)
    assert compiled(schedule) is c  # computed once
    order = execution_order(schedule)
    assert execution_order(schedule) is order
    copy = pickle.loads(pickle.dumps(schedule))  # a rank process gets them with the schedule
    assert copy == schedule and list(compiled(copy).labels(range(c.num_actions))) == list(
        c.labels(range(c.num_actions))
    )
    renamed = replace(schedule, name="renamed")  # a new schedule starts with nothing derived
    assert renamed != schedule and compiled(renamed) is not c
    assert build_schedule("zb-v", 2, 4, 2) == schedule  # what is kept is no part of equality or the hash
    assert hash(build_schedule("zb-v", 2, 4, 2)) == hash(schedule)


def test_a_timelines_hand_offs_are_made_when_read_and_travel_when_pickled():
    """A simulation leaves its hand-offs to be made when first read (``Timeline.made_transfers``); read, they are
    one row per action whose input comes from another rank, leaving at its producer's end and arriving ``comm``
    later; pickled (a run's timeline from its child process) the copy carries them made."""
    from engine import Costs, simulate

    schedule = build_schedule("1f1b", 4, 8)
    timeline = simulate(schedule, Costs.of({"F": 1, "B": 2}, comm=0.5))
    assert callable(timeline.made_transfers)
    copy = pickle.loads(pickle.dumps(timeline))
    assert not callable(copy.made_transfers)
    for moves in (timeline.transfers, copy.transfers):
        # 1F1B on 4 ranks: each micro-batch's forward crosses 3 links down and its backward 3 up
        assert len(moves) == 8 * 3 * 2
        assert (moves["from_rank"] != moves["to_rank"]).all()
        assert ((moves["arrive"] - moves["depart"]) == 0.5).all() and (moves["depart"] == moves["made"]).all()

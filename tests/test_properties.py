"""Hypothesis properties over every family: each action once, dependencies kept, no overlap on a rank."""

import math
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Costs, build_schedule, simulate
from engine.schedules import FAMILIES

durations = st.floats(min_value=0.05, max_value=5, allow_nan=False)


@st.composite
def configs(draw):
    name = draw(st.sampled_from(sorted(FAMILIES)))
    return dict(
        name=name,
        p=draw(st.integers(1, 16)),
        m=draw(st.integers(1, 64)),
        chunks=draw(st.integers(2, 4)) if FAMILIES[name].takes_chunks else None,
        costs=Costs(
            forward=draw(durations),
            backward_input=draw(durations),
            backward_weight=draw(durations),
            overlapped=draw(st.none() | durations),
            comm=draw(st.floats(min_value=0, max_value=2)),
            recompute=draw(st.booleans()),
        ),
    )


def _check_timeline(schedule, costs, timeline):
    frame = timeline.frame
    p, m, num_stages = schedule.num_ranks, schedule.num_microbatches, schedule.num_stages
    # every action exactly once
    keys = list(zip(frame["stage"], frame["kind"], frame["microbatch"]))
    assert len(keys) == len(set(keys)) == schedule.num_actions
    by_key = {key: row for key, row in zip(keys, frame.itertuples(index=False))}
    for stage in range(num_stages):
        for mb in range(m):
            assert (stage, "F", mb) in by_key
            assert ((stage, "B", mb) in by_key) != ((stage, "I", mb) in by_key and (stage, "W", mb) in by_key)

    # dependencies: consumer starts no earlier than producer end (+ comm across ranks)
    def after(consumer, producer_key):
        producer = by_key[producer_key]
        hop = costs.comm if producer.rank != consumer.rank else 0.0
        assert consumer.start >= producer.end + hop - 1e-9, (consumer, producer)

    def grad(stage, mb):
        return (stage, "B", mb) if (stage, "B", mb) in by_key else (stage, "I", mb)

    for (stage, kind, mb), row in by_key.items():
        if kind == "F" and stage > 0:
            after(row, (stage - 1, "F", mb))
        if kind in ("B", "I"):
            after(row, (stage, "F", mb))
            if stage < num_stages - 1:
                after(row, grad(stage + 1, mb))
        if kind == "W":
            after(row, (stage, "I", mb))
    # no two slots overlap on a rank, and each rank keeps its list order
    slots = frame.drop_duplicates(["rank", "step"]).sort_values(["rank", "step"])
    for _, rank_slots in slots.groupby("rank"):
        starts, ends = rank_slots["start"].to_numpy(), rank_slots["end"].to_numpy()
        assert (starts[1:] >= ends[:-1] - 1e-9).all()
    assert 0 <= timeline.bubble_fraction < 1
    assert all(busy > 0 for busy in timeline.busy_per_rank())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs())
def test_every_accepted_config_simulates_correctly(config):
    schedule = build_schedule(config["name"], config["p"], config["m"], config["chunks"])  # all accepted
    timeline = simulate(schedule, config["costs"])
    _check_timeline(schedule, config["costs"], timeline)


anything = st.one_of(st.integers(-3, 70), st.floats(allow_nan=True), st.text(max_size=3), st.none(), st.booleans())


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(sorted(FAMILIES)), p=anything, m=anything, chunks=anything)
def test_rejected_configs_raise_value_error_only(name, p, m, chunks):
    try:
        schedule = build_schedule(name, p, m, chunks)
    except ValueError as error:
        assert str(error)
        return
    assert schedule.num_ranks == p and schedule.num_microbatches == m


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_every_family_accepts_fewer_microbatches_than_ranks(name):
    chunks = 2 if FAMILIES[name].takes_chunks else None
    for p in (1, 2, 3, 5, 8):
        for m in (1, 2, p - 1, p, p + 1):
            if m >= 1:
                schedule = build_schedule(name, p, m, chunks)
                _check_timeline(schedule, Costs(), simulate(schedule, Costs()))
    assert math.isfinite(simulate(build_schedule(name, 3, 12, chunks)).makespan)


@pytest.mark.parametrize("name, chunks, message", [
    ("interleaved-1f1b", 1, "chunks (stages per rank) must be between 2 and 64, got 1"),
    ("looped-bfs", 65, "must be between 2 and 64, got 65"),
    ("zb-v", 1, "zb-v always has 2 stage(s) per rank"),
    ("1f1b", 2, "1f1b always has 1 stage(s) per rank"),
])
def test_chunks_are_checked(name, chunks, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        build_schedule(name, 4, 8, chunks)

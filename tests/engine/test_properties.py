"""Hypothesis properties over every family: each action once, dependencies kept, no overlap on a rank."""

import math
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from timeline_checks import check_timeline

from engine import Costs, build_schedule, simulate
from engine.schedules import FAMILIES

durations = st.floats(min_value=0.05, max_value=5, allow_nan=False)


@st.composite
def configs(draw):
    name = draw(st.sampled_from(sorted(FAMILIES)))
    p, m = FAMILIES[name].accepted_sizes(draw(st.integers(1, 16)), draw(st.integers(1, 64)))  # DualPipe: p, m even
    return dict(
        name=name,
        p=p,
        m=m,
        chunks=draw(st.integers(2, 4)) if FAMILIES[name].takes_chunks else None,
        costs=Costs.of(
            {"F": draw(durations), "I": draw(durations), "W": draw(durations), "F&B": draw(st.none() | durations)},
            comm=draw(st.floats(min_value=0, max_value=2)),
            expert_comm=draw(st.sampled_from([0.0, 0.5, 3.0])),
            recompute=draw(st.booleans()),
        ),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs())
@pytest.mark.slow
def test_every_accepted_config_simulates_correctly(config):
    schedule = build_schedule(config["name"], config["p"], config["m"], config["chunks"])  # all accepted
    timeline = simulate(schedule, config["costs"])
    check_timeline(schedule, config["costs"].comm, timeline)


anything = st.one_of(st.integers(-3, 70), st.floats(allow_nan=True), st.text(max_size=3), st.none(), st.booleans())


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(sorted(FAMILIES)), p=anything, m=anything, chunks=anything)
@pytest.mark.slow
def test_rejected_configs_raise_value_error_only(name, p, m, chunks):
    try:
        schedule = build_schedule(name, p, m, chunks)
    except ValueError as error:
        assert str(error)
        return
    assert schedule.num_ranks == p and schedule.num_microbatches == m


@pytest.mark.parametrize("name", sorted(FAMILIES))
@pytest.mark.slow
def test_every_family_accepts_fewer_microbatches_than_ranks(name):
    """... or refuses them with the family's own reason (DualPipe: m ≥ 2p, as DeepSeek's step asserts)."""
    family, chunks = FAMILIES[name], 2 if FAMILIES[name].takes_chunks else None
    for p in (1, 2, 3, 5, 8):
        for m in (1, 2, p - 1, p, p + 1):
            if m >= 1:
                refused = family.refuses(p, m)
                if refused:
                    with pytest.raises(ValueError) as raised:
                        build_schedule(name, p, m, chunks)
                    assert str(raised.value) == refused
                    continue
                schedule = build_schedule(name, p, m, chunks)
                check_timeline(schedule, 0.0, simulate(schedule, Costs()))
    assert math.isfinite(simulate(build_schedule(name, *family.accepted_sizes(3, 12), chunks)).makespan)


@pytest.mark.parametrize(
    "name, chunks, message",
    [
        ("interleaved-1f1b", 1, "chunks (model chunks per rank, v) must be from 2 to 64, got 1"),
        ("looped-bfs", 65, "must be from 2 to 64, got 65"),
        ("zb-v", 1, "zb-v always has 2 chunk(s) per rank"),
        ("1f1b", 2, "1f1b always has 1 chunk(s) per rank"),
    ],
)
def test_chunks_are_checked(name, chunks, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        build_schedule(name, 4, 8, chunks)

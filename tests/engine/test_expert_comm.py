"""Communication inside a chunk (``Costs.expert_comm``): an expert all-to-all in every F and backward, waited for
by a lone action, hidden under the other half's compute in an overlapped F&B pair (DeepSeek-V3 report §3.2.1)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine import FAMILIES, Costs, build_schedule, simulate
from engine.cli import main
from engine.dependencies import compiled
from engine.ir import Kind
from engine.simulator import slot_durations


@pytest.mark.parametrize("family", ["gpipe", "1f1b", "zb-h1"])
def test_a_lone_action_waits_for_its_all_to_all_as_if_it_were_longer(family):
    """No pairs: every F, B and I is simply c longer (W carries none) — the same step as costs F + c, I + c."""
    c = 0.5
    with_comm = simulate(build_schedule(family, 4, 8), Costs.of({"F": 1, "I": 1, "W": 0.5}, expert_comm=c))
    longer = simulate(build_schedule(family, 4, 8), Costs.of({"F": 1 + c, "I": 1 + c, "W": 0.5}))
    assert with_comm.makespan == pytest.approx(longer.makespan)
    assert with_comm.busy_per_rank() == pytest.approx(longer.busy_per_rank())
    assert with_comm.expert_comm["hidden"] == 0 and with_comm.expert_comm["total"] == pytest.approx(
        c * sum(1 for kind in with_comm.frame["kind"] if kind != "W")
    )


@pytest.mark.parametrize("c", [0.25, 1.0, 1.5, 3.0])
def test_a_pair_hides_each_halfs_all_to_all_under_the_others_compute(c):
    """DualPipe (a stage is a whole rank's share): F = 1, B = 2, F&B = 2.5. A pair's slot takes F&B plus what its
    two all-to-alls leave exposed, max(0, c − B) + max(0, c − F), worked out here by hand."""
    schedule = build_schedule("dualpipe", 4, 8)
    costs = FAMILIES["dualpipe"].costs({"F": 1, "I": 1, "W": 1, "F&B": 2.5}, expert_comm=c)
    durations = slot_durations(schedule, costs)
    comp = compiled(schedule)
    pairs = np.flatnonzero(np.diff(comp.slot_first_action) > 1)
    assert len(pairs) > 0
    assert durations[pairs] == pytest.approx(2.5 + max(0.0, c - 2) + max(0.0, c - 1))
    lone = np.setdiff1d(np.arange(comp.num_slots), pairs)
    kinds = comp.kind[comp.slot_first_action[lone]]
    expected = np.select([kinds == Kind.F, kinds == Kind.B, kinds == Kind.I, kinds == Kind.W], [1 + c, 2 + c, 1 + c, 1])
    assert durations[lone] == pytest.approx(expected)
    timeline = simulate(schedule, costs)
    hidden_per_pair = min(c, 2.0) + min(c, 1.0)
    assert timeline.expert_comm["hidden"] == pytest.approx(len(pairs) * hidden_per_pair)


def test_dualpipe_hides_what_1f1b_waits_for_on_the_same_costs():
    """DeepSeek's Table 2 comparison with an all-to-all: 1F1B and ZB-1P hide none of it, DualPipe and DualPipeV
    hide most of it, and DualPipe's step is the shortest."""
    durations = {"F": 1, "I": 1, "W": 1, "F&B": 2.5}
    found = {}
    for name in ("1f1b", "zb-h1", "dualpipe", "dualpipev"):
        timeline = simulate(build_schedule(name, 8, 20), FAMILIES[name].costs(durations, expert_comm=0.5))
        found[name] = (timeline.expert_comm["hidden_fraction"], timeline.makespan)
    assert found["1f1b"][0] == found["zb-h1"][0] == 0
    assert found["dualpipe"][0] > 0.5 and found["dualpipev"][0] > 0.5
    assert found["dualpipe"][1] < min(found["1f1b"][1], found["zb-h1"][1])


def test_simulate_says_how_much_all_to_all_was_hidden(capsys):
    args = ["simulate", "--schedule", "dualpipe", "--ranks", "4", "--microbatches", "8"]
    costs = ["--costs", "F=1,I=1,W=1,F&B=2.5", "--expert-comm", "0.5"]
    assert main([*args, *costs, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    expert = summary["expert_comm"]
    assert expert["hidden"] + expert["exposed"] == pytest.approx(expert["total"])
    assert expert["hidden_fraction"] == pytest.approx(expert["hidden"] / expert["total"])
    assert main([*args, *costs]) == 0
    assert f"{expert['hidden_fraction']:.1%}" in capsys.readouterr().out
    assert main([*args]) == 0 and "all-to-all" not in capsys.readouterr().out  # none asked, none said
    assert main([*args, "--expert-comm", "-1"]) == 2 and "expert" in capsys.readouterr().err

"""Idle time split by cause ([Note: idle attribution] in engine/attribution.py): the parts add up, each appears
only when its cause is there, and with the textbook's setting only "schedule" remains — the closed form."""

import json
from dataclasses import replace

import numpy as np
import pytest

from engine import FAMILIES, UNIT, Costs, build_schedule, simulate
from engine.attribution import CAUSES, attribute_simulated, measured_levels

COST_MIXES = [
    UNIT,
    Costs.of({"F": 1, "B": 2}),
    Costs.of({"F": 1, "I": 1, "W": 3}),
    Costs.of({"F": 2, "I": 1.5, "W": 0.5}, comm=0.25),
    Costs.of({"F": 1, "I": 1, "W": 1, "F&B": 2.5}),
    Costs.of({"F": 1, "B": 2}, recompute=True),
]


def chunks(name: str) -> int | None:
    return 2 if FAMILIES[name].takes_chunks else None


@pytest.mark.parametrize("name", sorted(FAMILIES))
@pytest.mark.slow
def test_the_parts_add_up_to_each_ranks_idle_time(name):
    for costs in COST_MIXES:
        for scale in (None, "uneven"):
            schedule = build_schedule(name, 4, 8, chunks(name))
            if scale:
                costs = replace(costs, stage_scale=tuple(np.linspace(1.5, 0.75, schedule.num_stages)))
            timeline = simulate(schedule, costs)
            split = attribute_simulated(schedule, costs, timeline)
            assert split.per_rank.sum(axis=1) == pytest.approx(timeline.idle_per_rank(), abs=1e-9)
            assert split.per_rank[:, CAUSES.index("overhead")] == pytest.approx(0.0, abs=1e-9)  # simulated: none


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_with_the_textbook_setting_only_the_schedule_idles(name):
    schedule = build_schedule(name, 4, 8, chunks(name))
    timeline = simulate(schedule, UNIT)
    split = attribute_simulated(schedule, UNIT, timeline)
    others = split.per_rank[:, [CAUSES.index(c) for c in CAUSES if c != "schedule"]]
    assert others == pytest.approx(0.0, abs=1e-9)
    assert split.per_rank[:, 0] == pytest.approx(timeline.idle_per_rank())


@pytest.mark.parametrize("p", [2, 4, 6])
def test_the_schedule_part_is_the_closed_form(p):
    """Independent arithmetic: GPipe and 1F1B idle (p − 1)(F + B) per rank; ZB-H1 (p − 1)(F + I − W)."""
    for name, expected in (("gpipe", 3 * (p - 1)), ("1f1b", 3 * (p - 1)), ("zb-h1", p - 1)):
        schedule = build_schedule(name, p, 2 * p)
        split = attribute_simulated(schedule, UNIT, simulate(schedule, UNIT))
        assert split.per_rank[:, 0] == pytest.approx([expected] * p), name


def test_each_cause_shows_only_when_it_is_there():
    schedule = build_schedule("zb-h1", 4, 8)
    slow_ends = Costs.of({"F": 1, "I": 1, "W": 1}, stage_scale=(1.5, 1, 1, 1.5))
    split = attribute_simulated(schedule, slow_ends, simulate(schedule, slow_ends)).per_rank
    assert np.abs(split[:, CAUSES.index("imbalance")]).sum() > 1 and np.abs(split[:, 2:]).sum() < 1e-9
    heavy_w = Costs.of({"F": 1, "I": 1, "W": 3})  # the same work per micro-batch as 5/3 each
    split = attribute_simulated(schedule, heavy_w, simulate(schedule, heavy_w)).per_rank
    assert np.abs(split[:, CAUSES.index("cost ratios")]).sum() > 1
    assert np.abs(split[:, CAUSES.index("imbalance")]).sum() < 1e-9
    wired = Costs.of({"F": 1, "I": 1, "W": 1}, comm=0.5)
    split = attribute_simulated(schedule, wired, simulate(schedule, wired)).per_rank
    assert split[:, CAUSES.index("transfers")].sum() > 0 and np.abs(split[:, 1:3]).sum() < 1e-9


def test_measured_levels_keep_each_stages_work_and_add_the_transfer_last():
    table = np.array([[1.0, 0.0, 1.5, 0.5], [2.0, 0.0, 2.0, 1.0]])
    levels = measured_levels([dict(zip("FBIW", row, strict=True)) for row in table], Costs.of(comm=0.3))
    # one micro-batch's work on a stage: F + B, or F + I + W when the backward is split
    work = [[row["F"] + max(row["B"], row["I"] + row["W"]) for row in level.stage_costs] for level in levels]
    assert work[0] == pytest.approx([4.0, 4.0])  # every stage the mean stage's work
    assert work[1] == pytest.approx([3.0, 5.0]) and work[2] == pytest.approx([3.0, 5.0])  # each its own
    assert [levels[1].stage_costs[0][key] for key in "FBIW"] == pytest.approx((1.0, 2.0, 1.0, 1.0))  # F = I = W, B = 2F
    assert [level.comm for level in levels] == [0, 0, 0, 0.3]


@pytest.mark.parametrize("name", sorted(FAMILIES))
@pytest.mark.slow
def test_simulate_json_splits_each_ranks_idle_by_cause(name, capsys):
    import json

    from engine.cli import main

    chunk = ["--chunks", "2"] if FAMILIES[name].takes_chunks else []
    args = ["simulate", "--schedule", name, "--ranks", "4", "--microbatches", "8", "--costs", "F=1,I=1,W=2"]
    assert main([*args, *chunk, "--comm", "0.5", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    split = summary["idle_by_cause"]
    for row, idle in zip(split["per_rank"], summary["idle"], strict=True):
        parts = sum(value for cause, value in row.items() if cause != "idle")
        assert abs(parts - idle) <= 0.01 * summary["makespan"]
    assert split["total"]["overhead"] == pytest.approx(0.0, abs=1e-9) and split["total"]["transfers"] > 0


@pytest.mark.parametrize("family", ["1f1b", "zb-h1", "interleaved-1f1b", "zb-v", "dualpipev"])
def test_levels_timed_as_arrays_are_the_timelines(family):
    """The attribution times its levels without building Timelines; built when asked, they give the same idle."""
    from engine.attribution import attribute_simulated
    from engine.simulator import slot_times

    chunks = 2 if FAMILIES[family].takes_chunks else None
    schedule = build_schedule(family, 4, 8, chunks)
    costs = Costs.of({"F": 1.0, "I": 1.3, "W": 0.6}, comm=0.25, stage_scale=(1.2, 1, 1, 0.9) * schedule.num_chunks)
    split = attribute_simulated(schedule, costs, simulate(schedule, costs))
    for level_costs, timeline in zip(split.level_costs, split.levels, strict=True):
        times = slot_times(schedule, level_costs)
        assert list(times.idle_per_rank(schedule)) == timeline.idle_per_rank()
        assert times.makespan == timeline.makespan


def test_the_levels_idle_is_stored_and_the_run_is_the_last_row():
    """The page's table reads each level's makespan and idle from the split itself (no Timeline is built for it),
    and the run's idle minus the last level's is the overhead."""
    schedule = build_schedule("zb-h1", 4, 8)
    costs = Costs.of({"F": 1.0, "I": 1.3, "W": 0.6}, comm=0.25)
    split = attribute_simulated(schedule, costs, simulate(schedule, costs))
    assert split.level_idle == pytest.approx(tuple(sum(t.idle_per_rank()) for t in split.levels))
    assert float(split.idle.sum()) - split.level_idle[-1] == pytest.approx(split.total("overhead"), abs=1e-12)


def test_a_negative_part_says_why_it_can_be_so_it_does_not_read_as_an_error(capsys):
    """ZB-H1 with W > I fills more of its drain than with F = I = W (cost ratios below zero); PyTorch's
    ScheduleDualPipeV on 2 ranks idled less than the simulation of its own measured costs in its first profiled
    step (overhead below zero; the step shown by default is the second, where it is above)."""
    from pathlib import Path

    from engine.attribution import WHEN_NEGATIVE
    from engine.cli import main

    costs = Costs.of({"F": 1, "I": 1, "W": 2})
    schedule = build_schedule("zb-h1", 4, 8)
    split = attribute_simulated(schedule, costs, simulate(schedule, costs))
    assert split.total("cost ratios") < 0 and split.negative() == {"cost ratios": WHEN_NEGATIVE["cost ratios"]}
    plain = attribute_simulated(schedule, UNIT, simulate(schedule, UNIT))
    assert plain.negative() == {} and plain.as_dict()["negative"] == {}
    folder = Path(__file__).resolve().parents[2] / "examples" / "traces" / "scheduledualpipev-2ranks"
    assert main(["trace", "--quiet", "--step", "0", *sorted(map(str, folder.glob("rank*.json*"))), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    overhead = summary["idle_by_cause"]["total"]["overhead"]
    assert overhead < 0 and summary["idle_by_cause"]["negative"]["overhead"] == WHEN_NEGATIVE["overhead"]

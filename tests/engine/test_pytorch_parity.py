"""The lab's generators against PyTorch 2.13's own schedule orders, and PyTorch's lowered CSVs read back.

PyTorch's orders come from ``get_schedule_ops`` (no process group needed); both sides are timed by the lab's
simulator, so a makespan difference is a difference of order, not of timing model.
"""

from pathlib import Path

import pytest
from pytorch_orders import lowered_csv, pytorch_rows, pytorch_schedule

from engine import FAMILIES, Costs, build_schedule, read_csv, simulate, validate
from engine.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures"
FULL_BACKWARD = [Costs.of({"F": 1, "B": 2}), Costs.of({"F": 1, "B": 3}, comm=0.5)]
SPLIT_BACKWARD = [
    Costs.of({"F": 1, "I": 1, "W": 1}),
    Costs.of({"F": 1, "I": 2, "W": 0.5}, comm=0.3),
]


def sweep():
    for p in (1, 2, 3, 4, 5, 8):
        for m in range(1, 2 * p + 4):
            for v in (2, 3):
                yield p, m, v


@pytest.mark.parametrize("family, costs", [("interleaved-1f1b", FULL_BACKWARD), ("interleaved-zb", SPLIT_BACKWARD)])
@pytest.mark.slow
def test_interleaved_families_match_or_beat_pytorch_on_every_microbatch_count(family, costs):
    """Where PyTorch accepts (p, m, v) — its rounds must divide m — the lab's makespan is at most PyTorch's;
    where it refuses, the lab still runs all m micro-batches, deadlock-free."""
    compared = refused = 0
    for p, m, v in sweep():
        ours = validate(build_schedule(family, p, m, v))
        assert ours.num_microbatches == m and ours.num_actions == p * v * m * (3 if family == "interleaved-zb" else 2)
        try:
            theirs = pytorch_schedule(family, p, m, v)
        except ValueError as error:
            assert "multiple of the number of rounds" in str(error)
            refused += 1
            continue
        validate(theirs)
        for cost in costs:
            assert simulate(ours, cost).makespan <= simulate(theirs, cost).makespan + 1e-9, (p, m, v, cost)
        compared += 1
    assert compared > 100 and refused > 10


def test_the_issues_example_interleaved_4_ranks_5_microbatches():
    """(p, m, v) = (4, 5, 2), F=1, B=2: PyTorch 19.5; the lab used to build for 8 and trim to 22.5."""
    costs = Costs.of({"F": 1, "B": 2})
    assert simulate(pytorch_schedule("interleaved-1f1b", 4, 5, 2), costs).makespan == 19.5
    assert simulate(build_schedule("interleaved-1f1b", 4, 5, 2), costs).makespan == 19.5


@pytest.mark.parametrize(
    "family, p, m, v",
    [
        ("gpipe", 4, 6, None),
        ("looped-bfs", 3, 5, 2),
        ("interleaved-1f1b", 4, 8, 2),
        ("interleaved-1f1b", 4, 6, 3),
        ("interleaved-1f1b", 8, 18, 2),
        ("interleaved-zb", 4, 8, 2),
        ("interleaved-zb", 4, 5, 3),
        ("zb-v", 4, 8, None),
        ("zb-v", 3, 2, None),
        ("dualpipev", 3, 8, None),
    ],
)
def test_orders_equal_pytorchs_action_for_action(family, p, m, v):
    assert build_schedule(family, p, m, v).ranks == pytorch_schedule(family, p, m, v).ranks


def test_zb_h1_is_interleaved_zero_bubbles_one_chunk_case():
    """PyTorch's ScheduleInterleavedZeroBubble needs ≥ 2 stages per rank; the lab's generator with v = 1 is ZB-H1."""
    from engine.schedules.depth_first import depth_first_schedule

    one_chunk = depth_first_schedule(
        "interleaved-zb", 4, 8, 1, warmup_hops=1, split_backward=True, weight_lag_per_rank=1
    )
    assert one_chunk.ranks == build_schedule("zb-h1", 4, 8).ranks


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_csv_lowered_by_pytorch_reads_back_to_the_same_schedule(family):
    chunks = 2 if FAMILIES[family].takes_chunks else None
    schedule = build_schedule(family, *FAMILIES[family].accepted_sizes(3, 6), chunks)
    if schedule.copies > 1:  # asserted, so that the skip cannot hide another family
        with pytest.raises(AssertionError, match="Malformed compute schedule"):
            lowered_csv(schedule)
        pytest.skip("PyTorch's lowering sends stage p − 1's output on to stage p: it has one model, not DualPipe's two")
    reading = read_csv(lowered_csv(schedule), name=family)
    assert reading.schedule.ranks == schedule.ranks and reading.schedule.placement == schedule.placement
    assert reading.set_aside["SEND_F"] == reading.set_aside["RECV_F"] > 0
    assert reading.set_aside["UNSHARD"] == reading.set_aside["RESHARD"] == 3 * schedule.num_chunks
    costs = Costs.of({"F": 1, "I": 1, "W": 1}, comm=0.25)
    assert simulate(reading.schedule, costs).makespan == simulate(schedule, costs).makespan


def test_cli_says_what_it_read_from_a_lowered_csv(capsys):
    code = main(["simulate", "--from-csv", str(FIXTURES / "pytorch_lowered_interleaved_2ranks_4mb.csv")])
    out = capsys.readouterr().out
    assert code == 0
    assert "read 32 compute actions on 2 ranks" in out
    assert (
        "set aside 60 communication actions (RECV_B 12, RECV_F 12, REDUCE_GRAD 4, RESHARD 4, SEND_B 12, "
        "SEND_F 12, UNSHARD 4)" in out
    )
    assert f"makespan        {simulate(build_schedule('interleaved-1f1b', 2, 4, 2)).makespan:g}" in out


def test_pytorchs_broken_1f1b_order_is_blamed_where_it_breaks(capsys):
    """PyTorch 2.13's Schedule1F1B.pipeline_order numbers its last rank's forwards 1..8 (its runtime is right).
    The fixture is that order as PyTorch writes it; the live order must still look like it."""
    written = (FIXTURES / "pytorch_1f1b_4ranks_8mb_as_written.csv").read_text().splitlines()
    assert [str(a) for a in pytorch_rows("1f1b", 4, 8)[3] if a is not None] == written[3].split(",")
    code = main(["simulate", "--from-csv", str(FIXTURES / "pytorch_1f1b_4ranks_8mb_as_written.csv")])
    err = capsys.readouterr().err
    assert code == 2
    assert "3F8 is outside 4 stages × 8 micro-batches" in err
    marked = [line for line in err.splitlines() if "<-- here" in line]
    assert marked == [line for line in err.splitlines() if line.endswith("<-- here: rank 3 3F8")] and len(marked) == 1
    assert "inferred as the most forwards any stage runs" in err


def test_each_familys_pytorch_class_is_pytorchs_and_found_by_its_torchtitan_name():
    """The families that name a PyTorch class (``Family.pytorch_class``) are the seven PyTorch builds, and
    PyTorch's own ``get_schedule_class`` finds each by the name torchtitan's TOML writes (``pytorch_name``)."""
    from torch.distributed.pipelining import schedules

    named = {name: family for name, family in FAMILIES.items() if family.pytorch_class is not None}
    assert set(named) == {"gpipe", "1f1b", "interleaved-1f1b", "looped-bfs", "interleaved-zb", "zb-v", "dualpipev"}
    for family in named.values():
        assert schedules.get_schedule_class(family.pytorch_name) is getattr(schedules, family.pytorch_class)

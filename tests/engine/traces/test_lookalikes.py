"""Jobs that send and receive between ranks but are not pipelines are named for what they are (issue 46).

Real gloo traces of this machine, held out from the issue's own (``tests/fixtures/make_lookalikes.py``): DDP that
also sends its loss once a step, data parallelism summed by a hand-written send/receive ring (2 and 3 ranks),
DTensor tensor parallelism, and a 4-rank Schedule1F1B × data-parallel job on a DeviceMesh ("dp", "pp"). Before,
each was either read as a pipeline (the issue's DDP read as 1F1B, bubble 0.398; the data-parallel pair as "a
pipeline group of a larger job", bubble 0.977) or refused for the wrong reason ("a rank is missing", "a
data-parallel job" for tensor parallelism)."""

from pathlib import Path

import pytest

from engine.cli import main
from engine.ir import Action, Kind
from engine.traces import ImportOptions, TraceError, import_traces
from engine.traces.actions import Hand, RankStep
from engine.traces.evidence import Communication
from engine.traces.flow import refuse_unpipelined_flow
from engine.traces.groups import purpose, refuse_other_groups
from engine.traces.reading import RankTrace
from engine.traces.timed import TimedAction

ROOT = Path(__file__).resolve().parents[3]
JOBS = ROOT / "tests" / "fixtures" / "other_jobs"
HYBRID = JOBS / "pp2-dp2-4ranks"


def files(folder: Path, ranks=None) -> list[str]:
    found = sorted(str(path) for path in folder.glob("rank*.json*"))
    return found if ranks is None else [path for path in found if int(Path(path).name[4]) in ranks]


def refusal(paths: list[str], **options) -> str:
    with pytest.raises(TraceError) as caught:
        import_traces(paths, ImportOptions(**options))
    message = str(caught.value)
    assert "\n" not in message, message
    return message


@pytest.mark.parametrize(
    ("job", "named"),
    [
        ("ddp-loss-send-2ranks", "a data-parallel job that sends the loss once a step"),
        ("ddp-loss-exchange-2ranks", "a data-parallel job that sends the loss once a step (rank 0's collectives"),
        ("ring-allreduce-2ranks", "a ring all-reduce written with send/receive"),
        ("ring-allreduce-3ranks", "a ring all-reduce written with send/receive"),
        ("tensor-parallel-2ranks", "a tensor-parallel job"),
    ],
)
def test_a_look_alike_is_refused_with_what_it_is(job, named):
    message = refusal(files(JOBS / job))
    assert named in message, message
    assert "missing" not in message and "micro-batch order" not in message, message


@pytest.mark.parametrize(
    "job", ["ddp-loss-send-2ranks", "ddp-loss-exchange-2ranks", "ring-allreduce-3ranks", "tensor-parallel-2ranks"]
)
def test_the_command_exits_2_on_a_look_alike(capsys, job):
    assert main(["trace", "--quiet", *files(JOBS / job)]) == 2
    error = capsys.readouterr().err
    assert "no pipeline bubble to read" in error and len(error.strip().splitlines()) == 1, error


def test_the_tensor_parallel_job_is_refused_with_tensor_in_the_reason():
    message = refusal(files(JOBS / "tensor-parallel-2ranks"))
    assert "tensor" in message and "data-parallel" not in message, message


@pytest.mark.parametrize("pair", [(0, 2), (1, 3)])
def test_the_data_parallel_pair_of_a_hybrid_job_is_refused_by_its_group_name(pair):
    message = refusal(files(HYBRID, pair))
    assert "data-parallel pair" in message and "mesh_dp" in message, message
    assert "mesh_pp" in message, message  # and which files would read


@pytest.mark.parametrize("pair", [(0, 1), (2, 3)])
def test_the_pipeline_pair_of_the_hybrid_job_reads_as_schedule_1f1b(pair):
    run = import_traces(files(HYBRID, pair), ImportOptions(expected="1f1b"))
    assert run.inferred and run.order_check is None, run.order_check
    assert (run.schedule.num_ranks, run.schedule.num_microbatches) == (2, 4)
    assert 0 < run.timeline.bubble_fraction < 1


def _named_trace(rank: int, world: int, groups: list[tuple[tuple[int, ...], str]]) -> RankTrace:
    return RankTrace(path="", name=f"rank{rank}", rank=rank, world_size=world, backend="gloo", base_ns=0, events=(),
                     counts={}, has_gpu=False, group_names=tuple(groups))  # fmt: skip


def test_a_group_named_for_the_pipeline_wins_over_another_of_the_same_ranks():
    both = [((0, 1), "mesh_dp 1"), ((0, 1), "mesh_pp 2")]
    refuse_other_groups({rank: _named_trace(rank, 2, both) for rank in (0, 1)})
    with pytest.raises(TraceError) as caught:
        refuse_other_groups({rank: _named_trace(rank, 2, both[:1]) for rank in (0, 1)})
    assert "a data-parallel pair, not a pipeline" in str(caught.value), caught.value  # the whole job: no "larger"


def test_four_ranks_holding_two_pipelines_are_refused():
    message = refusal(files(HYBRID))
    assert "2 pipelines" in message and "mesh_pp" in message, message


@pytest.mark.parametrize(
    ("name", "expected"),
    [("mesh_dp 1", "data-parallel"), ("mesh_pp 3", "pipeline"), ("default_pg 0", None), ("tp_group", "tensor-parallel"),
     ("dp_shard_cp", "data-parallel"), ("DP-Replicate", "data-parallel"), ("mesh_dp_pp", "data-parallel")],
)  # fmt: skip
def test_a_group_is_for_what_its_name_says(name, expected):
    assert purpose(name) == expected


def test_a_loss_sent_beside_data_parallel_counts_per_step():
    # both profiled steps are refused for the one-way hand-off, not only the median one
    for step in (0, 1):
        assert "only send or only receive" in refusal(files(JOBS / "ddp-loss-send-2ranks"), step=step)


def _inferred(rank: int, sends: list[tuple[str, int]], microbatches: int = 2) -> RankStep:
    """A rank's inferred 1F1B-like actions (all forwards, then all backwards) and the sends that followed them."""
    order = [(Kind.F, mb) for mb in range(microbatches)] + [(Kind.B, mb) for mb in range(microbatches)]
    actions = [TimedAction(Action(rank, kind, mb), t, t, t + 1, inferred=True) for t, (kind, mb) in enumerate(order)]
    return RankStep(rank, tuple(actions), sends=tuple(Hand(rank, d, mb, 0.0, 0.0) for d, mb in sends))


def test_collectives_outweigh_the_hand_offs_only_where_no_pipeline_flows():
    heavy = {rank: Communication(2, 2, {"all-reduce": 16}) for rank in (0, 1)}
    # a tensor-parallel pipeline: its stages all-reduce per layer, yet forwards go on and gradients come back
    flowing = {0: _inferred(0, [("F", 0), ("F", 1)]), 1: _inferred(1, [("B", 0), ("B", 1)])}
    refuse_unpipelined_flow(flowing, heavy)
    # the same counts where the sends follow the backwards on both ranks: data parallelism with a value sent
    backwards = {rank: _inferred(rank, [("B", 0), ("B", 1)]) for rank in (0, 1)}
    with pytest.raises(TraceError) as caught:
        refuse_unpipelined_flow(backwards, heavy)
    assert "a data-parallel job that sends the loss 2 times a step" in str(caught.value), caught.value
    assert "outweigh" in str(caught.value)

"""A rank left out of a pipeline is refused, whatever ``--ranks`` says.

Real gloo traces of 4-stage pipelines (examples/traces), some of their ranks given on purpose with ``--ranks``, as
the missing-rank message advises: before, two ranks of a 4-stage 1F1B read as a complete 2-rank pipeline
(exit 0, a bubble of its own) although rank 1 sends every forward output to rank 2."""

from pathlib import Path

import pytest

from engine.cli import main
from engine.traces import ImportOptions, TraceError, import_traces

TRACES = Path(__file__).resolve().parents[3] / "examples" / "traces"


def files(run: str) -> list[str]:
    return sorted(str(path) for path in (TRACES / run).glob("rank*.json*"))


def refused(paths: list[str], ranks: tuple[int, ...], *says: str) -> str:
    with pytest.raises(TraceError) as caught:
        import_traces(paths, ImportOptions(ranks=ranks))
    message = str(caught.value)
    assert all(words in message for words in says) and "\n" not in message, message
    return message


@pytest.mark.parametrize(
    ("kept", "says"),
    [
        ((0, 1), ("rank 1 sends stage 1's forward outputs to stage 2 (= 1 + 1, 8 time(s))", "rank 2 is missing")),
        ((0, 1, 2), ("rank 2 sends stage 2's forward outputs to stage 3 (= 2 + 1", "rank 3 is missing")),
        ((2, 3), ("rank 2 sends stage 0's gradients back to stage -1 (= 0 − 1", "numbered from the lowest rank")),
    ],
)
def test_an_unlabelled_pipeline_with_a_rank_left_out_is_refused(kept, says):
    run = files("schedule1f1b-4ranks")
    refused([run[rank] for rank in kept], kept, *says, "whatever --ranks says")


@pytest.mark.parametrize(
    ("run", "says"),
    [
        ("scheduleinterleaved1f1b-4ranks", "rank 0 sends stage 4's gradients back to stage 3 (= 4 − 1"),
        ("schedulegpipe-4ranks", "rank 1 sends stage 1's forward outputs to stage 2 (= 1 + 1"),  # inside Forward i
        ("schedulezbvzerobubble-4ranks", "rank 1 sends stage 1's forward outputs to stage 2 (= 1 + 1"),
    ],
)
def test_a_labelled_pipeline_with_ranks_left_out_is_refused(run, says):
    refused(files(run)[:2], (0, 1), says, "a rank is missing" if "zbv" in run or "interleaved" in run else "rank 2")


def test_the_command_refuses_two_ranks_of_three_stages_in_one_line(capsys):
    """The issue's case: a missing last rank, then ``--ranks 0,1`` as the first refusal advises."""
    run = files("schedule1f1b-4ranks")
    assert main(["trace", "--quiet", *run[:2]]) == 2
    assert "--ranks" in capsys.readouterr().err
    assert main(["trace", "--quiet", "--ranks", "0,1", *run[:2]]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert "rank 2 is missing" in err


@pytest.mark.parametrize("run", ["schedule1f1b-4ranks", "scheduleinterleaved1f1b-4ranks", "scheduledualpipev-4ranks"])
def test_every_rank_given_still_reads(run):
    imported = import_traces(files(run), ImportOptions(ranks=(0, 1, 2, 3)))
    assert imported.schedule.num_ranks == 4 and 0 < imported.timeline.bubble_fraction < 1


def test_two_ranks_of_a_held_out_three_stage_pipeline_are_refused_with_ranks_given(capsys):
    """Issue 46's check on a trace not used to build the rule: Schedule1F1B on 3 ranks (tests/fixtures/held_out),
    ranks 0 and 1 given with ``--ranks 0,1``."""
    held_out = sorted((TRACES.parents[1] / "tests" / "fixtures" / "held_out" / "schedule1f1b-3ranks").glob("rank*"))
    assert len(held_out) == 3
    assert main(["trace", "--quiet", *map(str, held_out)]) == 0  # every rank: it reads
    capsys.readouterr()
    assert main(["trace", "--quiet", "--ranks", "0,1", *map(str, held_out[:2])]) == 2
    err = capsys.readouterr().err
    assert "rank 2 is missing" in err and "whatever --ranks says" in err and err.count("\n") == 1, err

"""Unlabelled traces (PyTorch's Schedule1F1B, DeepSpeed, Megatron-Core) put on one clock, as labelled ones are.

Real gloo traces of one host (examples/traces, tests/fixtures/other_frameworks) with every timestamp of one rank's
file moved, as another host's clock would: before, rank 1 five seconds ahead read an 8.1 ms 1F1B step as
5,003 ms with a 99.98 % bubble, and ±2 ms went unnoticed (DeepSpeed's 4.6 ms step read 6.3 ms). The offset is
estimated from the sends paired with their receives, applied before the step is built, and reported per rank."""

import gzip
import json
from pathlib import Path

import pytest

from engine.cli import main
from engine.traces import ImportOptions, TraceError, import_traces

ROOT = Path(__file__).resolve().parents[3]
UNLABELLED = {
    "schedule1f1b-2ranks": ROOT / "examples" / "traces" / "schedule1f1b-2ranks",
    "schedule1f1b-4ranks": ROOT / "examples" / "traces" / "schedule1f1b-4ranks",
    "deepspeed": ROOT / "tests" / "fixtures" / "other_frameworks" / "deepspeed",
    "megatron": ROOT / "tests" / "fixtures" / "other_frameworks" / "megatron",
    "held-out-1f1b-3ranks": ROOT / "tests" / "fixtures" / "held_out" / "schedule1f1b-3ranks",  # not used for the rule
}


def files(folder: Path) -> list[str]:
    return sorted(str(path) for path in folder.glob("rank*.json*"))


def rewritten(tmp_path: Path, run: str, rank: int, change) -> list[str]:
    """The run's files copied to ``tmp_path``, ``change`` applied to rank ``rank``'s trace."""
    written = []
    for path in files(UNLABELLED[run]):
        trace = json.loads(gzip.open(path).read())
        if Path(path).name.startswith(f"rank{rank}."):
            change(trace)
        target = tmp_path / Path(path).name
        target.write_bytes(gzip.compress(json.dumps(trace).encode()))
        written.append(str(target))
    return written


def shifted(tmp_path: Path, run: str, rank: int, shift_ms: float) -> list[str]:
    """Every timestamp of rank ``rank``'s file moved ``shift_ms`` later: its host's clock that far ahead."""

    def later(trace):
        for event in trace["traceEvents"]:
            if "ts" in event:
                event["ts"] += shift_ms * 1e3

    return rewritten(tmp_path, run, rank, later)


@pytest.mark.parametrize(
    ("run", "rank", "shift_ms", "within_ms"),
    [
        ("schedule1f1b-2ranks", 1, 5000.0, 0.25),
        ("schedule1f1b-2ranks", 1, 2.0, 0.25),
        ("schedule1f1b-2ranks", 1, -2.0, 0.25),
        ("deepspeed", 1, 5000.0, 0.25),
        ("deepspeed", 1, 2.0, 0.25),
        ("megatron", 1, 2.0, 0.25),
        # four processes on two cores: the quickest hand-offs are slower, so the bounds are looser
        ("schedule1f1b-4ranks", 2, 5000.0, 2.0),
        ("held-out-1f1b-3ranks", 1, 5000.0, 2.0),
        ("held-out-1f1b-3ranks", 2, -2.0, 2.0),
    ],
)
def test_a_rank_on_a_clock_ahead_reads_the_step_it_ran(tmp_path, run, rank, shift_ms, within_ms):
    honest = import_traces(files(UNLABELLED[run]))
    moved = import_traces(shifted(tmp_path, run, rank, shift_ms))
    assert honest.inferred and moved.inferred
    assert moved.timeline.makespan == pytest.approx(honest.timeline.makespan, rel=0.15)
    assert moved.timeline.bubble_fraction == pytest.approx(honest.timeline.bubble_fraction, rel=0.15)
    # the offset to add to rank's clock takes the shift back off, give or take the quickest hand-off
    assert moved.applied_offsets_ms[rank] == pytest.approx(-shift_ms, abs=within_ms)
    assert moved.estimated_offsets_ms[rank] == moved.applied_offsets_ms[rank]
    assert not honest.applied_offsets_ms  # one host: estimated, and left alone


def test_the_offsets_are_reported_per_rank_in_the_text_and_the_json(tmp_path, capsys):
    paths = shifted(tmp_path, "schedule1f1b-2ranks", 1, 5000.0)
    assert main(["trace", "--quiet", "--json", *paths]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["clock_offsets_ms"]["applied"]["1"] == pytest.approx(-5000.0, abs=0.25)
    assert summary["makespan"] < 20  # not 5,003 ms
    assert main(["trace", "--quiet", *paths]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if "clock offsets applied" in line)
    assert "rank 1 -4999.9" in line or "rank 1 -5000.0" in line, line


def test_a_rank_whose_clock_nothing_bounds_is_refused_not_read_as_a_bubble(tmp_path, capsys):
    """Rank 1's arrivals (``gloo:recv``) left out of its trace: its ``c10d::`` sends and receives still show a
    pipeline, but only its sends pair with a receive, one way, so its clock could be anywhere against rank 0's —
    no bubble can be read across them. (Leaving out its sends instead leaves a rank that only receives: no
    pipeline's stage, refused as such.)"""

    def without_arrivals(trace):
        trace["traceEvents"] = [e for e in trace["traceEvents"] if e.get("name") != "gloo:recv"]

    paths = rewritten(tmp_path, "schedule1f1b-2ranks", 1, without_arrivals)
    with pytest.raises(TraceError) as caught:
        import_traces(paths)
    message = str(caught.value)
    assert "clock of rank(s) 1 cannot be put on rank 0's" in message and "--offsets 1:0" in message, message
    assert main(["trace", "--quiet", *paths]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bubble" in err and "Traceback" not in err, err
    # the user's own offsets bound it: then it reads, and says whose offsets they were
    given = import_traces(paths, ImportOptions(offsets_ms={1: 0.0}))
    assert given.inferred and 0 < given.timeline.bubble_fraction < 1
    assert any("clock offsets applied as given: rank 1 +0.000 ms" in note for note in given.notes)

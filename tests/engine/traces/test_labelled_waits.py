"""A labelled action's span that holds its own send computes until the send (issue 46, case 6).

PyTorch's ScheduleGPipe labels ``Forward i``/``Backward i`` around the whole of ``forward_one_chunk``, the blocking
``c10d::send`` of its output included: read as compute, stage 0's forward of examples/traces/schedulegpipe-2ranks
was 1.22 ms against 0.07 ms without labels. The send now ends the compute, and is the hand-off the clocks pair
with its receive, so a labelled GPipe trace with one rank's clock seconds ahead reads its true step."""

import gzip
import json
import re
from pathlib import Path

import pytest

from engine.traces import ImportOptions, import_traces

ROOT = Path(__file__).resolve().parents[3]
GPIPE = {ranks: ROOT / "examples" / "traces" / f"schedulegpipe-{ranks}ranks" for ranks in (2, 4)}
LABEL = re.compile(r"(Forward|Backward) \d+$")


def files(folder: Path) -> list[str]:
    return sorted(str(path) for path in folder.glob("rank*.json*"))


def copied(tmp_path: Path, folder: Path, change) -> list[str]:
    """Every file of ``folder`` with ``change(trace, rank)`` applied, written to ``tmp_path``."""
    written = []
    for rank, path in enumerate(files(folder)):
        trace = json.loads(gzip.open(path).read())
        change(trace, rank)
        target = tmp_path / Path(path).name
        target.write_bytes(gzip.compress(json.dumps(trace).encode()))
        written.append(str(target))
    return written


def without_labels(trace: dict, rank: int) -> None:
    trace["traceEvents"] = [e for e in trace["traceEvents"] if not LABEL.match(str(e.get("name", "")))]


@pytest.mark.parametrize("ranks", [2, 4])
def test_gpipe_reads_the_same_bubble_with_and_without_its_labels(tmp_path, ranks):
    unlabelled_files = copied(tmp_path, GPIPE[ranks], without_labels)
    # step 1: without labels, step 0 is refused (PyTorch's shape exchange reads as a fifth forward)
    labelled = import_traces(files(GPIPE[ranks]), ImportOptions(step=1))
    unlabelled = import_traces(unlabelled_files, ImportOptions(step=1))
    assert not labelled.inferred and unlabelled.inferred
    gap = labelled.timeline.bubble_fraction - unlabelled.timeline.bubble_fraction
    assert abs(gap) < 0.05, (labelled.timeline.bubble_fraction, unlabelled.timeline.bubble_fraction)


def test_a_gpipe_forward_computes_until_its_send():
    run = import_traces(files(GPIPE[2]), ImportOptions(step=1))
    # the send of micro-batch 1's output (c10d::send at 228 µs of a 298 µs span) is not the stage's compute
    assert run.stage_costs[0]["F"] < 0.25, run.stage_costs
    sent = {(hand.stage, hand.direction) for rank in (0, 1) for hand in _sends(run, rank)}
    assert sent == {(0, "F"), (1, "B")}, sent


def _sends(run, rank):
    from engine.traces.actions import rank_step
    from engine.traces.profiled_steps import steps_to_read
    from engine.traces.reading import read_rank_trace

    trace = read_rank_trace(run.files[rank])
    traces = {rank: trace}
    windows = dict(steps_to_read(traces, run.step)[0][1])
    return rank_step(trace, rank, windows[rank]).sends


@pytest.mark.parametrize("shift_ms", [5000.0, -5000.0])
def test_a_labelled_gpipe_rank_with_its_clock_ahead_reads_the_true_step(tmp_path, shift_ms):
    def later(trace, rank):
        if rank == 1:
            for event in trace["traceEvents"]:
                if "ts" in event:
                    event["ts"] += shift_ms * 1e3

    true = import_traces(files(GPIPE[2]), ImportOptions(step=1))
    moved = import_traces(copied(tmp_path, GPIPE[2], later), ImportOptions(step=1))
    assert moved.applied_offsets_ms, moved.notes
    assert abs(moved.applied_offsets_ms[1] + shift_ms) < 1.0, moved.applied_offsets_ms
    assert moved.timeline.makespan == pytest.approx(true.timeline.makespan, rel=0.15)


@pytest.mark.parametrize("name", ["scheduleinterleaved1f1b-2ranks", "schedulezbvzerobubble-2ranks",
                                  "scheduledualpipev-2ranks"])  # fmt: skip
def test_an_unlabelled_trace_of_several_stages_a_rank_is_told_what_would_read_it(tmp_path, name):
    """Interleaved and V schedules run several stages on each rank; without their labels the lab cannot infer
    which: the refusal says so and names the labels that would read it, not "not one pipeline's"."""
    from engine.traces import TraceError

    def unlabelled(trace: dict, rank: int) -> None:
        trace["traceEvents"] = [e for e in trace["traceEvents"] if not str(e.get("name", "")).startswith("PP:")]

    with pytest.raises(TraceError) as refused:
        import_traces(copied(tmp_path, ROOT / "examples" / "traces" / name, unlabelled), ImportOptions())
    said = str(refused.value)
    assert "several stages on each rank" in said and "PP:0F3" in said, said

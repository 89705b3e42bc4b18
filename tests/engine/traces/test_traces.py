"""A real job's profiler traces read into the lab's timeline (engine/traces/), against ground truth no one here
wrote: PyTorch's own torch.distributed.pipelining runs, profiled (tests/fixtures/make_traces.py), whose executed
order each import must rebuild; and every bad input refused in one line."""

import gzip
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from engine import Costs, simulate
from engine.cli import main
from engine.traces import ImportOptions, TraceError, import_traces, reading
from engine.traces.compare import family_table
from engine.traces.names import NOTHING, compile_pattern, read_label

TRACES = Path(__file__).parents[3] / "examples" / "traces"
RUNS = sorted(path for path in TRACES.iterdir() if (path / "order.json").exists())


def files(run: Path) -> list[str]:
    return sorted(str(path) for path in run.glob("rank*.json*"))


def executed(run_order: dict) -> dict[int, list[str]]:
    return {int(rank): actions for rank, actions in run_order["executed"].items()}


def flat(slots) -> list[str]:
    """A rank's slots as PyTorch's executed actions: an overlapped pair as its two actions, forward first."""
    return [str(action) for slot in slots for action in getattr(slot, "actions", (slot,))]


@pytest.mark.parametrize("run", RUNS, ids=lambda path: path.name)
def test_every_pytorch_schedule_imports_with_the_order_it_executed(run):
    order = json.loads((run / "order.json").read_text())
    imported = import_traces(files(run))
    assert {rank: flat(slots) for rank, slots in enumerate(imported.schedule.ranks)} == executed(order)
    labels_nothing = order["class"] == "Schedule1F1B" and "synthetic" not in run.name  # PyTorch's 1F1B writes none
    assert imported.inferred == labels_nothing
    # each rank's idle causes add up to its idle, and the timeline is the measured kind every view reads
    causes = imported.idle_attribution()
    assert np.allclose(causes.idle, imported.timeline.summary()["idle"], atol=1e-9)
    assert np.allclose(causes.per_rank.sum(axis=1), causes.idle, atol=1e-6)
    assert set(imported.timeline.frame["source"]) == {"measured"}


def test_schedule1f1b_reported_order_is_off_by_one_on_the_last_rank_and_the_import_follows_what_ran():
    order = json.loads((TRACES / "schedule1f1b-2ranks" / "order.json").read_text())
    last = str(order["ranks"] - 1)
    reported = [a for a in order["pipeline_order"][last] if a and a[1:2] in "FB" and a[1:].rstrip("0123456789")]
    assert reported[:2] == ["1F1", "1B0"] and order["executed"][last][:2] == ["1F0", "1B0"]


def test_the_order_is_checked_against_a_family_and_the_first_difference_is_marked():
    run = TRACES / "scheduleinterleaved1f1b-4ranks"
    assert import_traces(files(run), ImportOptions(expected="interleaved-1f1b")).order_check is None
    differs = import_traces(files(run), ImportOptions(expected="looped-bfs")).order_check
    assert differs is not None and "<-- here" in differs and "looped-bfs has" in differs


def test_the_measured_costs_predict_a_timeline_and_every_family_is_compared_with_them():
    imported = import_traces(files(TRACES / "scheduleinterleaved1f1b-4ranks"))
    own, rows = family_table(imported)
    # one rank's share, counted here from the timeline's own rows: each stage's mean F (and B split in half)
    frame = imported.timeline.frame.assign(ms=lambda f: f["end"] - f["start"])
    means = frame.groupby(["stage", "kind"])["ms"].mean()
    p = imported.schedule.num_ranks
    forward = means.xs("F", level="kind").sum() / p
    backward = means.xs("B", level="kind").sum() / p
    by_hand = Costs.of({"F": forward, "I": backward / 2, "W": backward / 2}, comm=imported.transfer_ms)
    assert _share(imported).durations == pytest.approx(by_hand.durations)
    assert own == pytest.approx(simulate(imported.schedule, by_hand).makespan)
    this = next(row for row in rows if row.family == "interleaved-1f1b")
    assert this.step_change == pytest.approx(0.0) and this.peak_memory_ratio == pytest.approx(1.0)
    assert [row.step_ms for row in rows if row.step_ms is not None] == sorted(r.step_ms for r in rows if r.step_ms)


def _share(imported):
    from engine.traces.compare import share_costs

    return share_costs(imported)


def test_lesson_10s_claim_about_the_example_holds_transfers_are_most_of_its_bubble():
    """Lesson 10 step "your-traces" says the shipped example's idle time is mostly transfers, not the schedule."""
    from engine.traces.examples import DEFAULT_EXAMPLE, example_files

    causes = import_traces(example_files(DEFAULT_EXAMPLE)).idle_attribution()
    totals = dict(zip(causes.causes, causes.per_rank.sum(axis=0), strict=True))
    assert max(totals, key=totals.get) == "transfers" and totals["transfers"] > 0.5 * causes.idle.sum()
    assert totals["transfers"] > 5 * totals["schedule"]


def test_a_gpu_trace_is_timed_by_its_kernels_not_by_the_cpu_that_ran_ahead():
    run = TRACES / "gpu-synthetic-2ranks"
    imported = import_traces(files(run))
    assert {r: flat(s) for r, s in enumerate(imported.schedule.ranks)} == executed(
        json.loads((run / "order.json").read_text())
    )
    frame = imported.timeline.frame
    forward = frame[(frame["rank"] == 0) & (frame["kind"] == "F") & (frame["microbatch"] == 0)].iloc[0]
    assert forward["end"] - forward["start"] == pytest.approx(0.200, abs=1e-3)  # its two kernels, 180 + 20 µs
    assert imported.timeline.makespan > 1.5  # the GPU's, not the CPU's 0.4 ms
    assert any("GPU trace" in note for note in imported.notes)


@pytest.mark.parametrize("family", ["zb-h1", "dualpipev"])
def test_the_labs_own_trace_reads_back_to_the_same_order(tmp_path, capsys, family):
    """Its own ``run --trace`` output, overlapped pairs (DualPipeV) included."""
    path = tmp_path / "lab.trace.json"
    assert main(["run", "--schedule", family, "--ranks", "2", "--microbatches", "4", "--quiet", "--json",
                 "--trace", str(path)]) == 0  # fmt: skip
    capsys.readouterr()
    imported = import_traces([str(path)], ImportOptions(expected=family))
    from engine import build_schedule

    assert imported.schedule.ranks == build_schedule(family, 2, 4).ranks and imported.order_check is None


def test_gpipes_wait_for_its_input_inside_its_own_span_is_a_wait_not_compute():
    """GPipe's "Forward i" posts and waits for its receive inside itself: that time is a wait, and a transfer."""
    imported = import_traces(files(TRACES / "schedulegpipe-4ranks"))
    waits = imported.timeline.waits
    assert len(waits) > 0 and (waits["end"] - waits["start"]).sum() > 0 and imported.transfer_ms > 0
    assert imported.idle_attribution().total("transfers") > 0


def test_an_order_that_cannot_be_compared_is_said_not_raised():
    run = files(TRACES / "schedulegpipe-2ranks")
    chunked = import_traces(run, ImportOptions(expected="interleaved-1f1b"))
    assert not chunked.order_checkable and "cannot check against 'interleaved-1f1b'" in chunked.order_check
    unknown = import_traces(run, ImportOptions(expected="interleaved"))
    assert not unknown.order_checkable and "not a family" in unknown.order_check


def test_another_frameworks_names_read_with_a_pattern(tmp_path):
    run = TRACES / "scheduleinterleaved1f1b-2ranks"
    renamed = []
    for path in files(run):
        trace = json.loads(gzip.open(path).read())
        for event in trace["traceEvents"]:
            match = re.fullmatch(r"PP:([0-9]+)([FB])([0-9]+)", str(event.get("name", "")))
            if match:
                kind = "fwd" if match.group(2) == "F" else "bwd"
                event["name"] = f"stage{match.group(1)}_{kind}_mb{match.group(3)}"
        target = tmp_path / Path(path).name.replace(".gz", "")
        target.write_text(json.dumps(trace))
        renamed.append(str(target))
    pattern = r"stage(?P<stage>[0-9]+)_(?P<kind>fwd|bwd)_mb(?P<microbatch>[0-9]+)"
    imported = import_traces(renamed, ImportOptions(pattern=pattern))
    assert imported.schedule.ranks == import_traces(files(run)).schedule.ranks


@pytest.mark.parametrize(
    "pattern, reason",
    [
        (r"(?P<stage>[0-9])(?P<kind>F)(?P<microbatch>[0-9])\1", "invalid escape sequence: \\1"),
        (r"(?=x)(?P<stage>[0-9])(?P<kind>F)(?P<microbatch>[0-9])", "invalid perl operator: (?="),
        (r"(?P<stage>[0-9])", "needs the named groups kind, microbatch"),
        ("x" * 301, "at most 300 characters"),
        ("(", "missing ): ("),
    ],
)
def test_a_pattern_re2_cannot_read_is_refused_with_its_reason(pattern, reason):
    with pytest.raises(ValueError, match=re.escape(reason)) as refused:
        compile_pattern(pattern)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    "pattern",
    [
        r"(?P<stage>.*)(?P<kind>.*)(?P<microbatch>.*)" + ".*" * 20 + "Z",  # many wildcards: slow on backtracking
        r"(?P<stage>[0-9]+)(?P<kind>F)(?P<microbatch>[0-9]+)(a+)+b",  # nested repeats: exponential on backtracking
        r"(?P<stage>[0-9])(?P<kind>F)(?P<microbatch>[0-9])(?:a|a)*b",
    ],
)
def test_a_pattern_that_would_backtrack_for_ever_runs_in_linear_time(pattern):
    compiled = compile_pattern(pattern)
    started = time.perf_counter()
    for name in ("a" * 999, "0F1" + "a" * 996, "PP:" + "a" * 997):
        assert read_label(name, compiled) == NOTHING
    assert time.perf_counter() - started < 1.0  # Python's matcher: past 60 s on the first


# -- bad input: one clear line, nothing crashes or hangs ----------------------------------------------------------
def _rewrite(tmp_path: Path, run: str, change) -> list[str]:
    written = []
    for path in files(TRACES / run):
        trace = json.loads(gzip.open(path).read())
        change(Path(path).name, trace)
        target = tmp_path / Path(path).name
        target.write_bytes(gzip.compress(json.dumps(trace).encode()))
        written.append(str(target))
    return written


def _refused(paths, message: str, **options) -> None:
    with pytest.raises(TraceError, match=re.escape(message)) as caught:
        import_traces(paths, ImportOptions(**options))
    assert "\n" not in str(caught.value) or "<-- here" in str(caught.value)


def test_not_json_and_a_cut_gzip_are_refused_in_one_line(tmp_path):
    text = tmp_path / "rank0.json"
    text.write_text("hello, not a trace")
    _refused([str(text)], "not a complete JSON trace")
    whole = Path(files(TRACES / "schedulegpipe-2ranks")[0]).read_bytes()
    cut = tmp_path / "rank0.json.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    _refused([str(cut)], "the compressed file is damaged or cut short")


def test_a_trace_without_pipeline_annotations_says_what_it_found_and_which_pattern_would_help(tmp_path):
    def strip(name, trace):
        trace["traceEvents"] = [e for e in trace["traceEvents"] if e.get("cat") != "cpu_op" or "Sequence" not in
                                str(e.get("args"))]  # fmt: skip
        for event in trace["traceEvents"]:
            if str(event.get("name", "")).startswith(("PP:", "Forward", "Backward")):
                event["name"] = "my_step_part"

    paths = _rewrite(tmp_path, "schedulegpipe-2ranks", strip)
    _refused(paths, "no pipeline annotations (found")
    with pytest.raises(TraceError, match=r"\(\?P<stage>"):
        import_traces(paths)


def test_ranks_world_sizes_and_steps_that_do_not_fit_are_refused(tmp_path):
    run = files(TRACES / "scheduleinterleaved1f1b-2ranks")
    _refused([run[0], run[0]], "two files claim rank 0")
    _refused([run[0]], "missing rank(s) 1")

    def world(name, trace):
        if name.startswith("rank1"):
            trace["distributedInfo"]["world_size"] = 4

    _refused(_rewrite(tmp_path / "w", "scheduleinterleaved1f1b-2ranks", world) if (tmp_path / "w").mkdir() is None
             else [], "the traces disagree on the world size")  # fmt: skip

    def steps(name, trace):
        if name.startswith("rank1"):
            for event in trace["traceEvents"]:
                if str(event.get("name", "")).startswith("ProfilerStep#"):
                    event["name"] = "ProfilerStep#" + str(int(event["name"].split("#")[1]) + 10)

    (tmp_path / "s").mkdir()
    _refused(_rewrite(tmp_path / "s", "scheduleinterleaved1f1b-2ranks", steps), "ProfilerStep#N do not line up")
    _refused(run, "step 7 is not on every rank", step=7)


def test_a_gap_in_the_clock_is_estimated_from_the_hand_offs_and_applied(tmp_path):
    def later(name, trace):
        if name.startswith("rank1"):
            trace["baseTimeNanoseconds"] += 10_000_000_000  # rank 1's clock 10 s ahead, as on another host

    honest = import_traces(files(TRACES / "scheduleinterleaved1f1b-2ranks"))
    shifted = import_traces(_rewrite(tmp_path, "scheduleinterleaved1f1b-2ranks", later))
    assert shifted.applied_offsets_ms and abs(shifted.applied_offsets_ms[1] + 10_000) < 5
    assert shifted.timeline.makespan == pytest.approx(honest.timeline.makespan, rel=0.3)
    assert any("clock offsets applied" in note for note in shifted.notes)


def test_a_file_over_the_size_bound_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(reading, "MAX_TRACE_BYTES", 1000)
    _refused(files(TRACES / "schedulegpipe-2ranks")[:1], "the lab reads traces of at most")


def test_a_file_that_decompresses_past_the_bound_is_stopped_there(monkeypatch):
    monkeypatch.setattr(reading, "MAX_TEXT_BYTES", 50_000)  # the fixture's rank 0 is ~140 kB of text
    _refused(files(TRACES / "schedulegpipe-2ranks")[:1], "decompresses to more than")


def test_the_cli_prints_the_step_and_refuses_bad_input_in_one_line(capsys, tmp_path):
    run = files(TRACES / "scheduleinterleaved1f1b-4ranks")
    assert main(["trace", *run, "--quiet", "--expect", "interleaved-1f1b", "--compare"]) == 0
    out = capsys.readouterr().out
    assert "order equals interleaved-1f1b" in out and "idle by cause" in out and "zb-v" in out
    assert main(["trace", *run, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["ranks"] == 4 and summary["time_unit"] == "ms"
    # every profiled step read; the one shown is the median by step time of those after the first (a job's first
    # step is its warm-up: PyTorch's pipelining exchanges shapes outside it) — of two, the second
    steps = summary["profiled_steps"]
    assert [figures["step"] for figures in steps] == [0, 1]
    assert summary["profiler_step"] == 1 and summary["makespan"] == pytest.approx(steps[1]["makespan_ms"])
    assert summary["step_spread"]["makespan_ms"] == sorted(figures["makespan_ms"] for figures in steps)
    bad = tmp_path / "rank0.json"
    bad.write_text("{")
    for arguments in ([str(bad)], [*run, "--offsets", "1:nan"], [*run, "--offsets", "7:5"], [*run, "--step", "x"]):
        assert main(["trace", *arguments, "--quiet"]) == 2, arguments
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err


@pytest.mark.slow
def test_a_fresh_pytorch_run_regenerates_and_imports(tmp_path):
    """tests/fixtures/make_traces.py runs PyTorch's ScheduleInterleavedZeroBubble on 2 gloo processes again; the
    import rebuilds the order it executed."""
    script = Path(__file__).parents[2] / "fixtures" / "make_traces.py"
    command = [sys.executable, str(script), "--out", str(tmp_path), "--ranks", "2"]
    result = subprocess.run(
        [*command, "--classes", "ScheduleInterleavedZeroBubble"], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    (run,) = [path for path in tmp_path.iterdir() if (path / "order.json").exists()]
    order = json.loads((run / "order.json").read_text())
    imported = import_traces(files(run))
    assert {rank: flat(slots) for rank, slots in enumerate(imported.schedule.ranks)} == executed(order)

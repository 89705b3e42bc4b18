"""Timings on a crowded host: the estimator interference can only inflate, and the busy-host notice —
checked on synthetic repeats (deterministic), through a real run and the command line with the thresholds
moved, and once under load induced on one CPU. No test here asserts a ratio that depends on this machine's
cores or load: those are printed by benchmarks/crowded_host.py."""

import ctypes
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from engine.cli import main
from engine.model_config import ModelConfig
from engine.runtime import RunConfig, interference, run
from engine.runtime.interference import assess, estimate
from engine.runtime.perf import unavailable

TINY = ModelConfig(kind="mlp", layers=2, hidden=32, batch=8)


def repeats(spread: float) -> np.ndarray:
    """5 repeats × 40 actions of 1–3 ms: the typical (median) repeat of each action ``spread`` slower than its
    fastest, the slowest twice that."""
    fastest = np.random.default_rng(0).uniform(1.0, 3.0, size=40)
    factors = np.array([1.0, 1 + spread / 2, 1 + spread, 1 + spread, 1 + 2 * spread])
    return factors[:, None] * fastest[None, :]


def test_the_estimators():
    samples = np.array([[3.0, 1.0], [1.0, 5.0], [2.0, 2.0]])
    assert estimate(samples, "min").tolist() == [1.0, 1.0]
    assert estimate(samples, "median").tolist() == [2.0, 2.0]
    with pytest.raises(ValueError, match="estimator must be one of min, median"):
        estimate(samples, "mean")


def test_a_40_percent_spread_says_the_host_was_busy_and_2_percent_does_not():
    noisy, quiet = assess(repeats(0.40), cpu_share=0.97), assess(repeats(0.02), cpu_share=0.97)
    assert noisy.busy and noisy.variation == pytest.approx(0.40)
    assert noisy.sentence.startswith("warning: the host was busy: the timings vary by 40% between the 5 measured")
    assert "close other programs or raise --repeats" in noisy.sentence
    assert not quiet.busy and quiet.variation == pytest.approx(0.02)
    assert quiet.sentence.startswith("the timings vary by ") and "busy" not in quiet.sentence


def test_a_thread_that_had_a_cpu_a_third_of_the_time_says_so_even_when_its_repeats_agree():
    crowded = assess(repeats(0.02), cpu_share=0.33)
    assert crowded.busy and "the run had a CPU 33% of the time" in crowded.sentence
    assert not assess(repeats(0.02), cpu_share=None).busy  # a GPU's clock: only the spread speaks
    single = assess(repeats(0.40)[:1], cpu_share=0.97)
    assert single.variation == 0 and not single.busy  # one repeat: nothing to compare


@pytest.mark.timing  # its prediction error is wall-clock time on this host: run alone, not beside other tests
def test_a_run_places_each_actions_fastest_repeat_and_keeps_the_median_and_spread():
    config = RunConfig(family="zb-h1", num_ranks=2, num_microbatches=4, model=TINY, repeats=3)
    result = run(config)
    frame = result.measured.frame
    assert (frame["compute_ms"] == frame["duration_min"]).all()
    assert (frame["duration_min"] <= frame["duration_median"]).all()
    assert (frame["duration_median"] <= frame["duration_max"]).all()
    # placing is monotone in the durations: the fastest repeats give no more than the fastest step
    low, high = result.makespan_spread
    assert result.measured.makespan <= low * (1 + 1e-9)
    summary = result.summary()
    assert summary["estimator"] == "min" and set(summary["interference"]) >= {"variation", "cpu_share", "busy"}
    # the prediction uses the same estimates; what is left is the host's scheduling between actions (up to 6 %
    # seen on this shared 2-core host with the test run alone)
    assert abs(summary["prediction_error"]) < 0.10
    median = run(RunConfig(family="zb-h1", num_ranks=2, num_microbatches=4, model=TINY, estimator="median"))
    assert (median.measured.frame["compute_ms"] == median.measured.frame["duration_median"]).all()
    assert median.summary()["estimator"] == "median"


def cli(capsys, *extra):
    code = main(
        ["run", "--ranks", "2", "--microbatches", "2", "--layers", "2", "--hidden", "16", "--batch", "4"] + [*extra]
    )
    out, err = capsys.readouterr()
    return code, out, err


def test_the_command_line_says_when_the_host_was_busy(capsys, monkeypatch):
    monkeypatch.setattr(interference, "BUSY_CPU_SHARE", 2.0)  # every run "busy"
    code, out, _ = cli(capsys, "--quiet")
    assert code == 0
    assert "  warning: the host was busy: the timings vary by " in out
    assert "close other programs or raise --repeats" in out and "\ninterference" not in out
    code, out, _ = cli(capsys, "--json")
    summary = json.loads(out)
    assert summary["interference"]["busy"] and summary["interference"]["sentence"] in summary["notes"]


def test_the_command_line_says_nothing_of_a_busy_host_when_it_was_not(capsys, monkeypatch):
    monkeypatch.setattr(interference, "BUSY_CPU_SHARE", 0.0)
    monkeypatch.setattr(interference, "BUSY_VARIATION", float("inf"))
    code, out, _ = cli(capsys, "--quiet", "--estimator", "median")
    assert code == 0 and "busy" not in out
    assert "\ninterference      the timings vary by " in out and "from each action's median of 3 step(s)" in out


def test_an_unknown_estimator_is_refused(capsys):
    code, _, err = cli(capsys, "--estimator", "mean")
    assert code == 2 and "--estimator: invalid choice: 'mean'" in err


@pytest.mark.skipif(unavailable() is None, reason="the instructions counter works here: nothing to refuse")
def test_clock_instructions_is_refused_with_the_reason_where_the_counter_is_unavailable(capsys):
    code, out, err = cli(capsys, "--clock", "instructions")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("error: --clock instructions is not available here: ") and unavailable() in err


@pytest.mark.skipif(unavailable() is not None, reason=f"no instructions counter here: {unavailable()}")
def test_clock_instructions_times_actions_by_instructions_retired(capsys):
    code, out, err = cli(capsys, "--clock", "instructions", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["clock"] == "instructions" and summary["makespan"] > 0 and summary["gradients_match"]


def test_clock_instructions_is_for_the_emulated_backend_on_the_cpu(capsys):
    code, _, err = cli(capsys, "--clock", "instructions", "--backend", "distributed")
    assert code == 2 and "the distributed backend keeps the wall clock" in err


@pytest.mark.slow
@pytest.mark.timing
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs os.sched_setaffinity (Linux)")
def test_a_run_sharing_its_cpu_with_two_busy_loops_says_the_host_was_busy():
    """Load induced the same on any machine: this process and two busy loops pinned to one CPU, so the run's
    thread gets about a third of it however many cores there are."""
    cpu = min(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    pinned = f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"
    loops = [subprocess.Popen([sys.executable, "-c", pinned]) for _ in range(2)]
    try:
        os.sched_setaffinity(0, {cpu})
        time.sleep(0.5)
        config = RunConfig(family="1f1b", num_ranks=2, num_microbatches=4, repeats=3, model=TINY)
        result = run(config)
    finally:
        os.sched_setaffinity(0, before)
        for loop in loops:
            loop.kill()
            loop.wait()
    assert result.interference.busy and result.interference.cpu_share < 0.75, result.interference
    assert result.interference.sentence in result.notes


# timing: the task clock is CPU time, which a busy neighbour (the parallel tier's other worker) stretches by a
# few per cent through the shared caches; the prediction's 5 % holds when the test runs alone
@pytest.mark.timing
def test_the_instructions_clock_end_to_end_with_a_counter_this_machine_has(monkeypatch):
    """The hardware counter is missing here (and in most containers): the same path, counting the thread's
    task clock (a software perf event, PERF_COUNT_SW_TASK_CLOCK) instead, so the syscall, the calibration and
    the conversion to milliseconds all run."""
    import struct

    from engine.runtime import perf

    def task_clock():
        attributes = ctypes.create_string_buffer(perf.ATTR_SIZE)
        struct.pack_into("=IIQ", attributes, 0, 1, perf.ATTR_SIZE, 1)  # PERF_TYPE_SOFTWARE, TASK_CLOCK
        struct.pack_into("=Q", attributes, 40, perf.EXCLUDE_KERNEL | perf.EXCLUDE_HV)
        return attributes

    monkeypatch.setattr(perf, "_attributes", task_clock)
    try:
        os.close(perf.open_counter())
    except perf.CounterUnavailable as error:
        pytest.skip(f"perf_event_open is refused here altogether: {error}")
    monkeypatch.setattr(perf, "unavailable", lambda: None)
    result = run(RunConfig(family="1f1b", num_ranks=2, num_microbatches=4, model=TINY, clock="instructions"))
    summary = result.summary()
    assert summary["clock"] == "instructions" and summary["gradients_match"]
    assert 0 < summary["makespan"] < 10 * result.wall_ms_per_step  # counts turned into plausible milliseconds
    assert abs(summary["prediction_error"]) < 0.05

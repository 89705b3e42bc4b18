"""The CLI: numbers in --json, the grid, the trace, and one-line errors with exit 2."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.cli import main


def run_cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_has_the_promised_fields(capsys):
    code, out, _ = run_cli(capsys, "simulate", "--schedule", "1f1b", "--ranks", "4", "--microbatches", "8", "--json")
    assert code == 0
    result = json.loads(out)
    assert {"makespan", "bubble_fraction", "bubble_ratio", "peak_memory", "num_actions"} <= set(result)
    assert result["makespan"] == (8 + 3) * 3
    assert result["bubble_fraction"] == pytest.approx(3 / 11)
    assert result["peak_memory"] == [4, 3, 2, 1]
    assert result["num_actions"] == 4 * 8 * 2


def test_split_costs_chunks_comm_and_recompute(capsys):
    code, out, _ = run_cli(
        capsys,
        "simulate",
        "--schedule",
        "interleaved-1f1b",
        "--ranks",
        "2",
        "--microbatches",
        "4",
        "--chunks",
        "2",
        "--costs",
        "F=1,I=1,W=1",
        "--comm",
        "0.5",
        "--recompute",
        "--json",
    )
    assert code == 0
    result = json.loads(out)
    assert result["chunks"] == 2 and result["num_actions"] == 2 * 2 * 4 * 2
    assert result["busy"] == [4 * 4, 4 * 4]  # F + (I + W) + recomputed F per micro-batch and rank share


def test_stage_scale_makes_one_stage_slow(capsys):
    code, out, _ = run_cli(
        capsys,
        "simulate",
        "--schedule",
        "gpipe",
        "--ranks",
        "2",
        "--microbatches",
        "4",
        "--stage-scale",
        "1,3",
        "--json",
    )
    assert code == 0 and json.loads(out)["makespan"] == 4 * 3 * 3 + 3  # slow stage's work + one fill/drain
    code, _, err = run_cli(
        capsys, "simulate", "--schedule", "gpipe", "--ranks", "2", "--microbatches", "4", "--stage-scale", "1,2,3"
    )
    assert code == 2 and "stage_scale has 3 entries but the schedule has 2 stages" in err


def test_grid_and_trace(capsys, tmp_path):
    trace = tmp_path / "run.json"
    code, out, _ = run_cli(
        capsys,
        "simulate",
        "--schedule",
        "zb-v",
        "--ranks",
        "2",
        "--microbatches",
        "3",
        "--costs",
        "F=1,I=1,W=1",
        "--grid",
        "--trace",
        str(trace),
    )
    assert code == 0 and "Rank 0" in out and "Step 00: 0F0" in out and "bubble_fraction" in out
    events = json.loads(trace.read_text())["traceEvents"]
    computes = [e for e in events if e["ph"] == "X" and e["cat"] in ("F", "I", "W")]
    assert {e["pid"] for e in computes} == {0, 1} and {e["tid"] for e in computes} == {0}  # a process per rank
    assert len(computes) == 2 * 2 * 3 * 3


def test_simulates_an_imported_pytorch_csv(capsys):
    code, out, _ = run_cli(
        capsys,
        "simulate",
        "--from-csv",
        "tests/fixtures/pytorch_zbh1_2ranks_3mb.csv",
        "--costs",
        "F=1,I=1,W=1",
        "--json",
    )
    assert code == 0 and json.loads(out)["makespan"] == 3 * 3 + 1


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--schedule", "1f1b", "--ranks", "0", "--microbatches", "4"],
            "--ranks: expected a whole number from 1 to 256, got 0",
        ),
        (["--schedule", "nope", "--ranks", "2", "--microbatches", "4"], "invalid choice: 'nope'"),
        (
            ["--schedule", "interleaved-1f1b", "--ranks", "4", "--microbatches", "6", "--chunks", "99"],
            "--chunks: expected a whole number from 1 to 64, got 99",
        ),
        (["--schedule", "zb-v", "--ranks", "4", "--microbatches", "6", "--chunks", "1"], "zb-v always has 2 chunk(s)"),
        (["--schedule", "1f1b", "--ranks", "2", "--microbatches", "4", "--costs", "F=x"], "'x' is not a number"),
        (
            ["--schedule", "1f1b", "--ranks", "2", "--microbatches", "4", "--costs", "F=1,B=3,I=1,W=1"],
            "B must equal I + W",
        ),
        (["--schedule", "1f1b", "--ranks", "2", "--microbatches", "4", "--chunks", "3"], "takes no chunks option"),
        (["--ranks", "2"], "missing --schedule, --microbatches"),
        (["--from-csv", "/no/such/file"], "cannot read /no/such/file"),
    ],
)
def test_bad_arguments_give_one_line_and_exit_2(capsys, args, message):
    code, out, err = run_cli(capsys, "simulate", *args)
    assert code == 2 and out == ""
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.slow
def test_module_entry_point_runs():
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine",
            "simulate",
            "--schedule",
            "gpipe",
            "--ranks",
            "4",
            "--microbatches",
            "6",
            "--costs",
            "F=1,B=0",
            "--json",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0 and json.loads(result.stdout)["bubble_fraction"] == pytest.approx(1 / 3)


@pytest.mark.slow
def test_run_json_has_the_promised_fields(capsys):
    code, out, err = run_cli(
        capsys,
        "run",
        "--schedule",
        "zb-h1",
        "--ranks",
        "2",
        "--microbatches",
        "4",
        "--model",
        "gpt",
        "--layers",
        "4",
        "--hidden",
        "32",
        "--batch",
        "8",
        "--seq-len",
        "8",
        "--json",
    )
    assert code == 0, err
    result = json.loads(out)
    for field in (
        "makespan",
        "bubble_fraction",
        "predicted_makespan",
        "prediction_error",
        "loss",
        "reference_loss",
        "max_grad_error",
        "peak_memory_bytes",
        "backend",
        "device",
    ):
        assert field in result
    assert result["backend"] == "emulated" and result["device"] == "cpu"
    assert result["loss"] == pytest.approx(result["reference_loss"], rel=1e-6)
    assert result["max_grad_error"] < 1e-5
    assert len(result["peak_memory_bytes"]) == 2 and min(result["peak_memory_bytes"]) > 0


def test_run_text_output_says_clocks_are_virtual_and_shows_progress(capsys, tmp_path):
    trace = tmp_path / "run.json"
    code, out, err = run_cli(
        capsys,
        "run",
        "--schedule",
        "1f1b",
        "--ranks",
        "2",
        "--microbatches",
        "2",
        "--layers",
        "2",
        "--hidden",
        "16",
        "--batch",
        "4",
        "--trace",
        str(trace),
    )
    assert code == 0
    assert "the durations are measured (CPU time of the thread" in out and "the device clocks are virtual" in out
    assert "predicted from the measured costs" in out and "100%" in err
    events = json.loads(trace.read_text())["traceEvents"]
    assert sum(e["ph"] == "X" and e["cat"] in ("F", "B") for e in events) == 2 * 2 * 2


@pytest.mark.parametrize(
    "args, message",
    [
        (["--microbatches", "3", "--batch", "8"], "batch (8) must split into 3 equal micro-batches: 8 = 2×3 + 2"),
        (["--layers", "3"], "3 blocks cannot fill 4 stages"),
        (["--partition", "1,2"], "partition 1,2 has 2 entries for 4 stages"),
        (["--model", "gpt", "--hidden", "30"], "hidden (30) must be a multiple of heads (4)"),
        (["--schedule", "dualpipev", "--chunks", "3"], "dualpipev always has 2 chunk(s) per rank"),
        (["--fail-at", "9:0F0"], "there is no rank 9 (ranks 0..3)"),
        (["--fail-at", "1:0F0"], "rank 1 never runs 0F0"),
        (["--timeout", "0"], "--timeout: expected a finite number > 0"),
        (["--trace", "/nonexistent-folder/t.json"], "cannot write the trace"),
    ],
)
def test_run_bad_arguments_exit_2_with_the_arithmetic(capsys, args, message):
    code, out, err = run_cli(capsys, "run", *args)
    assert code == 2 and message in err and err.count("\n") == 1


def test_run_failure_exits_1_naming_rank_and_action(capsys):
    code, _, err = run_cli(
        capsys,
        "run",
        "--ranks",
        "2",
        "--microbatches",
        "2",
        "--layers",
        "2",
        "--hidden",
        "16",
        "--batch",
        "4",
        "--fail-at",
        "0:0F1",
        "--quiet",
    )
    assert code == 1 and "rank 0 failed during 0F1" in err


@pytest.mark.slow
def test_run_distributed_trace_separates_compute_and_waits(tmp_path):
    trace = tmp_path / "dist.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine",
            "run",
            "--backend",
            "distributed",
            "--ranks",
            "2",
            "--microbatches",
            "4",
            "--layers",
            "2",
            "--hidden",
            "16",
            "--batch",
            "8",
            "--repeats",
            "1",
            "--warmup-steps",
            "0",
            "--json",
            "--trace",
            str(trace),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["backend"] == "distributed" and summary["max_grad_error"] < 1e-5
    events = json.loads(trace.read_text())["traceEvents"]
    assert {"F", "B", "wait"} <= {e["cat"] for e in events if e["ph"] == "X"} <= {"F", "B", "wait", "transfer"}
    waits = [e for e in events if e.get("cat") == "wait"]
    assert {e["pid"] for e in waits} == {0, 1} and {e["tid"] for e in waits} == {1}  # the communication track


@pytest.mark.slow
def test_run_under_torchrun():
    torchrun = Path(sys.executable).with_name("torchrun")
    if not torchrun.exists():
        pytest.skip("torchrun is not next to this Python")
    result = subprocess.run(
        [
            str(torchrun),
            "--nproc-per-node",
            "2",
            "-m",
            "engine",
            "run",
            "--backend",
            "distributed",
            "--ranks",
            "2",
            "--microbatches",
            "4",
            "--layers",
            "2",
            "--hidden",
            "16",
            "--batch",
            "8",
            "--repeats",
            "1",
            "--warmup-steps",
            "0",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 1  # only rank 0 prints
    summary = json.loads(lines[0])
    assert summary["backend"] == "distributed" and summary["max_grad_error"] < 1e-5


@pytest.mark.parametrize(
    "csv, message",
    [
        ("0F99999999999999999999\n", "indices above 999999 are not supported"),
        ("1F999999,1B999999\n", "1F999999 is outside 2 stages × 1 micro-batches"),
        ("999999F0\n", "1,000,000 (stage, micro-batch) pairs; the lab simulates up to 131,072"),
        ("0F0,0B0,1F0\n1B0\n", "1F0 is on rank 0 but stage 1 lives on rank 1"),
    ],
)
def test_bad_csv_gives_a_clear_error(capsys, tmp_path, csv, message):
    path = tmp_path / "bad.csv"
    path.write_text(csv)
    code, _, err = run_cli(capsys, "simulate", "--from-csv", str(path))
    assert code == 2 and message in err and "Traceback" not in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--trace", "/nonexistent-folder/x.json"], "cannot write the trace to /nonexistent-folder/x.json"),
        (["--costs", "F=1,F=2"], "cost F is given twice"),
    ],
)
def test_simulate_checks_before_working(capsys, args, message):
    code, _, err = run_cli(capsys, "simulate", "--schedule", "1f1b", "--ranks", "2", "--microbatches", "2", *args)
    assert code == 2 and message in err


def test_from_csv_with_contradicting_sizes(capsys):
    code, _, err = run_cli(
        capsys, "simulate", "--from-csv", "tests/fixtures/pytorch_1f1b_2ranks_3mb.csv", "--ranks", "4"
    )
    assert code == 2 and "--ranks 4 does not match" in err and "which has 2" in err


# -- bad input refused at once, before any work -----------------------------------------------------------------
def test_from_csv_refuses_a_huge_microbatch_count_at_once(capsys):
    started = time.monotonic()
    code, _, err = run_cli(
        capsys, "simulate", "--from-csv", "tests/fixtures/pytorch_1f1b_2ranks_3mb.csv", "--microbatches", "1000000000"
    )
    assert code == 2 and "--microbatches: expected a whole number from 1 to 16384" in err
    assert time.monotonic() - started < 2


@pytest.mark.parametrize(
    "content, message",
    [
        (b"0F0," * (3 * 1024 * 1024), "is larger than 8 MiB"),
        (b"\n" * (9 * 1024 * 1024), "is larger than 8 MiB"),
        (b"0F0,\x00\x00", "holds NUL bytes"),
        (b"0F0,\xff0B0\n", "is not UTF-8 text (byte 0xff at offset 4)"),
        ((b"0F0," * 1_100_000) + b"\n", "cells; the lab reads up to"),
    ],
)
def test_oversized_or_binary_csv_is_refused_in_seconds(capsys, tmp_path, content, message):
    path = tmp_path / "big.csv"
    path.write_bytes(content)
    started = time.monotonic()
    code, _, err = run_cli(capsys, "simulate", "--from-csv", str(path))
    assert code == 2 and message in err and str(path) in err and err.count("\n") == 1
    assert time.monotonic() - started < 5


def test_dev_zero_is_refused(capsys):
    code, _, err = run_cli(capsys, "simulate", "--from-csv", "/dev/zero")
    assert code == 2 and err == "error: cannot read /dev/zero: it is a character device, not a regular file\n"


def test_a_utf8_byte_order_mark_is_accepted(capsys, tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbf" + Path("tests/fixtures/pytorch_1f1b_2ranks_3mb.csv").read_bytes())
    code, out, _ = run_cli(capsys, "simulate", "--from-csv", str(path), "--json")
    assert code == 0 and json.loads(out)["num_actions"] == 2 * 3 * 2


def test_limits_hold_in_seconds_and_are_stated_in_help(capsys):
    started = time.monotonic()
    code, _, err = run_cli(capsys, "simulate", "--schedule", "zb-h1", "--ranks", "256", "--microbatches", "16384")
    assert (
        code == 2
        and "256 ranks × 16384 micro-batches × 1 chunk(s) = 4,194,304 (stage, micro-batch) pairs; "
        "the lab simulates up to 131,072"
        in err
    )
    assert time.monotonic() - started < 2
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    assert "ranks × micro-batches × chunks ≤ 131,072" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--costs", "F=1e308"], "cost B works out to inf from F=1e+308"),
        (["--costs", "F=1e307"], "the simulated times overflow"),
        (["--comm", "1e308"], "the simulated times overflow"),
        (["--stage-scale", "1e308,1,1,1"], "the simulated times overflow"),
        (["--comm", "inf"], "--comm: expected a finite number ≥ 0, got inf"),
        (["--costs", "F=nan"], "cost forward must be a finite number ≥ 0, got nan"),
    ],
)
def test_results_must_be_finite(capsys, extra, message):
    code, out, err = run_cli(
        capsys, "simulate", "--schedule", "1f1b", "--ranks", "4", "--microbatches", "8", "--json", *extra
    )
    assert code == 2 and out == "" and message in err and "Traceback" not in err


def test_json_prints_no_float_crumbs(capsys):
    from engine import Costs, build_schedule, simulate

    costs = Costs.of({"F": 0.1, "B": 0.2})
    raw = simulate(build_schedule("interleaved-1f1b", 4, 8, 3), costs).makespan
    assert repr(raw) != repr(float(f"{raw:.12g}"))  # the raw sum has crumbs: the test can fail
    code, out, _ = run_cli(
        capsys,
        "simulate",
        "--schedule",
        "interleaved-1f1b",
        "--ranks",
        "4",
        "--microbatches",
        "8",
        "--chunks",
        "3",
        "--costs",
        "F=0.1,B=0.2",
        "--json",
    )
    assert code == 0 and json.loads(out)["makespan"] == float(f"{raw:.12g}")
    assert repr(raw) not in out


def test_unwritable_trace_is_one_line(capsys):
    code, _, err = run_cli(
        capsys, "simulate", "--schedule", "1f1b", "--ranks", "2", "--microbatches", "2", "--trace", "/dev/full"
    )
    assert code == 2 and err == "error: cannot write the trace to /dev/full: No space left on device\n"


@pytest.mark.slow
def test_a_closed_pipe_is_a_quiet_exit():
    command = f"{sys.executable} -m engine simulate --schedule zb-h1 --ranks 8 --microbatches 400 --grid | head -1"
    result = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True)
    assert result.stdout.split() == [f"{word}" for r in range(8) for word in ("Rank", str(r))]
    assert result.stderr == "" and result.returncode == 141


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--partition", "-1,3,3,3"],
            "partition -1,3,3,3 has a negative count: blocks per stage are whole numbers ≥ 0",
        ),
        (["--timeout", "-1"], "--timeout: expected a finite number > 0, got -1"),
        (["--seed", "1e23"], "--seed: expected a whole number from 0 to 4294967295, got 1e23"),
        (["--seed", str(10**23)], "--seed: expected a whole number from 0 to 4294967295"),
        (["--layers", "1000000000", "--ranks", "2"], "blocks (layers) must be from 1 to 256, got 1000000000"),
    ],
)
def test_run_arguments_say_what_is_accepted(capsys, args, message):
    code, _, err = run_cli(capsys, "run", *args)
    assert code == 2 and message in err and err.count("\n") == 1


# -- memory: estimated before, and a MemoryError anywhere is one line ------------------------------------------
def test_simulate_refuses_ahead_what_would_not_fit_with_the_arithmetic():
    from engine.cli import check_simulate_memory

    check_simulate_memory(131_072, available=8 * 2**30)  # 368 MiB of 4 GiB: fine
    with pytest.raises(ValueError) as refused:
        check_simulate_memory(131_072, available=512 * 2**20)
    said = str(refused.value)
    assert "131,072 (stage, micro-batch) pairs needs about 368.0 MiB (393,216 actions × 640 B" in said
    assert "may use 256.0 MiB here (50% of the 512.0 MiB this machine has free)" in said and "fewer ranks" in said


def test_a_memory_error_anywhere_is_one_line_and_exit_2(capsys, monkeypatch):
    import engine.cli

    def exhausted(*_args, **_kwargs):
        raise MemoryError("Allocation failed (probably too large).")

    monkeypatch.setattr(engine.cli, "simulate", exhausted)
    code, out, err = run_cli(capsys, "simulate", "--schedule", "1f1b", "--ranks", "4", "--microbatches", "8")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("error: out of memory: try fewer ranks or micro-batches; this process may use ")


@pytest.mark.slow
def test_the_simulate_memory_estimate_bounds_a_measured_run():
    """``limits.simulate_bytes`` against the peak a real simulate adds above its imports (ZB-H2, 128 × 512)."""
    from engine.fast_walk import FIRST_USE_SLOTS
    from engine.limits import simulate_bytes

    # the peak from /proc (VmHWM, this process's own): ru_maxrss keeps the peak of the process that forked it
    # (Linux carries it across exec), a large test worker's, and then nothing measured here rises above it
    measure = (
        "import io, contextlib\n"
        "from engine.cli import main\n"
        "def peak():\n"
        "    return next(int(line.split()[1]) for line in open('/proc/self/status') if line.startswith('VmHWM'))\n"
        "base = peak()\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    code = main(['simulate', '--schedule', 'zb-h2', '--ranks', '128', '--microbatches', '512', '--json'])\n"
        "print(code, (peak() - base) * 1024)\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", measure], cwd=root, capture_output=True, text=True, check=True)
    code, measured = map(int, done.stdout.split())
    assert code == 0, done.stderr  # a refused or failed simulate would measure nothing
    estimate = simulate_bytes(128 * 512, compiled=2 * 3 * 128 * 512 >= FIRST_USE_SLOTS)
    assert measured <= estimate <= 1.6 * measured, (measured, estimate)


HOSTILE = "\x1b[2J\x1b]0;owned\x07\r\n\u202eevil\x9b31m\udcff"
"""A screen clear, a window title ended by BEL, CR and LF, a bidi override, a C1 CSI and a byte that is not UTF-8
(a file name's, as ``sys.argv`` holds it)."""


def test_control_characters_from_outside_reach_the_terminal_escaped(capsys, tmp_path):
    for args in (["simulate", f"--bogus{HOSTILE}"], ["simulate", "--from-csv", str(tmp_path / f"x{HOSTILE}.csv")],
                 ["trace", "--quiet", str(tmp_path / f"rank0{HOSTILE}.json")]):  # fmt: skip
        code, out, err = run_cli(capsys, *args)
        assert code == 2 and out == "" and err.count("\n") == 1, ascii(err)
        assert "\\x1b[2J" in err and not any(char in err for char in "\x1b\x07\r\u202e\x9b\udcff"), ascii(err)


def test_stdout_and_stderr_lines_show_a_control_character_as_its_escape(capsys):
    import io

    from engine.terminal import WatchedOutput, say

    stream = io.StringIO()
    written = WatchedOutput(stream).write(f"grid\n\trow {HOSTILE}")
    assert written == len(f"grid\n\trow {HOSTILE}")
    # what is printed keeps its line breaks and tabs (a grid's), the rest shows escaped
    assert stream.getvalue() == "grid\n\trow \\x1b[2J\\x1b]0;owned\\x07\\r\n\\u202eevil\\x9b31m\\udcff"
    say(f"written to {HOSTILE}")
    assert capsys.readouterr().err == "written to \\x1b[2J\\x1b]0;owned\\x07\\r\\n\\u202eevil\\x9b31m\\udcff\n"

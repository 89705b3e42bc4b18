"""The CLI: numbers in --json, the grid, the trace, and one-line errors with exit 2."""

import json
import subprocess
import sys
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
    code, out, _ = run_cli(capsys, "simulate", "--schedule", "interleaved-1f1b", "--ranks", "2", "--microbatches",
                           "4", "--chunks", "2", "--costs", "F=1,I=1,W=1", "--comm", "0.5", "--recompute", "--json")
    assert code == 0
    result = json.loads(out)
    assert result["stages_per_rank"] == 2 and result["num_actions"] == 2 * 2 * 4 * 2
    assert result["busy"] == [4 * 4, 4 * 4]  # F + (I + W) + recomputed F per micro-batch and rank share


def test_stage_scale_makes_one_stage_slow(capsys):
    code, out, _ = run_cli(capsys, "simulate", "--schedule", "gpipe", "--ranks", "2", "--microbatches", "4",
                           "--stage-scale", "1,3", "--json")
    assert code == 0 and json.loads(out)["makespan"] == 4 * 3 * 3 + 3  # slow stage's work + one fill/drain
    code, _, err = run_cli(capsys, "simulate", "--schedule", "gpipe", "--ranks", "2", "--microbatches", "4",
                           "--stage-scale", "1,2,3")
    assert code == 2 and "stage_scale has 3 entries but the schedule has 2 stages" in err


def test_grid_and_trace(capsys, tmp_path):
    trace = tmp_path / "run.json"
    code, out, _ = run_cli(capsys, "simulate", "--schedule", "zb-v", "--ranks", "2", "--microbatches", "3",
                           "--costs", "F=1,I=1,W=1", "--grid", "--trace", str(trace))
    assert code == 0 and "Rank 0" in out and "Step 00: 0F0" in out and "bubble_fraction" in out
    events = json.loads(trace.read_text())["traceEvents"]
    assert {e["tid"] for e in events if e["ph"] == "X"} == {0, 1}
    assert sum(e["ph"] == "X" for e in events) == 2 * 2 * 3 * 3


def test_simulates_an_imported_pytorch_csv(capsys):
    code, out, _ = run_cli(capsys, "simulate", "--from-csv", "tests/fixtures/pytorch_zbh1_2ranks_3mb.csv",
                           "--costs", "F=1,I=1,W=1", "--json")
    assert code == 0 and json.loads(out)["makespan"] == 3 * 3 + 1


@pytest.mark.parametrize("args, message", [
    (["--schedule", "1f1b", "--ranks", "0", "--microbatches", "4"], "--ranks: expected a whole number ≥ 1, got 0"),
    (["--schedule", "nope", "--ranks", "2", "--microbatches", "4"], "invalid choice: 'nope'"),
    (["--schedule", "interleaved-1f1b", "--ranks", "4", "--microbatches", "6", "--chunks", "99"],
     "chunks (stages per rank) must be between 2 and 64, got 99"),
    (["--schedule", "zb-v", "--ranks", "4", "--microbatches", "6", "--chunks", "1"], "zb-v always has 2 stage(s)"),
    (["--schedule", "1f1b", "--ranks", "2", "--microbatches", "4", "--costs", "F=x"], "'x' is not a number"),
    (["--schedule", "1f1b", "--ranks", "2", "--microbatches", "4", "--costs", "F=1,B=3,I=1,W=1"], "B must equal I + W"),
    (["--schedule", "1f1b", "--ranks", "2", "--microbatches", "4", "--chunks", "3"], "takes no chunks option"),
    (["--ranks", "2"], "missing --schedule, --microbatches"),
    (["--from-csv", "/no/such/file"], "cannot read /no/such/file"),
])
def test_bad_arguments_give_one_line_and_exit_2(capsys, args, message):
    code, out, err = run_cli(capsys, "simulate", *args)
    assert code == 2 and out == ""
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_module_entry_point_runs():
    result = subprocess.run([sys.executable, "-m", "engine", "simulate", "--schedule", "gpipe", "--ranks", "4",
                             "--microbatches", "6", "--costs", "F=1,B=0", "--json"], capture_output=True, text=True)
    assert result.returncode == 0 and json.loads(result.stdout)["bubble_fraction"] == pytest.approx(1 / 3)


def test_run_json_has_the_promised_fields(capsys):
    code, out, err = run_cli(capsys, "run", "--schedule", "zb-h1", "--ranks", "2", "--microbatches", "4",
                             "--model", "gpt", "--layers", "4", "--hidden", "32", "--batch", "8", "--seq-len", "8",
                             "--json")
    assert code == 0, err
    result = json.loads(out)
    for field in ("makespan", "bubble_fraction", "predicted_makespan", "prediction_error", "loss", "reference_loss",
                  "max_grad_error", "peak_memory_bytes", "backend", "device"):
        assert field in result
    assert result["backend"] == "emulated" and result["device"] == "cpu"
    assert result["loss"] == pytest.approx(result["reference_loss"], rel=1e-6)
    assert result["max_grad_error"] < 1e-5
    assert len(result["peak_memory_bytes"]) == 2 and min(result["peak_memory_bytes"]) > 0


def test_run_text_output_says_clocks_are_virtual_and_shows_progress(capsys, tmp_path):
    trace = tmp_path / "run.json"
    code, out, err = run_cli(capsys, "run", "--schedule", "1f1b", "--ranks", "2", "--microbatches", "2",
                             "--layers", "2", "--hidden", "16", "--batch", "4", "--trace", str(trace))
    assert code == 0
    assert "the durations are measured, the device clocks are virtual" in out
    assert "predicted from the measured costs" in out and "100%" in err
    assert sum(e["ph"] == "X" for e in json.loads(trace.read_text())["traceEvents"]) == 2 * 2 * 2


@pytest.mark.parametrize("args, message", [
    (["--microbatches", "3", "--batch", "8"], "batch (8) must split into 3 equal micro-batches: 8 = 2×3 + 2"),
    (["--layers", "3"], "3 layers cannot fill 4 stages"),
    (["--partition", "1,2"], "partition 1,2 has 2 entries for 4 stages"),
    (["--model", "gpt", "--hidden", "30"], "hidden (30) must be a multiple of heads (4)"),
    (["--schedule", "dualpipev", "--chunks", "3"], "dualpipev always has 2 stage(s) per rank"),
    (["--fail-at", "9:0F0"], "there is no rank 9 (ranks 0..3)"),
    (["--fail-at", "1:0F0"], "rank 1 never runs 0F0"),
    (["--timeout", "0"], "--timeout: expected a number > 0"),
    (["--trace", "/nonexistent-folder/t.json"], "cannot write the trace"),
])
def test_run_bad_arguments_exit_2_with_the_arithmetic(capsys, args, message):
    code, out, err = run_cli(capsys, "run", *args)
    assert code == 2 and message in err and err.count("\n") == 1


def test_run_failure_exits_1_naming_rank_and_action(capsys):
    code, _, err = run_cli(capsys, "run", "--ranks", "2", "--microbatches", "2", "--layers", "2", "--hidden", "16",
                           "--batch", "4", "--fail-at", "0:0F1", "--quiet")
    assert code == 1 and "rank 0 failed during 0F1" in err


@pytest.mark.slow
def test_run_distributed_trace_separates_compute_and_waits(tmp_path):
    trace = tmp_path / "dist.json"
    result = subprocess.run([sys.executable, "-m", "engine", "run", "--backend", "distributed", "--ranks", "2",
                             "--microbatches", "4", "--layers", "2", "--hidden", "16", "--batch", "8", "--steps", "1",
                             "--json", "--trace", str(trace)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["backend"] == "distributed" and summary["max_grad_error"] < 1e-5
    events = json.loads(trace.read_text())["traceEvents"]
    assert {e["cat"] for e in events if e["ph"] == "X"} == {"F", "B", "wait"}
    assert {e["tid"] for e in events if e.get("cat") == "wait"} == {0, 1}


@pytest.mark.slow
def test_run_under_torchrun():
    torchrun = Path(sys.executable).with_name("torchrun")
    if not torchrun.exists():
        pytest.skip("torchrun is not next to this Python")
    result = subprocess.run([str(torchrun), "--nproc-per-node", "2", "-m", "engine", "run", "--backend", "distributed",
                             "--ranks", "2", "--microbatches", "4", "--layers", "2", "--hidden", "16", "--batch", "8",
                             "--steps", "1", "--json"], capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 1  # only rank 0 prints
    summary = json.loads(lines[0])
    assert summary["backend"] == "distributed" and summary["max_grad_error"] < 1e-5


@pytest.mark.parametrize("csv, message", [
    ("0F99999999999999999999\n", "indices above 999999 are not supported"),
    ("1F999999,1B999999\n", "the lab reads up to 4096 stages and 16384 micro-batches"),
    ("0F0,0B0,1F0\n1B0\n", "1F0 is on rank 0 but stage 1 lives on rank 1"),
])
def test_bad_csv_gives_a_clear_error(capsys, tmp_path, csv, message):
    path = tmp_path / "bad.csv"
    path.write_text(csv)
    code, _, err = run_cli(capsys, "simulate", "--from-csv", str(path))
    assert code == 2 and message in err and "Traceback" not in err


@pytest.mark.parametrize("args, message", [
    (["--trace", "/nonexistent-folder/x.json"], "cannot write the trace to /nonexistent-folder/x.json"),
    (["--costs", "F=1,F=2"], "cost F is given twice"),
])
def test_simulate_checks_before_working(capsys, args, message):
    code, _, err = run_cli(capsys, "simulate", "--schedule", "1f1b", "--ranks", "2", "--microbatches", "2", *args)
    assert code == 2 and message in err


def test_from_csv_with_contradicting_sizes(capsys):
    code, _, err = run_cli(capsys, "simulate", "--from-csv", "tests/fixtures/pytorch_1f1b_2ranks_3mb.csv",
                           "--ranks", "4")
    assert code == 2 and "--ranks 4 does not match" in err and "which has 2" in err

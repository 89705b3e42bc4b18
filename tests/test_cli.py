"""The CLI: numbers in --json, the grid, the trace, and one-line errors with exit 2."""

import json
import subprocess
import sys

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
    (["--schedule", "interleaved-1f1b", "--ranks", "4", "--microbatches", "6"], "multiple of ranks (4)"),
    (["--schedule", "zb-v", "--ranks", "4", "--microbatches", "6"], "2×4−1 = 7"),
    (["--schedule", "1f1b", "--ranks", "2", "--microbatches", "4", "--costs", "F=x"], "'x' is not a number"),
    (["--schedule", "1f1b", "--ranks", "2", "--microbatches", "4", "--costs", "F=1,B=3,I=1,W=1"], "B must equal I + W"),
    (["--schedule", "1f1b", "--ranks", "2", "--microbatches", "4", "--chunks", "3"], "no chunks option"),
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

"""Every command's --json is strict JSON (no NaN, no Infinity), at short time limits and degenerate
sizes; a value that is not finite is written as null and named in ``not_finite``."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import main
from engine.schedules import FAMILIES
from engine.terminal import NOT_FINITE_KEY, json_text

ROOT = Path(__file__).resolve().parents[3]
TRACES = ROOT / "examples" / "traces" / "schedule1f1b-2ranks"


def strict(text: str) -> dict:
    """The object, parsed by a parser that refuses NaN and Infinity (Python's accepts them by default)."""

    def refuse(constant: str):
        raise AssertionError(f"{constant} in --json output: {text[:300]}")

    return json.loads(text, parse_constant=refuse)


def json_of(capsys, *args) -> dict:
    code = main([*args, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert len(out.strip().splitlines()) == 1
    return strict(out)


def test_a_value_that_is_not_finite_becomes_null_and_is_named():
    text = json_text({"bound": -math.inf, "gaps": [1.0, math.nan], "bounds": {"cp-sat": math.inf, "sum": 2.0}})
    assert strict(text) == {
        "bound": None,
        "gaps": [1.0, None],
        "bounds": {"cp-sat": None, "sum": 2.0},
        NOT_FINITE_KEY: {"bound": "-inf", "gaps[1]": "nan", "bounds.cp-sat": "inf"},
    }
    assert NOT_FINITE_KEY not in strict(json_text({"makespan": 22.000000000000007}))
    assert strict(json_text({"makespan": 22.000000000000007})) == {"makespan": 22.0}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_simulate_json_is_strict_at_one_rank_and_one_microbatch(capsys, family):
    p, m = FAMILIES[family].accepted_sizes(1, 1)  # DualPipe's fewest: 2 ranks, 4 micro-batches
    result = json_of(capsys, "simulate", "--schedule", family, "--ranks", str(p), "--microbatches", str(m))
    assert result["makespan"] > 0 and NOT_FINITE_KEY not in result


@pytest.mark.parametrize(
    "args",
    [
        ["--ranks", "1", "--microbatches", "1"],
        ["--ranks", "2", "--microbatches", "1", "--placement", "v"],
        ["--ranks", "4", "--microbatches", "8", "--objective", "period", "--method", "exact"],
    ],
)
def test_search_json_is_strict_at_degenerate_sizes_and_short_limits(capsys, args):
    result = json_of(capsys, "search", *args, "--memory", "8", "--time-limit", "0.5")
    assert result["makespan"] > 0
    assert all(isinstance(value, float | int) for value in result["lower_bounds"].values())


@pytest.mark.slow
def test_the_issues_search_prints_json_with_exit_0():
    """The issue's command: CP-SAT stopped at 2 s before proving a bound printed "Out of range float values are
    not JSON compliant" and exited 2."""
    command = [
        sys.executable, "-m", "engine", "search", "--ranks", "8", "--microbatches", "32",
        "--costs", "F=29.802,I=29.428,W=19.53", "--comm", "0.577", "--memory", "8", "--objective", "period",
        "--time-limit", "2", "--json",
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    result = strict(done.stdout)
    assert result["period"] >= result["lower_bound"] > 0


def test_plan_json_is_strict_at_one_gpu(capsys):
    result = json_of(capsys, "plan", "--model", "llama3-8b", "--gpu", "h100", "--tp", "1", "--pp", "1", "--dp", "1",
                     "--global-batch", "1", "--microbatch-size", "1", "--seq", "128")  # fmt: skip
    assert NOT_FINITE_KEY not in result


def test_trace_json_is_strict(capsys):
    files = sorted(str(path) for path in TRACES.glob("rank*.json.gz"))
    result = json_of(capsys, "trace", *files)
    assert NOT_FINITE_KEY not in result


@pytest.mark.slow
def test_run_json_is_strict_at_one_rank_and_one_microbatch(capsys):
    result = json_of(capsys, "run", "--schedule", "1f1b", "--ranks", "1", "--microbatches", "1", "--layers", "1",
                     "--hidden", "8", "--batch", "2", "--repeats", "1", "--warmup-steps", "0")  # fmt: skip
    assert NOT_FINITE_KEY not in result

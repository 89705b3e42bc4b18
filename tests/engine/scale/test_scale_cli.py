"""``python -m engine plan``: the Plan page's numbers on the command line, its files, its one-line refusals, and
the planner checked against a measured run."""

import json
import subprocess
import sys

import pytest

from engine import read_csv
from engine.cli import main
from engine.scale import plan, plan_preset
from engine.scale.request import PlanRequest


@pytest.fixture(scope="module")
def llama_as_trained():
    return plan_preset("llama3-405b-as-trained")


# -- the command line --------------------------------------------------------------------------------------------------
DONE_WHEN = (
    "plan --model llama3-405b --gpu h100 --tp 8 --pp 16 --dp 64 --seq 8192 --global-batch 2048 --microbatch-size 1 "
    "--schedule interleaved-1f1b --chunks 8 --split llama3 --recompute none --json"
).split()


def run_cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_done_when_command_prints_the_plans_numbers(capsys, llama_as_trained):
    code, out, err = run_cli(capsys, *DONE_WHEN)
    assert code == 0 and err == ""
    result = json.loads(out)
    expected = llama_as_trained
    assert result["layers_per_stage"] == list(expected.layers_per_stage)
    assert result["parameters"] == expected.parameters == 405_853_388_800
    assert result["model_flops_per_step"] == pytest.approx(expected.model_flops_per_step)
    for key in ("step_seconds", "tokens_per_second", "mfu", "bubble_fraction"):
        assert result[key] == pytest.approx(getattr(expected, key), rel=1e-11)
    memory = result["memory"][0]
    assert set(memory) >= {"weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes", "total_bytes"}
    assert memory["total_bytes"] == pytest.approx(expected.memory[0].total, rel=1e-11)
    assert result["memory_message"] == expected.memory_message and "torchtitan_toml" in result


def test_csv_and_torchtitan_files(capsys, tmp_path):
    csv, toml = tmp_path / "schedule.csv", tmp_path / "job.toml"
    code, out, _ = run_cli(capsys, "plan", "--pp", "4", "--dp", "8", "--global-batch", "64", "--schedule", "zb-h1",
                           "--split", "even", "--csv", str(csv), "--torchtitan", str(toml), "--compare")  # fmt: skip
    assert code == 0 and "family" in out and "zb-h1" in out
    schedule = read_csv(csv.read_text()).schedule
    assert schedule.num_ranks == 4 and schedule.num_microbatches == 8
    assert f'pipeline_parallel_schedule_csv = "{csv}"' in toml.read_text()


def custom_gpu(**values: str) -> list[str]:
    """The flags of a custom GPU, with ``values`` in place of the defaults."""
    flags = {"peak_tflops": "100", "memory_gb": "80", "nvlink_gb_s": "900", "internode_gb_s": "50", **values}
    return [
        "--gpu",
        "custom",
        *(part for key, value in flags.items() for part in (f"--{key.replace('_', '-')}", value)),
    ]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--gpus", "1000"], "= 8,192 GPUs, not the 1,000 given"),
        (["--global-batch", "100"], "global batch 100 is not divisible by DP × micro-batch size = 64 × 1 = 64"),
        (["--pp", "64", "--dp", "16", "--chunks", "4", "--split", "even"], "126 blocks cannot fill 256 stages"),
        (["--tp", "3", "--dp", "1", "--global-batch", "32"], "TP (3) must divide the attention heads (128)"),
        (
            ["--model", "custom", "--layers", "1000000000", "--hidden", "1024", "--heads", "8", "--vocab", "100"],
            "argument --layers: expected a whole number from 1 to 10000, got 1000000000",
        ),  # fmt: skip
        (
            custom_gpu(nvlink_gb_s="-1"),
            "argument --nvlink-gb-s: expected a number from 1 to 1e+06, got -1",
        ),
        (custom_gpu(peak_tflops="1e-300"), "argument --peak-tflops: expected a number from 1 to 1e+06, got 1e-300"),
        (custom_gpu(gemm_share="1e-300"), "argument --gemm-share: expected a number from 0.05 to 1"),
        (["--measured", "F=1:2,I=1:2,W=1:2"], "F has 2 values per stage, but the plan has 128 stages"),
        (["--measured", "F=1e308,I=1,W=1"], "F is 1e+308 ms; a measured action takes from 0.001 to 1e+06 ms"),
        (["--measured", "F=1:1e-9,I=1:1,W=1:1"], "F of stage 1 is 1e-09 ms; a measured action takes from 0.001"),
        (["--layers", "4"], "--layers describe a custom model: add --model custom"),
        (["--model", "custom", "--layers", "4"], "--model custom needs --hidden, --heads, --vocab"),
        (["--split", "3,x"], "(expected auto, even, llama3 or layers per stage like 3,4,4,3)"),
        (["--tp", "x"], "argument --tp: expected a whole number from 1 to 65536, got x"),
        (["--layout-preset", "nope"], "invalid choice: 'nope'"),
    ],
)
def test_bad_plans_give_one_line_and_exit_2(capsys, args, message):
    code, out, err = run_cli(capsys, "plan", *args)
    assert code == 2 and out == ""
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.slow
def test_plan_never_imports_torch():
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "engine", *DONE_WHEN], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    imported = [line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if line.startswith("import")]
    assert "engine.scale.plan" in imported
    assert not [name for name in imported if name == "torch" or name.startswith("torch.")]


def test_a_measured_run_replaces_the_roofline_and_sits_beside_it():
    """The Real run and Your run pages' link: the run's pipeline simulated with what it measured (ms per stage)."""
    table = [{"F": 1.0, "B": 2.0, "I": 0.0, "W": 0.0}, {"F": 1.5, "B": 2.0, "I": 1.2, "W": 0.8}]
    request = PlanRequest.from_measured_run("1f1b", 2, 4, 1, table)
    assert request.measured == "F=1:1.5,I=1:1.2,W=1:0.8"  # a full backward split in half
    result = plan(*request.resolve())
    assert [dict(row) for row in result.measured] == [
        pytest.approx({"F": 1e-3, "I": 1e-3, "W": 1e-3, "B": 2e-3, "F&B": 3e-3}),
        pytest.approx({"F": 1.5e-3, "I": 1.2e-3, "W": 0.8e-3, "B": 2e-3, "F&B": 3.5e-3}),
    ]
    frame = result.timeline.frame
    forwards = frame[frame["kind"] == "F"].groupby("stage").apply(lambda rows: (rows["end"] - rows["start"]).mean())
    assert list(forwards) == pytest.approx([1e-3, 1.5e-3])
    assert result.stage_costs[0].forward != pytest.approx(1e-3)  # the roofline's own figure stays beside it
    assert result.summary()["measured_stage_seconds"][1]["I"] == pytest.approx(1.2e-3)

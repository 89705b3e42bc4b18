"""The planner against the papers, side by side, and how long one plan takes.

Default: every published dense run the lab carries (Narayanan et al. 2021 Table 1 on A100s, the Llama 3 paper's
Table 4 on H100s) planned with its GPU's one calibrated GEMM share: the planner's step time, TFLOP/s per GPU (counted as
the paper counts), MFU, and the fullest rank's memory split into weights, gradients, optimizer and activations,
next to the published TFLOP/s with the percent difference; then the published mixture-of-experts runs (DeepSeek-V3
as trained, NVIDIA's Megatron-Bridge table) on tokens/s per GPU, with the all-to-all; then a few layouts the papers
do not give; then each
model-state byte count next to Megatron-LM's own table.
--speed: the time of one plan (goal: under 1 s for 16 ranks × 256 micro-batches).
Run: .venv/bin/python benchmarks/scale.py [--speed] [--repeat N]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import timeit

from engine.scale import LAYOUT_PRESETS, Layout, plan
from engine.scale.calibration import compare_with_paper
from engine.scale.memory import ModelStateBytes
from engine.schedules import FAMILIES

GOAL_SECONDS = 1.0
GB = 1e9


def memory_columns(result) -> str:
    fullest = max(result.memory, key=lambda rank: rank.total)
    parts = (fullest.weights, fullest.gradients, fullest.optimizer, fullest.activations, fullest.total)
    return "".join(f"{value / GB:>7.1f}" for value in parts) + f" {'fits' if result.fits else 'OVER'}"


HEADER = f"{'run':<26}{'step s':>8}{'TF/GPU':>8}{'paper':>7}{'diff':>8}{'MFU':>7}   {'weights':>7}{'grads':>7}" \
         f"{'optim':>7}{'activ':>7}{'total':>7} GB"  # fmt: skip


def papers() -> None:
    print("Published runs, each GPU's GEMM share from one run (*): planned next to published TFLOP/s per GPU")
    print(HEADER)
    met = 0
    rows = compare_with_paper(moe=False)
    for row in rows:
        result = row.result
        mark = "*" if row.calibrates else (" " if abs(row.difference) <= 0.10 else "!")
        met += not row.calibrates and abs(row.difference) <= 0.10
        print(
            f"{row.preset.name:<25}{mark}{result.step_seconds:>8.2f}{row.planned:>8.1f}{row.reported:>7g}"
            f"{row.difference:>+8.1%}{result.mfu:>7.1%}   {memory_columns(result)}"
        )
    others = sum(not row.calibrates for row in rows)
    print(f"within 10 %: {met} of {others} predicted runs (! marks a miss); * calibrates its GPU")
    # two means: issue 37's goal (within ±3 %) was set against its +6.6 %, the mean over all ten Table 1 rows with
    # the calibrating 1T row at its 0 %; the second leaves the calibrating runs out, the stricter reading
    every = [row.difference for row in rows]
    predicted = [row.difference for row in rows if not row.calibrates]
    print(
        f"mean error {sum(every) / len(every):+.1%} over all {len(every)} published runs, the calibrating ones at "
        f"their 0 % (goal: within ±3 %); {sum(predicted) / len(predicted):+.1%} over the "
        f"{len(predicted)} predicted runs alone"
    )


MOE_HEADER = f"{'run':<26}{'step s':>8}{'tok/GPU':>9}{'paper':>7}{'diff':>8}{'MFU':>7}{'a2a ms':>8}{'hidden':>8}   " \
             f"{'weights':>7}{'grads':>7}{'optim':>7}{'activ':>7}{'total':>7} GB"  # fmt: skip


def moe_runs() -> None:
    """The published mixture-of-experts runs, compared on tokens/s per GPU (what DeepSeek-V3's report gives; NVIDIA's
    table gives both): none calibrates anything; MFU on the active experts' FLOPs against the BF16 peak; the
    all-to-all of one layer and micro-batch each way, and the share of all of it the schedule hides."""
    print("\nPublished mixture-of-experts runs (tokens/s per GPU; nothing calibrated on them); band for MoE plans")
    print(MOE_HEADER)
    rows = compare_with_paper(moe=True)
    for row in rows:
        result, reported = row.result, row.preset.reported_tokens_per_gpu
        exchange, simulated = result.all_to_all, result.timeline.expert_comm
        a2a = f"{exchange.seconds * 1e3:>8.2f}" if exchange else f"{'-':>8}"
        hidden = f"{simulated['hidden_fraction']:>8.0%}" if simulated else f"{'-':>8}"
        mark = " " if abs(row.difference) <= 0.10 else "!"
        print(
            f"{row.preset.name:<25}{mark}{result.step_seconds:>8.2f}{result.tokens_per_second / result.num_gpus:>9,.0f}"
            f"{reported:>7,.0f}{row.difference:>+8.1%}{result.mfu:>7.1%}{a2a}{hidden}   {memory_columns(result)}"
        )
    errors = [row.difference for row in rows]
    print(f"MoE band: {min(errors):+.1%} … {max(errors):+.1%} over {len(rows)} runs (! marks a miss of 10 %)")


def other_layouts() -> None:
    print("\nLayouts the papers do not give (Llama 3 405B on H100s, 8K, the as-trained run changed one way)")
    print(HEADER)
    base = LAYOUT_PRESETS["llama3-405b-as-trained"].layout
    changes = {
        "v = 2": dict(chunks=2, split="llama3"),
        "1F1B": dict(family="1f1b", chunks=None),
        "zero-bubble, v = 8": dict(family="interleaved-zb"),
        "selective recompute": dict(recompute="selective"),
        "TP overlap": dict(tp_overlap=True),
        "no DP overlap": dict(dp_overlap=False),
    }
    for name, change in changes.items():
        result = plan("llama3-405b", "h100", dataclasses.replace(base, **change))
        print(
            f"{name:<26}{result.step_seconds:>8.2f}{result.tflops_per_gpu:>8.1f}{'':>7}{'':>8}{result.mfu:>7.1%}   "
            f"{memory_columns(result)}"
        )


def megatron_bytes() -> None:
    print("\nModel states per parameter (Megatron-LM docs/api-guide/dist_optimizer.md, bf16 params, fp32 grads)")
    for zero, published in ((0, "18"), (1, "6 + 12/d")):
        layout = Layout(data_parallel=64, zero=zero)
        planned = ModelStateBytes.of(1.0, layout).total
        print(
            f"  ZeRO-{zero}: planner {planned:.4f} B, Megatron {published} = {18 if zero == 0 else 6 + 12 / 64:.4f} B"
        )


def median_seconds(function, repeat: int) -> float:
    return statistics.median(timeit.repeat(function, number=1, repeat=repeat))


def speed(repeat: int) -> None:
    layout = Layout(data_parallel=8, global_batch=2_048)
    assert layout.pipeline_parallel == 16 and layout.num_microbatches == 256
    print(f"Llama 3 405B on {layout.gpus_used:,} H100s: TP 8 × PP 16 × DP 8, 256 micro-batches (median of {repeat})")
    print(f"{'family':<18}{'v':>3}{'actions':>9}{'plan + summary':>16}   step time   bubble   fits")
    for name in FAMILIES:
        family_layout = Layout(data_parallel=8, global_batch=2_048, family=name)

        def one_plan(family_layout=family_layout):
            result = plan("llama3-405b", "h100", family_layout)
            result.summary()
            return result

        seconds, result = median_seconds(one_plan, repeat), one_plan()
        verdict = "" if seconds < GOAL_SECONDS else f"  over the {GOAL_SECONDS:g} s goal"
        print(
            f"{name:<18}{result.layout.num_chunks:>3}{result.schedule.num_actions:>9,}{seconds:>14.3f} s"
            f"{result.step_seconds:>10.2f} s{result.bubble_fraction:>8.1%}   {'yes' if result.fits else 'no'}{verdict}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--speed", action="store_true", help="time one plan per family instead")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if args.speed:
        speed(args.repeat)
        return
    papers()
    moe_runs()
    other_layouts()
    megatron_bytes()


if __name__ == "__main__":
    main()

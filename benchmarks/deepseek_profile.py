"""The planner's DeepSeek-V3 layer against DeepSeek's own profile of it, component by component.

DeepSeek published a PyTorch-profiler trace of one H800 running one overlapped DualPipe chunk pair of DeepSeek-V3
(a forward and a backward chunk of 4 MoE layers each; EP 64, TP 1, 4K sequences, a perfectly balanced routing;
deepseek-ai/profile-data ``train.json``, which carries no licence, so the lab does not ship it: fetch it). The
engine reads it (``engine.traces.chunks``): each component's kernel time, as its code labels them — attn(F),
mlp(F), attn(B), mlp(B), attn(W), mlp(W), and the all-to-all's dispatch and combine.

This script plans the same 4 layers (``--layout-preset deepseek-v3``'s layout, on the 112 SMs an overlapped pair
leaves to compute) and prints, side by side, the planner's seconds for each component and pass (attention: norm 1
to residual 1; MLP: norm 2 to residual 2, the router and both expert groups) and the profile's compute-kernel time
for it, with their ratio; then the all-to-all. It shows where the planner's roofline is short of DeepSeek's kernels;
nothing is fitted to it.

Run: .venv/bin/python benchmarks/deepseek_profile.py path/to/train.json
"""

from __future__ import annotations

import argparse

from engine.scale import GPU_PRESETS, LAYOUT_PRESETS, MODEL_PRESETS
from engine.scale.experts import all_to_all, compute_gpu
from engine.scale.layers import layer_operations
from engine.scale.roofline import kernels_seconds
from engine.traces import OverlappedChunks, read_traces

LAYERS = 4
"""MoE layers in each chunk of the profile (its README)."""
PASSES = {"F": "forward", "B": "input_gradient", "W": "weight_gradient"}


def planned_ms() -> tuple[dict[str, float], float]:
    """The planner's ms for each ``component(pass)`` of 4 MoE layers, and its all-to-all of one pass (4 layers)."""
    preset = LAYOUT_PRESETS["deepseek-v3"]
    model, gpu, layout = MODEL_PRESETS[preset.model], GPU_PRESETS[preset.gpu], preset.layout
    exchange = all_to_all(model, gpu, layout)
    assert exchange is not None
    computing = compute_gpu(gpu, layout, exchange)
    planned: dict[str, float] = {}
    component = "attn"
    for op in layer_operations(model, layout, moe=True):
        if op.name == "norm 2":  # the MLP's half of the layer begins
            component = "mlp"
        for letter, which in PASSES.items():
            key = f"{component}({letter})"
            planned[key] = planned.get(key, 0.0) + LAYERS * 1e3 * kernels_seconds(getattr(op, which), computing)
    return planned, LAYERS * 1e3 * exchange.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", help="deepseek-ai/profile-data's train.json")
    reading = read_traces([parser.parse_args().profile])
    if not isinstance(reading, OverlappedChunks):
        raise SystemExit("this is not an overlapped chunk pair's profile: give deepseek-ai/profile-data's train.json")
    measured = {row.label: row for row in reading.components}
    planned, exchange_ms = planned_ms()
    print(f"{'component':12s} {'profile ms':>11s} {'planner ms':>11s} {'planner/profile':>16s}")
    totals = [0.0, 0.0]
    for label, ms in planned.items():
        profile = measured[label].compute_kernel_ms
        totals[0] += profile
        totals[1] += ms
        print(f"{label:12s} {profile:11.2f} {ms:11.2f} {ms / profile:16.2f}")
    print(f"{'compute':12s} {totals[0]:11.2f} {totals[1]:11.2f} {totals[1] / totals[0]:16.2f}")
    for letter in "FB":
        names = (f"dispatch({letter})", f"combine({letter})")
        profile = sum(measured[name].communication_kernel_ms for name in names)
        print(f"{'all-to-all ' + letter:12s} {profile:11.2f} {exchange_ms:11.2f} {exchange_ms / profile:16.2f}")
    print(f"hidden under compute: the profile {reading.hidden_fraction:.1%} of its all-to-all in this pair")


if __name__ == "__main__":
    main()

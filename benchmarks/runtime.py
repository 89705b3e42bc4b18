"""Runtime figures, measured side by side in one run.

1. Step time of our distributed backend against PyTorch's ``torch.distributed.pipelining``
   (ScheduleGPipe, Schedule1F1B, ScheduleInterleaved1F1B) on the same MLP, ranks and micro-batches, in the
   same processes, alternating, median of several steps each; printed as a ratio (ours / PyTorch).
2. The emulated backend's bookkeeping overhead — CPU time outside the timed actions and copies, as a
   fraction of the step — and its prediction error, for the default MLP and GPT sizes.
3. The emulated backend on a quiet machine and with busy loops alongside: makespan, its spread over the
   measured steps, and the prediction error, side by side (``benchmarks/crowded_host.py`` does this for
   1F1B and ZB-H1 at two loads, with both estimators).

Run: .venv/bin/python benchmarks/runtime.py [--ranks 2] [--microbatches 8] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

from engine.model_config import ModelConfig
from engine.models import ToyModel, make_batch, split_model
from engine.runtime import RunConfig, run
from engine.runtime.distributed import run_rank
from engine.schedules import FAMILIES as SCHEDULE_FAMILIES

FAMILIES = {name: SCHEDULE_FAMILIES[name].pytorch_class for name in ("gpipe", "1f1b", "interleaved-1f1b")}


class TorchStage(nn.Module):
    """Our stage as PyTorch's pipelining wants it: the last stage returns the prediction; loss_fn scores it."""

    def __init__(self, stage):
        super().__init__()
        self.stage = stage

    def forward(self, x):
        if self.stage.embed is not None:
            x = self.stage.embed(x)
        for block in self.stage.blocks:
            x = block(x)
        if self.stage.head is not None:
            x = self.stage.head.linear(x)
        return x


class TorchPipeline:
    """PyTorch's schedule for the same stages, built once per family and stepped repeatedly."""

    def __init__(self, rank: int, config: RunConfig, schedule_name: str):
        from torch.distributed import pipelining

        p, v = config.num_ranks, (2 if schedule_name == "interleaved-1f1b" else 1)
        num_stages = p * v
        self.rank, self.p = rank, p
        self.stages = split_model(ToyModel(config.model), list(config.plan.stage_layers))
        mine = [
            pipelining.PipelineStage(TorchStage(self.stages[s]), s, num_stages, torch.device("cpu"))
            for s in range(rank, num_stages, p)
        ]
        schedule_class = getattr(pipelining, FAMILIES[schedule_name])
        self.schedule = schedule_class(
            mine if v > 1 else mine[0],
            n_microbatches=config.num_microbatches,
            loss_fn=lambda output, target: F.mse_loss(output, target),
        )
        self.x, self.target = make_batch(config.model)
        self.last_rank = (num_stages - 1) % p
        self.step_ms()  # warm-up step (also infers the shapes)

    def step_ms(self) -> float:
        """Barrier exit to the last rank's return from step() (its sends are complete by then)."""
        for stage in self.stages:
            stage.zero_grad(set_to_none=True)
        dist.barrier()
        began = time.perf_counter()
        args = (self.x,) if self.rank == 0 else ()
        kwargs = {"target": self.target, "losses": []} if self.rank == self.last_rank else {}
        self.schedule.step(*args, **kwargs)
        ended = time.perf_counter()
        spans = [None] * self.p
        dist.all_gather_object(spans, (began, ended))
        return (max(e for _, e in spans) - min(b for b, _ in spans)) * 1e3


def ours_step_times(rank: int, config: RunConfig, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        result = run_rank(config, rank, torch.device("cpu"))  # a warm-up step, then one measured
        # barrier exit to the last rank's last completed send: the same span as PyTorch's step below
        wall = [result.wall_ms_per_step if result is not None else 0.0]
        dist.broadcast_object_list(wall, src=0)
        times.append(wall[0])
    return times


def worker(rank: int, args, store: str, out: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=store, rank=rank, world_size=args.ranks, timeout=timedelta(seconds=120))
    rows = []
    for name in FAMILIES:
        config = RunConfig(
            family=name,
            num_ranks=args.ranks,
            num_microbatches=args.microbatches,
            num_chunks=2 if name == "interleaved-1f1b" else None,
            backend="distributed",
            repeats=1,
            model=ModelConfig(kind="mlp", layers=args.layers, hidden=args.hidden, batch=args.batch),
        )
        theirs_pipeline = TorchPipeline(rank, config, name)
        ours, theirs = [], []
        for _ in range(args.repeats):  # alternate, so drifts in machine load hit both alike
            ours += ours_step_times(rank, config, 1)
            theirs.append(theirs_pipeline.step_ms())
        rows.append((name, statistics.median(ours), statistics.median(theirs)))
    if rank == 0:
        with open(out, "w") as handle:
            for name, a, b in rows:
                handle.write(f"{name}\t{a}\t{b}\n")
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--microbatches", type=int, default=8)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--loops", type=int, default=2, help="busy loops alongside for section 3")
    parser.add_argument("--only-load", action="store_true", help="run section 3 only")
    args = parser.parse_args()

    if args.only_load:
        print(f"3. Emulated backend, quiet and loaded ({args.loops} busy loops), median of {args.repeats}")
        quiet_and_loaded(args.repeats, args.loops)
        return
    print(
        f"1. Step time, distributed (gloo, CPU), MLP {args.layers}×{args.hidden}, batch {args.batch}, "
        f"{args.ranks} ranks, {args.microbatches} micro-batches, median of {args.repeats} (cores: {os.cpu_count()})"
    )
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "rows.tsv")
        mp.spawn(worker, args=(args, f"file://{folder}/store", out), nprocs=args.ranks, join=True)
        print(f"   {'schedule':<18} {'ours ms':>9} {'PyTorch ms':>11} {'ours/PyTorch':>13}")
        with open(out) as handle:
            for line in handle:
                name, ours, theirs = line.split("\t")
                ours, theirs = float(ours), float(theirs)
                print(f"   {name:<18} {ours:>9.2f} {theirs:>11.2f} {ours / theirs:>13.2f}")

    print("2. Emulated backend: bookkeeping overhead and prediction error (1F1B, 4 ranks, 8 micro-batches)")
    print(
        f"   {'model':<28} {'step wall ms':>12} {'overhead (CPU)':>14} {'measured ms':>12} {'predicted ms':>13} "
        f"{'error':>7}"
    )
    for label, model in (
        ("mlp 8×512, batch 128", ModelConfig(kind="mlp", layers=8, hidden=512, batch=128)),
        ("gpt 8×128, batch 32, T 32", ModelConfig(kind="gpt", layers=8, hidden=128, batch=32)),
    ):
        errors, overheads, walls, measured, predicted = [], [], [], [], []
        for _ in range(args.repeats):
            summary = run(RunConfig(family="1f1b", num_ranks=4, num_microbatches=8, model=model)).summary()
            errors.append(summary["prediction_error"])
            overheads.append(summary["overhead_fraction"])
            walls.append(summary["wall_ms_per_step"])
            measured.append(summary["makespan"])
            predicted.append(summary["predicted_makespan"])
        print(
            f"   {label:<28} {statistics.median(walls):>12.2f} {statistics.median(overheads):>14.1%} "
            f"{statistics.median(measured):>12.2f} {statistics.median(predicted):>13.2f} "
            f"{statistics.median(errors):>+7.1%}"
        )

    print(
        "3. Emulated backend on a quiet and on a loaded machine (1F1B, 4 ranks, 8 micro-batches, mlp 8×512; "
        f"{args.loops} busy loops; median of {args.repeats} runs each, alternating)"
    )
    quiet_and_loaded(args.repeats, args.loops)


def busy_loops(count: int) -> list:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def quiet_and_loaded(repeats: int, loops: int) -> None:
    config = RunConfig(
        family="1f1b",
        num_ranks=4,
        num_microbatches=8,
        repeats=3,
        model=ModelConfig(kind="mlp", layers=8, hidden=512, batch=128),
    )
    rows = {"quiet": [], "loaded": []}
    for _ in range(repeats):
        for label in rows:
            load = busy_loops(loops) if label == "loaded" else []
            try:
                time.sleep(0.3 if load else 0.0)
                rows[label].append(run(config).summary())
            finally:
                for process in load:
                    process.kill()
                    process.wait()
    print(f"   {'':<8} {'makespan ms':>12} {'spread ms':>17} {'prediction error':>17} {'step wall ms':>13}")
    for label, summaries in rows.items():
        makespan = statistics.median(s["makespan"] for s in summaries)
        low = statistics.median(s["makespan_spread"][0] for s in summaries)
        high = statistics.median(s["makespan_spread"][1] for s in summaries)
        error = statistics.median(abs(s["prediction_error"]) for s in summaries)
        wall = statistics.median(s["wall_ms_per_step"] for s in summaries)
        print(f"   {label:<8} {makespan:>12.2f} {low:>8.2f}–{high:<8.2f} {error:>16.1%} {wall:>13.2f}")
    ratio = statistics.median(s["makespan"] for s in rows["loaded"]) / statistics.median(
        s["makespan"] for s in rows["quiet"]
    )
    print(
        f"   loaded / quiet makespan: {ratio:.2f}× (target ≤ 1.25×); step wall time is what the wall clock "
        f"would have shown"
    )


if __name__ == "__main__":
    main()

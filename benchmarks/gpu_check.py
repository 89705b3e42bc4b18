"""The CUDA paths, checked on a GPU machine in one short run.

1. Every family on the emulated backend on CUDA (CUDA-event timing, ``torch.cuda.memory_allocated``):
   gradients against the unsplit model, measured vs predicted makespan, the bookkeeping overhead.
2. With 2 or more GPUs: the distributed backend with NCCL, one GPU per rank, for the families whose message
   order NCCL can match (the others are refused by the engine, and listed).
3. ``--device auto`` picks CUDA when there is a GPU per rank.

Run: .venv/bin/python benchmarks/gpu_check.py [--device cuda|cpu] [--ranks 2]
``--device cpu`` runs the same checks on the CPU (a smoke test where there is no GPU). Exit status 1 when a
check fails, 2 when asked for CUDA and none is visible.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

# a bare GPU machine gets the working tree, not an installed lab: import it from here
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from engine import FAMILIES  # noqa: E402
from engine.model_config import ModelConfig  # noqa: E402
from engine.runtime import GRADIENT_TOLERANCE, RunConfig, run  # noqa: E402


def check(label: str, config: RunConfig) -> bool:
    started = time.perf_counter()
    try:
        summary = run(config).summary()
    except ValueError as error:  # refused: e.g. NCCL cannot match this schedule's message order
        print(f"   {label:<22} refused: {str(error).splitlines()[0]}")
        return True
    ok = summary["max_grad_error"] < GRADIENT_TOLERANCE
    overhead = summary["overhead_fraction"]
    print(
        f"   {label:<22} {summary['device']:<14} {summary['clock']:<12} grad {summary['max_grad_error']:.1e} "
        f"{'ok ' if ok else 'BAD'} measured {summary['makespan']:8.3f} ms "
        f"predicted {summary['predicted_makespan']:8.3f}"
        f" ({summary['prediction_error']:+.1%}) overhead {'-' if overhead is None else f'{overhead:.1%}'} "
        f"peak {max(summary['peak_memory_bytes']):,} B, {time.perf_counter() - started:.1f} s"
    )
    # the measured idle time by cause (engine.attribution), summed over the ranks; on a GPU the "overhead"
    # part is mostly kernel launches and host bookkeeping the cost model does not see
    causes = summary["idle_by_cause"]["total"]
    idle = sum(causes.values())
    shares = ", ".join(f"{cause} {round(value, 3) + 0.0:.3f} ms" for cause, value in causes.items())
    launch = f"{causes['overhead'] / idle:.0%} of the idle time" if idle > 0 else "no idle time"
    print(f"   {'':<22} idle by cause: {shares}; overhead is {launch}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--ranks", type=int, default=2)
    args = parser.parse_args()
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    print(
        f"torch {torch.__version__}, CUDA available: {torch.cuda.is_available()}, GPUs: {gpus}"
        + (f" ({torch.cuda.get_device_name(0)})" if gpus else "")
    )
    if args.device == "cuda" and not gpus:
        print("no CUDA device visible: nothing to check (use --device cpu for the CPU smoke test)")
        return 2
    model = ModelConfig(kind="gpt", layers=8, hidden=256, batch=32, seq_len=64)
    ok = True
    print(f"1. emulated backend on {args.device}, every family, {args.ranks} ranks, 8 micro-batches, {model.kind}")
    for name, family in FAMILIES.items():
        chunks = 2 if family.takes_chunks else None
        ok &= check(
            name,
            RunConfig(
                family=name,
                num_ranks=args.ranks,
                num_microbatches=8,
                num_chunks=chunks,
                model=model,
                device=args.device,
                repeats=3,
            ),
        )
    if args.device == "cuda" and gpus >= 2:
        ranks = min(gpus, 8)
        print(f"2. distributed backend, NCCL, {ranks} ranks on {ranks} GPUs")
        for name, family in FAMILIES.items():
            chunks = 2 if family.takes_chunks else None
            ok &= check(
                name,
                RunConfig(
                    family=name,
                    num_ranks=ranks,
                    num_microbatches=2 * ranks,
                    num_chunks=chunks,
                    model=model,
                    device="cuda",
                    backend="distributed",
                ),
            )
    else:
        print("2. distributed with NCCL: skipped (needs 2 or more GPUs)")
    print("3. --device auto")
    ok &= check(
        "1f1b auto",
        RunConfig(family="1f1b", num_ranks=min(max(gpus, 1), 4), num_microbatches=8, model=model, device="auto"),
    )
    print("all checks passed" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

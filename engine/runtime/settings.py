"""The settings ``python -m engine run`` takes, each declared once (``engine.options``): ``RunSettings``, from which
the command's flags derive (``engine.runtime.cli``), with the sizes, ranks and schedule family it shares with
``simulate`` (``engine.settings``). Importing this imports no PyTorch."""

from __future__ import annotations

from dataclasses import dataclass

from ..model_config import MAX_SEED, MODEL_DEFAULTS, MODEL_KINDS, MODEL_TITLES
from ..options import Declared, Option, amount, choose, declared, verbatim, whole
from ..settings import CHUNKS, MICROBATCHES, RANKS, RECOMPUTE, SCHEDULE
from .clocks import CLOCK_CHOICES
from .config import BACKENDS, DEVICES
from .interference import ESTIMATORS

MLP, GPT = MODEL_DEFAULTS["mlp"], MODEL_DEFAULTS["gpt"]
ANY_SIZE = 10**9
"""A model size's flag takes any whole number up to this: the model refuses what it cannot build with its own
bound and words (``engine.model_config.MODEL_BOUNDS``: "blocks (layers) must be from 1 to 256")."""
MAX_STEPS = 100
"""The most measured or warm-up steps one run takes."""


def _size(key: str, label: str, help: str) -> Option:
    """A model size: None (not given) takes the model's own (``MODEL_DEFAULTS``)."""
    return whole(key, 1, ANY_SIZE, label, help)


@dataclass(frozen=True)
class RunSettings(Declared):
    """What ``run`` takes: the schedule, the toy model, where and how it runs, and how it is measured."""

    schedule: str = declared("1f1b", SCHEDULE)
    ranks: int = declared(4, RANKS)
    microbatches: int = declared(8, MICROBATCHES)
    chunks: int | None = declared(None, CHUNKS)
    model: str = declared("mlp", choose("model", MODEL_KINDS, "Model", "toy model", titles=MODEL_TITLES))
    layers: int | None = declared(None, _size("layers", "Blocks", f"blocks (default: {MLP['layers']})"))
    hidden: int | None = declared(
        None, _size("hidden", "Hidden width", f"width (default: mlp {MLP['hidden']}, gpt {GPT['hidden']})")
    )
    batch: int | None = declared(
        None, _size("batch", "Batch", f"samples per step (default: mlp {MLP['batch']}, gpt {GPT['batch']})")
    )
    seq_len: int | None = declared(
        None, _size("seq_len", "Sequence length", f"tokens per sample (gpt; default {GPT['seq_len']})")
    )
    vocab: int | None = declared(None, _size("vocab", "Vocabulary", f"vocabulary (gpt; default {GPT['vocab']})"))
    heads: int | None = declared(
        None, _size("heads", "Attention heads", f"attention heads (gpt; default {GPT['heads']})")
    )
    dtype: str = declared(
        "float32", choose("dtype", ("float32", "float64"), "Precision", "the weights' and activations' number type")
    )
    seed: int = declared(0, whole("seed", 0, MAX_SEED, "Seed", "seeds the weights and the data"))
    partition: str = declared(
        "balanced", verbatim("partition", "Partition", "balanced, llama3, or blocks per stage like 4,5,5,4")
    )
    backend: str = declared(
        "emulated",
        choose(
            "backend",
            BACKENDS,
            "Backend",
            "emulated: one process, each action's measured time placed on virtual "
            "device clocks; distributed: one process per rank (torch.distributed), wall clock",
        ),  # fmt: skip
    )
    device: str = declared(
        "auto",
        choose("device", DEVICES, "Device", "auto: a GPU per rank when there are enough, else the CPU; cpu; cuda"),
    )
    recompute: bool = declared(False, RECOMPUTE)
    repeats: int = declared(
        3,
        whole(
            "repeats",
            1,
            MAX_STEPS,
            "Measured steps",
            "measured steps after the warm-up; each action's estimate (--estimator) is shown, with its spread",
        ),  # fmt: skip
    )
    estimator: str = declared(
        "min",
        choose(
            "estimator",
            ESTIMATORS,
            "Each action's cost",
            "emulated: an action's cost from its repeats — min, its "
            "fastest (other work on the machine can only slow an action down), or median",
        ),  # fmt: skip
    )
    clock: str = declared(
        "auto",
        choose(
            "clock",
            CLOCK_CHOICES,
            "Clock",
            "auto: thread CPU time (CUDA events on a GPU, wall clock when "
            "distributed); instructions: instructions retired (emulated on the CPU, where Linux's perf_event_open "
            "is allowed)",
        ),  # fmt: skip
    )
    warmup_steps: int = declared(
        1, whole("warmup_steps", 0, MAX_STEPS, "Warm-up steps", "steps run first and not measured")
    )
    transfer_ms: float | None = declared(
        None, amount("transfer_ms", "Transfer (ms)", "emulated: set the transfer time (default: measured)")
    )
    timeout: float = declared(
        30.0, amount("timeout", "Timeout (s)", "distributed: seconds a rank may wait", above=True)
    )

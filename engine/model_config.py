"""What toy model to build, its defaults (one table), and how its blocks are split into stages.

Torch-free, so the command line and the app can check a configuration without importing PyTorch.
Both models have the same shape so one split rule serves both:

    embed  →  block × L  →  head (with the loss)

The split assigns blocks to stages; stage 0 also holds ``embed`` and the last stage ``head``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .limits import whole_number

MODEL_KINDS = ("mlp", "gpt")
MODEL_TITLES = {"mlp": "MLP", "gpt": "tiny GPT"}

MODEL_DEFAULTS = {
    "mlp": {"layers": 8, "hidden": 512, "batch": 128, "seq_len": 32, "vocab": 128, "heads": 4},
    "gpt": {"layers": 8, "hidden": 128, "batch": 32, "seq_len": 32, "vocab": 128, "heads": 4},
}
"""The one table of model defaults: the CLI, the Real run page and ``ModelConfig`` read it."""

MODEL_BOUNDS = {"layers": 256, "hidden": 65536, "batch": 65536, "seq_len": 4096, "vocab": 1_000_000, "heads": 256}
"""Largest accepted value of each size (a memory budget bounds their product further, at run time)."""
MAX_SEED = 2**32 - 1
MODEL_WORDS = {
    "layers": "blocks (layers)",
    "hidden": "hidden width",
    "batch": "batch (samples per step)",
    "seq_len": "sequence length",
    "vocab": "vocabulary",
    "heads": "attention heads",
}
"""How messages name each size: the words the Real run page shows, not a flag."""


@dataclass(frozen=True, init=False)
class ModelConfig:
    """Which toy model to build and how big.

    A size given as None (or left out) takes ``MODEL_DEFAULTS[kind]``: the constructor is written here, not
    generated, so that it takes ``int | None`` while every field holds a whole number once built — readers
    (and mypy) never see None."""

    kind: str
    """"mlp" (Linear+GELU blocks, mean-squared error) or "gpt" (pre-norm transformer, cross-entropy)."""
    layers: int
    """L: number of blocks (the unit the split distributes)."""
    hidden: int
    """H: width of the blocks."""
    batch: int
    """N: samples per training step, split evenly into micro-batches."""
    seq_len: int
    """T: tokens per sample (gpt only)."""
    vocab: int
    """V: vocabulary size (gpt only)."""
    heads: int
    """Attention heads (gpt only); must divide hidden."""
    seed: int
    """Seeds the weights and the synthetic data: the same config gives the same numbers."""
    dtype: str
    """"float32" or "float64"."""

    def __init__(
        self,
        kind: str = "mlp",
        layers: int | None = None,
        hidden: int | None = None,
        batch: int | None = None,
        seq_len: int | None = None,
        vocab: int | None = None,
        heads: int | None = None,
        seed: int = 0,
        dtype: str = "float32",
    ) -> None:
        if kind not in MODEL_KINDS:
            raise ValueError(f"model must be one of {', '.join(MODEL_KINDS)}, got {kind!r}")
        given = {"layers": layers, "hidden": hidden, "batch": batch, "seq_len": seq_len, "vocab": vocab, "heads": heads}
        sizes = {label: MODEL_DEFAULTS[kind][label] if value is None else value for label, value in given.items()}
        for label, value in sizes.items():
            whole_number(MODEL_WORDS[label], value, 1, MODEL_BOUNDS[label])
        whole_number("seed", seed, 0, MAX_SEED)
        if kind == "gpt" and sizes["hidden"] % sizes["heads"]:
            h, heads = sizes["hidden"], sizes["heads"]
            raise ValueError(
                f"hidden ({h}) must be a multiple of heads ({heads}): {h} = {h // heads}×{heads} + {h % heads}"
            )
        if dtype not in ("float32", "float64"):
            raise ValueError(f"dtype must be float32 or float64, got {dtype!r}")
        # frozen: the fields are set once, here
        for name, setting in {"kind": kind, **sizes, "seed": seed, "dtype": dtype}.items():
            object.__setattr__(self, name, setting)

    @property
    def bytes_per_value(self) -> int:
        return 4 if self.dtype == "float32" else 8

    def boundary_shape(self, num_microbatches: int) -> tuple[int, ...]:
        """Shape of what crosses a stage boundary (activation or its gradient): (N/m, H) or (N/m, T, H)."""
        rows = self.batch // num_microbatches
        return (rows, self.hidden) if self.kind == "mlp" else (rows, self.seq_len, self.hidden)


def partition(num_layers: int, num_stages: int, rule: str | list[int] | tuple[int, ...] = "balanced") -> list[int]:
    """How many blocks each stage gets.

    * "balanced": as equal as possible, the earlier stages taking the remainder.
    * "llama3": the first and last stage one block fewer, because they also hold the embedding and the
      output layer (Llama 3 paper, §3.3.2: "we reduce one Transformer layer each from the first and the last
      stages"). Counted as balancing L + 2 layers, then giving one back at each end.
    * an explicit list such as [4, 5, 5, 4] (or the text "4,5,5,4").

    Never drops a block, never leaves a stage empty: a middle stage needs ≥ 1 block; the first and last
    stage hold the embedding and the head, so they may have 0 blocks.
    """
    if num_stages < 1:
        raise ValueError(f"need at least one stage, got {num_stages}")
    if isinstance(rule, str) and rule not in ("balanced", "llama3"):
        try:
            rule = [int(part) for part in rule.split(",")]
        except ValueError:
            raise ValueError(
                f"partition must be balanced, llama3 or blocks per stage as whole numbers ≥ 0 like "
                f"4,5,5,4; got {rule!r}"
            ) from None
    if rule == "balanced":
        if num_layers < num_stages:
            raise ValueError(
                f"{num_layers} blocks cannot fill {num_stages} stages: each stage needs at least one "
                f"block (use {num_stages} or more blocks)"
            )
        base, extra = divmod(num_layers, num_stages)
        return [base + (s < extra) for s in range(num_stages)]
    if rule == "llama3":
        if num_stages == 1:
            return [num_layers]
        # balance L + 2 "layers" (the embedding and the head count as one each); the remainder goes to the
        # middle stages first, so the end stages really hold one block fewer
        total = num_layers + 2
        base, extra = divmod(total, num_stages)
        order = list(range(1, num_stages - 1)) + [0, num_stages - 1]
        counts = [base] * num_stages
        for stage in order[:extra]:
            counts[stage] += 1
        counts[0] -= 1
        counts[-1] -= 1
        if min(counts[1:-1], default=1) < 1 or min(counts[0], counts[-1]) < 0:
            raise ValueError(
                f"llama3 split of {num_layers} blocks over {num_stages} stages leaves a middle stage "
                f"empty: needs blocks + 2 ≥ stages ({num_layers} + 2 < {num_stages})"
            )
        return counts
    assert not isinstance(rule, str)  # the two named rules returned above; any other text was read as numbers
    counts = list(rule)
    text = ",".join(map(str, counts))
    if any(c < 0 for c in counts):
        raise ValueError(f"partition {text} has a negative count: blocks per stage are whole numbers ≥ 0")
    if len(counts) != num_stages:
        raise ValueError(f"partition {text} has {len(counts)} entries for {num_stages} stages")
    if sum(counts) != num_layers:
        raise ValueError(
            f"partition {text} covers {sum(counts)} blocks, the model has "
            f"{num_layers}: {' + '.join(map(str, counts))} = {sum(counts)} ≠ {num_layers}"
        )
    for stage, count in enumerate(counts):
        if count == 0 and 0 < stage < num_stages - 1:
            raise ValueError(
                f"partition {text} leaves stage {stage} empty "
                f"(only the first and last stage, which hold the embedding and head, may have 0 blocks)"
            )
    return counts

"""Toy models for the runtime — an MLP and a tiny GPT — their synthetic data, and their split into stages.

Both models have the same shape so one split rule serves both:

    embed  →  block × L  →  head (with the loss)

The split assigns blocks to stages; stage 0 also holds ``embed`` and the last stage ``head``.
Shapes in trailing comments: N batch, T sequence length, H hidden, V vocabulary.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

MODEL_KINDS = ("mlp", "gpt")


@dataclass(frozen=True)
class ModelConfig:
    """Which toy model to build and how big."""

    kind: str = "mlp"
    """"mlp" (Linear+GELU blocks, mean-squared error) or "gpt" (pre-norm transformer, cross-entropy)."""
    layers: int = 8
    """L: number of blocks (the unit the split distributes)."""
    hidden: int = 256
    """H: width of the blocks."""
    batch: int = 64
    """N: samples per training step, split evenly into micro-batches."""
    seq_len: int = 32
    """T: tokens per sample (gpt only)."""
    vocab: int = 128
    """V: vocabulary size (gpt only)."""
    heads: int = 4
    """Attention heads (gpt only); must divide hidden."""
    seed: int = 0
    """Seeds the weights and the synthetic data: the same config gives the same numbers."""
    dtype: str = "float32"
    """"float32" or "float64"."""

    def __post_init__(self) -> None:
        if self.kind not in MODEL_KINDS:
            raise ValueError(f"model must be one of {', '.join(MODEL_KINDS)}, got {self.kind!r}")
        for label in ("layers", "hidden", "batch", "seq_len", "vocab", "heads"):
            value = getattr(self, label)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{label} must be a whole number ≥ 1, got {value!r}")
        if self.kind == "gpt" and self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads}): "
                             f"{self.hidden} = {self.hidden // self.heads}×{self.heads} + {self.hidden % self.heads}")
        if self.dtype not in ("float32", "float64"):
            raise ValueError(f"dtype must be float32 or float64, got {self.dtype!r}")

    @property
    def torch_dtype(self) -> torch.dtype:
        return getattr(torch, self.dtype)


# -- the building blocks ------------------------------------------------------------------------------------
class MLPBlock(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.linear = nn.Linear(hidden, hidden)

    def forward(self, x):  # (N, H) -> (N, H)
        return F.gelu(self.linear(x))


class MLPEmbed(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.linear = nn.Linear(hidden, hidden)

    def forward(self, x):  # (N, H) -> (N, H)
        return self.linear(x)


class MLPHead(nn.Module):
    """Projects and scores against the target with mean-squared error."""

    def __init__(self, hidden: int):
        super().__init__()
        self.linear = nn.Linear(hidden, hidden)

    def forward(self, x, target):  # (N, H), (N, H) -> ()
        return F.mse_loss(self.linear(x), target)


class CausalSelfAttention(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)

    def forward(self, x):  # (N, T, H)
        n, t, h = x.shape
        q, k, v = self.qkv(x).split(h, dim=2)  # 3 × (N, T, H)
        q, k, v = (z.view(n, t, self.heads, h // self.heads).transpose(1, 2) for z in (q, k, v))  # (N, heads, T, H/heads)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(h // self.heads)  # (N, heads, T, T)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
        y = scores.softmax(dim=-1) @ v  # (N, heads, T, H/heads)
        return self.proj(y.transpose(1, 2).reshape(n, t, h))  # (N, T, H)


class GPTBlock(nn.Module):
    """Pre-norm transformer block (GPT-2 / nanoGPT layout)."""

    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.norm1 = nn.LayerNorm(hidden)
        self.attention = CausalSelfAttention(hidden, heads)
        self.norm2 = nn.LayerNorm(hidden)
        self.fc = nn.Linear(hidden, 4 * hidden)
        self.out = nn.Linear(4 * hidden, hidden)

    def forward(self, x):  # (N, T, H) -> (N, T, H)
        x = x + self.attention(self.norm1(x))
        return x + self.out(F.gelu(self.fc(self.norm2(x))))


class GPTEmbed(nn.Module):
    def __init__(self, vocab: int, seq_len: int, hidden: int):
        super().__init__()
        self.tokens = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(seq_len, hidden)

    def forward(self, idx):  # (N, T) int -> (N, T, H)
        positions = torch.arange(idx.shape[1], device=idx.device)
        return self.tokens(idx) + self.positions(positions)


class GPTHead(nn.Module):
    def __init__(self, hidden: int, vocab: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, x, target):  # (N, T, H), (N, T) -> ()
        logits = self.lm_head(self.norm(x))  # (N, T, V)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))


class ToyModel(nn.Module):
    """embed → blocks → head. ``forward(x, target)`` returns the mean loss over the batch."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        torch.manual_seed(config.seed)
        if config.kind == "mlp":
            self.embed = MLPEmbed(config.hidden)
            self.blocks = nn.ModuleList(MLPBlock(config.hidden) for _ in range(config.layers))
            self.head = MLPHead(config.hidden)
        else:
            self.embed = GPTEmbed(config.vocab, config.seq_len, config.hidden)
            self.blocks = nn.ModuleList(GPTBlock(config.hidden, config.heads) for _ in range(config.layers))
            self.head = GPTHead(config.hidden, config.vocab)
        self.to(config.torch_dtype)

    def forward(self, x, target):
        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x, target)


def make_batch(config: ModelConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """Synthetic data, made here (no downloads): inputs and targets for one training step.

    mlp: inputs N(0, 1), targets from a fixed random "teacher" layer plus noise — a learnable regression.
    gpt: random token sequences; the target is the input shifted by one (next-token prediction).
    """
    generator = torch.Generator().manual_seed(config.seed + 1)
    if config.kind == "mlp":
        x = torch.randn(config.batch, config.hidden, generator=generator, dtype=config.torch_dtype)
        teacher = torch.randn(config.hidden, config.hidden, generator=generator, dtype=config.torch_dtype)
        noise = 0.1 * torch.randn(config.batch, config.hidden, generator=generator, dtype=config.torch_dtype)
        return x, torch.tanh(x @ teacher / math.sqrt(config.hidden)) + noise
    tokens = torch.randint(config.vocab, (config.batch, config.seq_len + 1), generator=generator)
    return tokens[:, :-1], tokens[:, 1:]


# -- splitting into stages ------------------------------------------------------------------------------------
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
            raise ValueError(f"partition must be balanced, llama3 or a list like 4,5,5,4; got {rule!r}") from None
    if rule == "balanced":
        if num_layers < num_stages:
            raise ValueError(f"{num_layers} layers cannot fill {num_stages} stages: each stage needs at least one "
                             f"layer (use --layers ≥ {num_stages})")
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
            raise ValueError(f"llama3 split of {num_layers} layers over {num_stages} stages leaves a middle stage "
                             f"empty: needs layers + 2 ≥ stages ({num_layers} + 2 < {num_stages})")
        return counts
    counts = list(rule)
    if len(counts) != num_stages:
        raise ValueError(f"partition {','.join(map(str, counts))} has {len(counts)} entries for {num_stages} stages")
    if sum(counts) != num_layers:
        raise ValueError(f"partition {','.join(map(str, counts))} covers {sum(counts)} layers, the model has "
                         f"{num_layers}: {' + '.join(map(str, counts))} = {sum(counts)} ≠ {num_layers}")
    if any(c < 0 for c in counts):
        raise ValueError(f"partition {','.join(map(str, counts))} has a negative count")
    for stage, count in enumerate(counts):
        if count == 0 and 0 < stage < num_stages - 1:
            raise ValueError(f"partition {','.join(map(str, counts))} leaves stage {stage} empty "
                             f"(only the first and last stage, which hold the embedding and head, may have 0 layers)")
    return counts


class Stage(nn.Module):
    """One pipeline stage: a slice of the blocks, plus the embedding (first) and head (last)."""

    def __init__(self, index: int, embed: nn.Module | None, blocks: list[nn.Module], head: nn.Module | None):
        super().__init__()
        self.index = index
        self.embed = embed
        self.blocks = nn.ModuleList(blocks)
        self.head = head

    @property
    def is_first_stage(self) -> bool:
        return self.embed is not None

    @property
    def is_last_stage(self) -> bool:
        return self.head is not None

    def forward(self, x, target=None):
        if self.embed is not None:
            x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        if self.head is not None:
            return self.head(x, target)  # the loss
        return x


def split_model(model: ToyModel, counts: list[int]) -> list[Stage]:
    """Deep copies of the model's pieces, grouped into stages (the original stays whole: the reference)."""
    stages, start = [], 0
    for index, count in enumerate(counts):
        blocks = [copy.deepcopy(block) for block in model.blocks[start:start + count]]
        start += count
        embed = copy.deepcopy(model.embed) if index == 0 else None
        head = copy.deepcopy(model.head) if index == len(counts) - 1 else None
        stages.append(Stage(index, embed, blocks, head))
    assert start == len(model.blocks)
    return stages


def stage_parameter_names(counts: list[int]) -> list[dict[str, str]]:
    """For each stage, its parameter names mapped to the unsplit model's names (for gradient checks)."""
    mapping, start = [], 0
    for index, count in enumerate(counts):
        names = {}
        for local in range(count):
            names[f"blocks.{local}"] = f"blocks.{start + local}"
        if index == 0:
            names["embed"] = "embed"
        if index == len(counts) - 1:
            names["head"] = "head"
        mapping.append(names)
        start += count
    return mapping


def reference_gradients(config: ModelConfig) -> tuple[float, dict[str, torch.Tensor]]:
    """The unsplit model on the full batch: its loss and every parameter's gradient."""
    model = ToyModel(config)
    x, target = make_batch(config)
    loss = model(x, target)
    loss.backward()
    return float(loss.detach()), {name: p.grad.detach().clone() for name, p in model.named_parameters()}


def to_reference_name(stage_name: str, prefix_map: dict[str, str]) -> str:
    for local, global_ in prefix_map.items():
        if stage_name == local or stage_name.startswith(local + "."):
            return global_ + stage_name[len(local):]
    raise KeyError(stage_name)

"""Toy models for the runtime — an MLP and a tiny GPT — their synthetic data, and their split into stages
(``engine.model_config`` holds their configuration and the split rule).

Shapes in trailing comments: N batch, T sequence length, H hidden, V vocabulary.
"""

from __future__ import annotations

import copy
import math
import threading

import torch
import torch.nn as nn
import torch.nn.functional as F

from .model_config import ModelConfig


def torch_dtype(config: ModelConfig) -> torch.dtype:
    return getattr(torch, config.dtype)


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
        q, k, v = (
            z.view(n, t, self.heads, h // self.heads).transpose(1, 2) for z in (q, k, v)
        )  # (N, heads, T, H/heads)
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


_BUILDING = threading.Lock()


class ToyModel(nn.Module):
    """embed → blocks → head. ``forward(x, target)`` returns the mean loss over the batch."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        # PyTorch initialises layers from its one global generator: seed it, and let no other thread of this
        # process build a model meanwhile (two runs started from two threads would interleave draws); the
        # caller's generator state is restored afterwards
        with _BUILDING, torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            self.embed: nn.Module  # MLPEmbed or GPTEmbed
            self.head: nn.Module  # MLPHead or GPTHead
            if config.kind == "mlp":
                self.embed = MLPEmbed(config.hidden)
                self.blocks = nn.ModuleList(MLPBlock(config.hidden) for _ in range(config.layers))
                self.head = MLPHead(config.hidden)
            else:
                self.embed = GPTEmbed(config.vocab, config.seq_len, config.hidden)
                self.blocks = nn.ModuleList(GPTBlock(config.hidden, config.heads) for _ in range(config.layers))
                self.head = GPTHead(config.hidden, config.vocab)
        self.to(torch_dtype(config))

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
        x = torch.randn(config.batch, config.hidden, generator=generator, dtype=torch_dtype(config))
        teacher = torch.randn(config.hidden, config.hidden, generator=generator, dtype=torch_dtype(config))
        noise = 0.1 * torch.randn(config.batch, config.hidden, generator=generator, dtype=torch_dtype(config))
        return x, torch.tanh(x @ teacher / math.sqrt(config.hidden)) + noise
    tokens = torch.randint(config.vocab, (config.batch, config.seq_len + 1), generator=generator)
    return tokens[:, :-1], tokens[:, 1:]


# -- splitting into stages ------------------------------------------------------------------------------------
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


def split_model(model: ToyModel, counts: list[int], copies: int = 1) -> list[Stage]:
    """Deep copies of the model's pieces, grouped into stages (the original stays whole: the reference). With
    ``copies`` > 1 (DualPipe), ``counts`` covers the model that many times: each copy starts again from the
    embedding, with the same initial weights."""
    stages = []
    assert sum(counts) == copies * len(model.blocks), (counts, copies, len(model.blocks))  # no block left out
    for index, (first, last, blocks) in enumerate(_stage_blocks(counts, copies)):
        embed = copy.deepcopy(model.embed) if first else None
        head = copy.deepcopy(model.head) if last else None
        stages.append(Stage(index, embed, [copy.deepcopy(model.blocks[b]) for b in blocks], head))
    return stages


def stage_parameter_names(counts: list[int], copies: int = 1) -> list[dict[str, str]]:
    """For each stage, its parameter names mapped to the unsplit model's names (for gradient checks); the
    stages of every copy map to the same names."""
    mapping = []
    for first, last, blocks in _stage_blocks(counts, copies):
        names = {f"blocks.{local}": f"blocks.{block}" for local, block in enumerate(blocks)}
        if first:
            names["embed"] = "embed"
        if last:
            names["head"] = "head"
        mapping.append(names)
    return mapping


def _stage_blocks(counts: list[int], copies: int) -> list[tuple[bool, bool, range]]:
    """Per stage: whether it is its copy's first and last, and the model's blocks it holds."""
    per_copy = len(counts) // copies
    assert per_copy * copies == len(counts) and counts[:per_copy] * copies == list(counts), (counts, copies)
    found, start = [], 0
    for index, count in enumerate(counts):
        position = index % per_copy
        start = 0 if position == 0 else start
        found.append((position == 0, position == per_copy - 1, range(start, start + count)))
        start += count
    return found


def reference_gradients(config: ModelConfig) -> tuple[float, dict[str, torch.Tensor]]:
    """The unsplit model on the full batch: its loss and every parameter's gradient."""
    model = ToyModel(config)
    x, target = make_batch(config)
    loss = model(x, target)
    loss.backward()
    gradients = {}
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None, f"{name} took no part in the loss"  # every layer does
        gradients[name] = parameter.grad.detach().clone()
    return float(loss.detach()), gradients


def to_reference_name(stage_name: str, prefix_map: dict[str, str]) -> str:
    for local, global_ in prefix_map.items():
        if stage_name == local or stage_name.startswith(local + "."):
            return global_ + stage_name[len(local) :]
    raise KeyError(stage_name)

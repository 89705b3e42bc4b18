"""The bytes PyTorch autograd saves for backward in one transformer layer's forward, measured.

``saved_bytes`` runs a forward under ``torch.autograd.graph.saved_tensors_hooks`` and counts each distinct
storage that a backward node (or a custom Function's ``save_for_backward``) keeps once. Parameters and buffers
(RoPE's cos/sin) are skipped: shared by every micro-batch and layer, they are not per-layer activations.

Two layers to measure, input and output ``[s, b, h]`` (Megatron's layout), ``tp`` emulating one tensor-parallel
rank without sequence parallelism (heads and FFN divided by ``tp``; norms, dropouts and residuals on the full
hidden size, as that rank computes them):

* ``GptLayer``: Korthikanti et al. 2022's GPT-3 layer; in bfloat16 it saves exactly Eq. 1 / Table 2 plus the two
  LayerNorms' per-token mean and rstd (``korthikanti_bytes``).
* ``LlamaLayer``: RMSNorm, GQA with RoPE and ``scaled_dot_product_attention``, SwiGLU, with the norm, RoPE and
  SwiGLU written as the autograd Functions production kernels are (``llama_bytes`` lists what it saves).

``recompute``: "none"; "selective" checkpoints the attention core; "full" the layer, with reentrant
``checkpoint``: its ``CheckpointFunction`` runs the region under ``no_grad`` and keeps the region's tensor
inputs with ``save_for_backward``, which the outer hooks see. (Checked in torch 2.13: ``use_reentrant=False``
counts the same. Its own saved-tensor hooks hide the region's tensors, which it frees and recomputes, but it
keeps the inputs first, via ``_CheckpointFrame.save_inputs`` outside its hooks.) Not counted either way: the
CPU RNG state (a 5 KB tensor) checkpoint keeps on ``ctx`` to replay dropout.

Run ``python tests/saved_tensors.py`` for a table of measured and predicted bytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd.graph import saved_tensors_hooks
from torch.utils.checkpoint import checkpoint


@dataclass
class SavedTensors:
    """Bytes saved for backward: ``total``, and one ``(shape, dtype, storage bytes)`` per distinct storage, in
    the order first saved (the forward's order). ``skipped``: bytes of parameter and buffer storages seen."""

    total: int = 0
    tensors: list[tuple[tuple[int, ...], torch.dtype, int]] = field(default_factory=list)
    skipped: int = 0


Skip = nn.Module | Iterable[torch.Tensor | int] | None  # what saved_bytes does not count


def saved_bytes(function: Callable, *inputs, skip: Skip = None) -> SavedTensors:
    """Run ``function(*inputs)`` and count the storages autograd saves for backward, each once.

    ``skip``: storages not to count, as a module (its parameters and buffers), tensors, or storage pointers;
    by default the parameters and buffers of ``function`` when it is a module. The inputs are counted when
    saved: a layer's input is kept by its first norm."""
    skip = (function if isinstance(function, nn.Module) else ()) if skip is None else skip
    skip = [*skip.parameters(), *skip.buffers()] if isinstance(skip, nn.Module) else skip
    skip = {s if isinstance(s, int) else s.untyped_storage().data_ptr() for s in skip}
    result, seen, alive = SavedTensors(), set(), []

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        pointer, nbytes = storage.data_ptr(), storage.nbytes()
        # Held until the end: a saved tensor of a discarded branch could otherwise be freed and its address
        # reused by a later one, which the pointer key would then miss.
        alive.append(tensor)
        if pointer in skip and pointer not in seen:
            result.skipped += nbytes
        elif pointer not in seen:
            result.total += nbytes
            result.tensors.append((tuple(tensor.shape), tensor.dtype, nbytes))
        seen.add(pointer)
        return tensor

    with saved_tensors_hooks(pack, lambda tensor: tensor):
        function(*inputs)
    return result


# -- the formulas to test -----------------------------------------------------------------------------------
def korthikanti_bytes(s: int, b: int, h: int, a: int, t: int = 1, recompute: str = "none", ffn: int | None = None):
    """Korthikanti et al. 2022 Table 2 (TP without SP): sbh(10 + 24/t) + 5as²b/t, selective drops the s² term,
    full keeps 2sbh. For an FFN other than 4h the MLP's 16sbh/t (GeLU and fc2 inputs) reads 4·sbf/t."""
    if recompute == "full":
        return 2 * s * b * h
    f = 4 * h if ffn is None else ffn
    # 10sbh: both norms' inputs, the QKV and fc1 inputs (2 each), two dropout masks (1 each); per rank:
    # Q, K, V and the output projection's input (8h/t), GeLU's and fc2's inputs (4f/t)
    linear = s * b * (10 * h + (8 * h + 4 * f) // t)
    return linear + (5 * a * s * s * b // t if recompute == "none" else 0)


def llama_bytes(s: int, b: int, h: int, a: int, kv: int, ffn: int, t: int = 1, recompute: str = "none"):
    """What ``LlamaLayer`` saves in bfloat16, tensor by tensor (see its docstring)."""
    if recompute == "full":
        return 2 * s * b * h
    q, k, f_t = h // t, max(kv // t, 1) * (h // a), ffn // t  # per rank: q and k widths, FFN
    norms = 2 * (2 * h + 4)  # each RMSNorm: its input (bf16) and the per-token rstd (fp32)
    linear_inputs = 2 * h + 2 * h + 2 * q + 2 * f_t  # QKV, gate+up (norm outputs), o_proj (SDPA's output), down
    attention = 2 * (q + k) + 2 * k  # rotated q and k, and v copied out of the fused product
    lse = 4 * (a // t) if recompute == "none" else 0  # the flash kernel's logsumexp, fp32
    return s * b * (norms + linear_inputs + attention + 2 * 2 * f_t + lse)  # 2·2f: SwiGLU's input [gate | up]


# -- autograd Functions as fused kernels write them -------------------------------------------------------------
class RmsNorm(torch.autograd.Function):
    """y = x · rstd · w, rstd = 1/√(mean(x²) + eps) per token; saves x and rstd (fp32), as Transformer Engine's
    and Apex's fused RMSNorm do, and recomputes x · rstd in backward."""

    @staticmethod
    def forward(ctx, x, weight, eps):
        compute = torch.promote_types(x.dtype, torch.float32)  # fp32 for bf16, float64 for gradcheck
        rstd = torch.rsqrt(x.to(compute).pow(2).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(x, weight, rstd)
        return (x.to(compute) * rstd * weight.to(compute)).to(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, weight, rstd = ctx.saved_tensors
        normed = x.to(rstd.dtype) * rstd
        grad_normed = grad.to(rstd.dtype) * weight.to(rstd.dtype)
        grad_x = rstd * (grad_normed - normed * (grad_normed * normed).mean(-1, keepdim=True))
        grad_weight = (grad.to(rstd.dtype) * normed).reshape(-1, x.shape[-1]).sum(0)
        return grad_x.to(x.dtype), grad_weight.to(weight.dtype), None


class SwiGlu(torch.autograd.Function):
    """silu(gate) · up from y = [gate | up]; saves only y and recomputes silu in backward, as Megatron-LM's
    ``SwiGLUFunction`` (megatron/core/fusions/fused_bias_swiglu.py) does."""

    @staticmethod
    def forward(ctx, y):
        ctx.save_for_backward(y)
        gate, up = y.chunk(2, dim=-1)
        return F.silu(gate) * up

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        gate, up = y.chunk(2, dim=-1)
        sigmoid = torch.sigmoid(gate)
        grad_gate = grad * up * sigmoid * (1 + gate * (1 - sigmoid))
        return torch.cat([grad_gate, grad * gate * sigmoid], dim=-1)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    return torch.cat([-x[..., x.shape[-1] // 2 :], x[..., : x.shape[-1] // 2]], dim=-1)  # [x1, x2] → [−x2, x1]


class Rope(torch.autograd.Function):
    """x·cos + rotate_half(x)·sin; saves only cos and sin, as fused RoPE kernels do (their adjoint needs no x:
    rotate_half's transpose is −rotate_half)."""

    @staticmethod
    def forward(ctx, x, cos, sin):
        ctx.save_for_backward(cos, sin)
        return x * cos + rotate_half(x) * sin

    @staticmethod
    def backward(ctx, grad):
        cos, sin = ctx.saved_tensors
        return grad * cos - rotate_half(grad * sin), None, None


def dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """``native_dropout``, whose saved mask is bool (1 byte, what Korthikanti counts and CUDA's ``F.dropout``
    runs). On CPU ``F.dropout`` computes x · noise instead and saves the noise in x's dtype: 2 bytes in bf16."""
    return torch.native_dropout(x, p, True)[0] if training and p > 0 else x


# -- the layers -------------------------------------------------------------------------------------------------
class _Layer(nn.Module):
    def __init__(self, recompute: str, tp: int, *divided: int):
        super().__init__()
        assert recompute in ("none", "selective", "full") and all(n % tp == 0 for n in divided), (recompute, tp)
        self.recompute = recompute

    def forward(self, x):  # full recomputation: keep x, rerun the layer in backward
        return checkpoint(self.layer, x, use_reentrant=True) if self.recompute == "full" else self.layer(x)

    def core(self, attention, *args):  # selective recomputation: keep the attention core's inputs
        return checkpoint(attention, *args, use_reentrant=True) if self.recompute == "selective" else attention(*args)


def gpt_core_attention(q, k, v, scale: float, p: float, training: bool) -> torch.Tensor:
    """softmax(scale·q·kᵀ + causal) dropped out, times v; q, k, v ``[b·a, s, d]`` strided views of the QKV
    output. Saves softmax's output (2as²b), the dropout mask (as²b), the dropped probabilities (2as²b), and
    q, k, v, which are views of one storage (6sbh/t)."""
    s = q.shape[1]
    causal = torch.full((s, s), -math.inf, dtype=q.dtype, device=q.device).triu(1)
    # Scale and mask inside the GEMM, as Megatron's baddbmm with alpha: baddbmm saves only q and k, so no extra
    # s×s tensor is kept (a separate scores·scale would not save one either, but allocates one more).
    scores = torch.baddbmm(causal, q, k.transpose(1, 2), beta=1.0, alpha=scale)
    probs = dropout(torch.softmax(scores, dim=-1), p, training)
    return torch.bmm(probs, v)


class GptLayer(_Layer):
    """LayerNorm → QKV → core attention → projection → dropout → residual → LayerNorm → fc1 → GeLU → fc2 →
    dropout → residual (Korthikanti et al. 2022, §4.1), one TP rank of ``tp``."""

    def __init__(self, hidden, ffn, heads, dropout=0.1, recompute="none", tp=1):
        super().__init__(recompute, tp, heads, ffn)
        self.heads, self.head_dim, self.p = heads // tp, hidden // heads, dropout
        self.norm1, self.norm2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        # QKV and fc1 column-parallel, proj and fc2 row-parallel
        self.qkv, self.proj = nn.Linear(hidden, 3 * hidden // tp), nn.Linear(hidden // tp, hidden)
        self.fc1, self.fc2 = nn.Linear(hidden, ffn // tp), nn.Linear(ffn // tp, hidden)

    def layer(self, x):
        s, b, _ = x.shape
        a, d = self.heads, self.head_dim
        # [s, b, a·3d] → per-head [q k v] (Megatron's interleave) → [s, b·a, d] → [b·a, s, d]: all views
        q, k, v = (
            t.reshape(s, b * a, d).transpose(0, 1) for t in self.qkv(self.norm1(x)).view(s, b, a, 3 * d).split(d, -1)
        )
        context = self.core(gpt_core_attention, q, k, v, 1 / math.sqrt(d), self.p, self.training)
        # [b·a, s, d] → [s, b, a·d]: bmm writes batch-major, so this reshape copies (2sbh/t). The copy is the
        # projection's input, which Korthikanti counts; the bmm output it came from is not saved, so the copy
        # costs a transient buffer and no saved bytes.
        context = context.view(b, a, s, d).permute(2, 0, 1, 3).reshape(s, b, a * d)
        x = x + dropout(self.proj(context), self.p, self.training)
        return x + dropout(self.fc2(F.gelu(self.fc1(self.norm2(x)), approximate="tanh")), self.p, self.training)


class LlamaLayer(_Layer):
    """RMSNorm → QKV (no bias) → RoPE on q, k → SDPA (causal, GQA) → o_proj → residual → RMSNorm → gate+up →
    SwiGLU → down → residual, one TP rank of ``tp`` (kv heads replicated where fewer than ``tp``).

    Saves, in bf16: each norm's input and fp32 rstd; the QKV, gate+up, o_proj and down inputs; the rotated q and
    k (new tensors) and v copied out of the fused product (attention takes one contiguous tensor each, as
    Transformer Engine hands them to its kernels; a view would keep the whole fused product alive); on CPU the
    flash kernel's output (the o_proj input: the kernel writes it in q's [s, b, a, d] layout, so no copy) and
    its fp32 logsumexp; SwiGLU's input. cos/sin are buffers shared by all layers, skipped like parameters."""

    def __init__(self, hidden, ffn, heads, kv_heads, recompute="none", tp=1, max_seq=2048, eps=1e-5):
        super().__init__(recompute, tp, heads, ffn)
        self.heads, self.kv_heads, self.head_dim = heads // tp, max(kv_heads // tp, 1), hidden // heads
        self.eps, self.ffn, d = eps, ffn // tp, self.head_dim
        self.norm1, self.norm2 = nn.Parameter(torch.ones(hidden)), nn.Parameter(torch.ones(hidden))
        self.qkv = nn.Linear(hidden, (self.heads + 2 * self.kv_heads) * d, bias=False)
        self.o_proj = nn.Linear(self.heads * d, hidden, bias=False)
        self.gate_up, self.down = nn.Linear(hidden, 2 * self.ffn, bias=False), nn.Linear(self.ffn, hidden, bias=False)
        angles = torch.outer(torch.arange(max_seq), 10000.0 ** (-torch.arange(0, d, 2) / d)).repeat(1, 2)
        self.register_buffer("cos", angles.cos()[:, None, None, :], persistent=False)  # [s, 1, 1, d]
        self.register_buffer("sin", angles.sin()[:, None, None, :], persistent=False)

    def layer(self, x):
        s, b, _ = x.shape
        a, kv, d = self.heads, self.kv_heads, self.head_dim
        q, k, v = self.qkv(RmsNorm.apply(x, self.norm1, self.eps)).view(s, b, a + 2 * kv, d).split([a, kv, kv], 2)
        cos, sin = self.cos[:s], self.sin[:s]
        # [s, b, n, d] → [b, n, s, d]: views; the CPU flash kernel takes strided inputs
        q, k, v = (t.permute(1, 2, 0, 3) for t in (Rope.apply(q, cos, sin), Rope.apply(k, cos, sin), v.contiguous()))
        attention = self.core(sdpa, q, k, v)  # [b, a, s, d], laid out as q is: [s, b, a, d]
        x = x + self.o_proj(attention.permute(2, 0, 1, 3).reshape(s, b, a * d))  # so a view, no copy
        return x + self.down(SwiGlu.apply(self.gate_up(RmsNorm.apply(x, self.norm2, self.eps))))


sdpa = partial(F.scaled_dot_product_attention, is_causal=True, enable_gqa=True)


# -- the table --------------------------------------------------------------------------------------------------
def measure(layer: nn.Module, s: int, b: int, h: int) -> SavedTensors:
    """One bf16 layer's forward in training mode on x [s, b, h] that requires grad, as in a stack."""
    torch.manual_seed(0)
    layer = layer.to(torch.bfloat16).train()
    x = torch.randn(s, b, h, dtype=torch.bfloat16).requires_grad_(True)
    return saved_bytes(layer, x)


SHAPES = [(256, 1024, 8, 2, 128, 2), (512, 1376, 8, 2, 256, 1)]  # (h, ffn, heads, kv heads, s, b)


def main() -> None:
    """Measured bytes per layer and micro-batch; predicted: gpt, Korthikanti for its FFN plus the LayerNorms'
    per-token mean and rstd, llama, ``llama_bytes``; K(f): Korthikanti for this FFN; K(4h): as in the paper
    (FFN 4h), what a planner using it budgets."""
    row = "{:<6}{:>5}{:>6}{:>3}{:>3}{:>5}{:>3}{:>3}  {:<10}{:>10}{:>11}{:>10}{:>10}{:>11}".format
    print(row(*"layer h ffn a kv s b t recompute measured predicted K(f) K(4h) /K(4h)".split()))
    for h, ffn, a, kv, s, b in SHAPES:
        for t in (1, 2):
            for recompute in ("none", "selective", "full"):
                paper, paper_4h = (korthikanti_bytes(s, b, h, a, t, recompute, f) for f in (ffn, None))
                ln_stats = 0 if recompute == "full" else 2 * 2 * s * b * 2  # 2 norms × (mean, rstd) × bf16
                gpt, llama = GptLayer(h, ffn, a, recompute=recompute, tp=t), LlamaLayer(h, ffn, a, kv, recompute, t)
                for name, kvs, layer, predicted in (
                    ("gpt", a, gpt, paper + ln_stats),
                    ("llama", kv, llama, llama_bytes(s, b, h, a, kv, ffn, t, recompute)),
                ):
                    measured = measure(layer, s, b, h).total
                    ratio = f"{measured / paper_4h:.3f}"
                    print(row(name, h, ffn, a, kvs, s, b, t, recompute, measured, predicted, paper, paper_4h, ratio))


if __name__ == "__main__":
    main()

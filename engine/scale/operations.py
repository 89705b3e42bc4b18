"""One transformer layer as the kernels a GPU runs: each operation's FLOPs, the bytes it moves through HBM, the
shape of its matrix products, and the tensors autograd keeps for its backward — for one micro-batch on one GPU.

Legend as in ``models``; t = TP, c = CP; on one GPU: T = b·s/c tokens of a micro-batch; T' = T/t where sequence
parallelism splits the tokens (norms, dropouts, residual adds; Korthikanti et al. 2022 §4.2.2), else T; q = h/t
the query width, k' = max(k/t, 1)·d the key (and value) width, f' = f/t, a' = a/t heads.

Time (``roofline``) reads each pass's kernels: a GEMM of m×k by k×n does 2mnk FLOPs and moves at least its two
operands and its product, 2(mk + kn + mn) bytes in BF16; an element-wise kernel moves what it reads and writes.
The backward of Y = X·W is two GEMMs, dX = dY·Wᵀ (I) and dW = Xᵀ·dY (W), each as many FLOPs as the forward.

Memory (``saved``) is what autograd keeps between a layer's forward and its backward, each storage once, as the
layer is built by Megatron-LM with Transformer Engine: the input of every GEMM and norm, the norm's per-token
statistics, the activation function's input (fused SwiGLU keeps only its input,
``megatron/core/fusions/fused_bias_swiglu.py``; fused RoPE keeps nothing), dropout masks of one byte, attention's
Q, K and V as the kernel takes them (one tensor each: with rotary embeddings the product's own Q and K are freed),
and either flash attention's output and log-sum-exp (FP32) or, without it, the s × s softmax output, its dropout
mask and dropout output (Korthikanti et al. 2022 §4.1). With sequence
parallelism a GEMM after an all-gather keeps its input before the gather (T'·h), as Megatron does. Recomputation
(Korthikanti §5): selective re-runs the attention core, so only its inputs are kept; full keeps the layer input.
Tests: ``tests/engine/runtime/test_saved_tensors.py`` builds these layers in torch and counts what autograd saves.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from .flash_rates import backward_rate, causal_rate
from .layout import Layout
from .models import ModelSpec

BF16, FP32, MASK = 2, 4, 1
"""Bytes per value: activations and weights, statistics and logits, dropout masks."""
FLASH_BACKWARD_FACTOR = 2.5
"""Flash attention's backward runs five matrix products to the forward's two, recomputing the scores (Dao 2023,
FlashAttention-2, §3.1.2): 2.5 × the forward's FLOPs."""
CAUSAL_SHARE = 0.5
"""A causal flash-attention kernel skips the blocks above the diagonal: half the s × s square. Without flash
attention the scores are computed in full and masked (Megatron's fused scale-mask-softmax)."""
CATEGORIES = ("GEMMs", "attention", "memory-bound", "TP communication", "CP communication", "PP hand-offs")
"""Where a stage's time goes, as the Plan page's stacked bar shows it."""


@dataclass(frozen=True)
class Kernel:
    """One kernel launch: its FLOPs, the HBM bytes it moves, and for a tensor-core kernel its output tiles."""

    flops: float
    bytes: float
    tiles: tuple[int, int, int] | None = None
    """(independent products, rows, columns) of its output, which the GPU's SMs run in waves; None: no tensor cores."""
    fp8: bool = False
    """Run at the GPU's FP8 peak (``Layout.fp8``: DeepSeek-V3's FP8 GEMMs), else at its BF16 peak."""
    rate: float = 1.0
    """Its FLOP rate as a share of a GEMM's of the same tiles (below 1 for flash attention: ``flash_rates``)."""


def gemm(m: float, n: float, k: float, count: float = 1) -> Kernel:
    """``count`` products of an m×k by a k×n matrix: 2mnk FLOPs each; operands and product read or written once."""
    return Kernel(2.0 * count * m * n * k, BF16 * count * (m * k + k * n + m * n), (int(count), int(m), int(n)))


def flash_attention(
    work: float, forward_bytes: float, backward_bytes: float, tiles: tuple[int, int, int]
) -> tuple[Kernel, Kernel]:
    """A causal flash-attention kernel of ``work`` FLOPs (its causal half) over ``tiles`` (heads, queries a
    sequence, head size), and its backward: 2.5 × the FLOPs, each at its measured share of a GEMM's rate
    (``engine.scale.flash_rates``)."""
    causal = causal_rate(tiles[1])
    forward = Kernel(work, forward_bytes, tiles, rate=causal)
    backward = Kernel(FLASH_BACKWARD_FACTOR * work, backward_bytes, tiles, rate=causal * backward_rate(tiles[1]))
    return forward, backward


def stream(num_bytes: float) -> Kernel:
    """An element-wise kernel: bound by the bytes it reads and writes."""
    return Kernel(0.0, num_bytes)


@dataclass(frozen=True)
class Operation:
    """One operation of a layer: its kernels in the forward (F), the input gradient (I) and the weight gradient
    (W), and the bytes autograd keeps for its backward."""

    name: str
    category: str
    """One of ``CATEGORIES`` (communication is added by ``roofline``)."""
    forward: tuple[Kernel, ...]
    input_gradient: tuple[Kernel, ...]
    weight_gradient: tuple[Kernel, ...] = ()
    saved: float = 0.0
    """Bytes kept for the backward (each storage once across the layer)."""
    statistics: float = 0.0
    """Of ``saved``, the per-token statistics (norms' mean and 1/rms, attention's log-sum-exp), which Korthikanti
    et al. leave out ("small buffers")."""
    core: bool = False
    """Part of the attention core that selective recomputation re-runs."""


@dataclass(frozen=True)
class Shapes:
    """The sizes one GPU sees for one micro-batch."""

    tokens: float
    """T = b·s/c."""
    split_tokens: float
    """T' = T/t with sequence parallelism, else T."""
    keys: float
    """Keys each query attends over, times b: b·s (CP gathers the whole sequence's keys)."""
    sequences: int
    hidden: int
    query: float
    key_value: float
    ffn: float
    heads: float
    head_size: int
    vocab: float

    @classmethod
    def of(cls, model: ModelSpec, layout: Layout) -> Shapes:
        t, b = layout.tensor_parallel, layout.microbatch_size
        tokens = b * layout.sequence_per_gpu(model)
        return cls(
            tokens=tokens,
            split_tokens=tokens / t if layout.sequence_parallel else tokens,
            keys=b * layout.sequence(model),
            sequences=b,
            hidden=model.hidden_size,
            query=model.num_attention_heads * model.head_size / t,
            key_value=max(model.num_kv_heads // t, 1) * model.head_size,
            ffn=model.ffn_hidden_size / t,
            heads=model.num_attention_heads / t,
            head_size=model.head_size,
            vocab=model.vocab_size / t,
        )


def linear(name: str, tokens: float, outputs: float, inputs: float, saved: float) -> Operation:
    """Y (tokens × outputs) = X (tokens × inputs) · W: F one GEMM, I dX = dY·Wᵀ, W dW = Xᵀ·dY."""
    return Operation(
        name,
        "GEMMs",
        forward=(gemm(tokens, outputs, inputs),),
        input_gradient=(gemm(tokens, inputs, outputs),),
        weight_gradient=(gemm(inputs, outputs, tokens),),
        saved=saved,
    )


def norm(name: str, model: ModelSpec, shapes: Shapes) -> Operation:
    """LayerNorm or RMSNorm on T' tokens: reads and writes T'·h; keeps its input and per-token statistics (mean
    and 1/σ for LayerNorm, 1/rms for RMSNorm, FP32). Its backward reads the gradient and the input, writes one."""
    size = shapes.split_tokens * shapes.hidden * BF16
    statistics = shapes.split_tokens * FP32 * (2 if model.norm == "layernorm" else 1)
    return Operation(name, "memory-bound", (stream(2 * size),), (stream(3 * size),), saved=size + statistics,
                     statistics=statistics)  # fmt: skip


def residual(name: str, model: ModelSpec, shapes: Shapes) -> Operation:
    """The residual add, with the dropout before it when the model has dropout (Megatron's fused
    bias-dropout-add keeps a one-byte mask)."""
    size = shapes.split_tokens * shapes.hidden
    mask = size * MASK if model.dropout else 0.0
    return Operation(name, "memory-bound", (stream(3 * BF16 * size + mask),), (stream(2 * BF16 * size + mask),),
                     saved=mask)  # fmt: skip


def attention_core(model: ModelSpec, layout: Layout, shapes: Shapes) -> list[Operation]:
    """Softmax(Q·Kᵀ)·V over a' heads; Q, K and V are kept by whoever runs the core (``attention_operations``)."""
    b, T, a, d = shapes.sequences, shapes.tokens, shapes.heads, shapes.head_size
    keys = shapes.keys / b  # keys per sequence
    q_bytes, kv_bytes = BF16 * T * shapes.query, BF16 * shapes.keys * shapes.key_value
    if layout.flash_attention:
        work = 4.0 * T * keys * shapes.query * CAUSAL_SHARE  # Q·Kᵀ and P·V, b sequences together
        statistics = FP32 * T * a  # log-sum-exp per query and head
        forward, backward = flash_attention(
            work,
            2 * q_bytes + 2 * kv_bytes + statistics,
            4 * q_bytes + 4 * kv_bytes + statistics,
            (int(b * a), int(T / b), d),
        )
        # keeps its output (which the projection also keeps: one storage) and the log-sum-exp
        return [Operation("flash attention", "attention", (forward,), (backward,), saved=q_bytes + statistics,
                          statistics=statistics, core=True)]  # fmt: skip
    scores = b * a * (T / b) * keys  # s × s per head and sequence (s/c × s under CP)
    dropout = model.dropout
    queries = T / b
    return [
        Operation("scores Q·Kᵀ", "attention", (gemm(queries, keys, d, b * a),),
                  (gemm(queries, d, keys, b * a), gemm(keys, d, queries, b * a)), core=True),
        Operation("softmax", "memory-bound", (stream(2 * BF16 * scores),), (stream(3 * BF16 * scores),),
                  saved=BF16 * scores, core=True),
        *([Operation("attention dropout", "memory-bound", (stream((2 * BF16 + MASK) * scores),),
                     (stream((2 * BF16 + MASK) * scores),), saved=(BF16 + MASK) * scores, core=True)]
          if dropout else []),
        Operation("probabilities · V", "attention", (gemm(queries, d, keys, b * a),),
                  (gemm(queries, keys, d, b * a), gemm(keys, d, queries, b * a)), core=True),
    ]  # fmt: skip


FP8_TILE_BYTES = 1 + 4 / 128
"""Bytes per value of a tensor quantized to FP8 in DeepSeek-V3's fine-grained way: one byte, and one FP32 scale per
128 values (a 1 × 128 tile of an activation, report §3.3.1; DeepEP's tests' fp8_factor for the dispatch)."""


def fp8_casts(op: Operation, forward_rows: float | None = None) -> Operation:
    """The quantization around an FP8 linear layer Y = X·W, memory-bound kernels the GEMM itself does not count
    (DeepSeek-V3 report §3.3 and §3.5.2, the workflow it describes):

    * F: X, read in BF16, written in FP8 per 1 × 128 tile for Fprop (``forward_rows`` rows of it, where the rows
      were quantized elsewhere, e.g. once before the dispatch, or shared with another layer: 0);
    * I: dY, read once in BF16, written twice in FP8: per token for Dgrad (dX = dY·Wᵀ) and transposed for Wgrad;
    * W: X for Wgrad: "read out, dequantized, transposed, re-quantized into 128 × 1 tiles, and stored in HBM"
      (§3.5.2), read and written in FP8.

    The weights' FP8 copies are made once a step, not once a micro-batch, and are left out. Bytes only: each kernel
    runs at the HBM's streaming rate (``roofline``)."""
    forward = op.forward[0]
    assert forward.tiles is not None, f"{op.name}: a linear layer's forward is one GEMM"
    count, rows, columns = forward.tiles
    inner = forward.flops / (2.0 * count * rows * columns)  # X is rows × inner, Y rows × columns, count of each
    x_rows = count * rows if forward_rows is None else forward_rows
    return Operation(
        f"FP8 casts of {op.name}",
        "memory-bound",
        (stream(x_rows * inner * (BF16 + FP8_TILE_BYTES)),) if x_rows else (),
        (stream(count * rows * columns * (BF16 + 2 * FP8_TILE_BYTES)),),
        (stream(count * rows * inner * 2 * FP8_TILE_BYTES),),
    )


def in_fp8(op: Operation) -> Operation:
    """A linear layer's GEMMs at the FP8 peak (DeepSeek-V3 report §3.3.1: Fprop, Dgrad, Wgrad) and its kept input
    in FP8, half the bytes (§3.3.2: "cache the activations in FP8 for the backward pass of the Linear operator");
    others as they are."""
    if op.category != "GEMMs" or op.name == "router":
        return op

    def low(kernels: tuple[Kernel, ...]) -> tuple[Kernel, ...]:
        return tuple(dataclasses.replace(kernel, fp8=True) for kernel in kernels)

    return dataclasses.replace(
        op,
        saved=op.saved / 2,
        forward=low(op.forward),
        input_gradient=low(op.input_gradient),
        weight_gradient=low(op.weight_gradient),
    )


def attention_operations(model: ModelSpec, layout: Layout, sh: Shapes) -> list[Operation]:
    """Q, K, V projection, rotary embedding, the core and the output projection (multi-head or grouped-query)."""
    T, h, q, kv = sh.tokens, sh.hidden, sh.query, sh.key_value
    qkv = q + 2 * kv
    split_input = BF16 * sh.split_tokens * h  # a GEMM after an all-gather keeps the pre-gather input
    rope = []
    kept_qkv = BF16 * T * qkv  # Q, K and V, which the attention core keeps (its inputs: kept under selective too)
    if not model.learned_positions:  # rotary embedding: new Q and K replace the product's (fused: keeps nothing)
        rope_bytes = BF16 * T * (q + kv)
        rope = [Operation("rotary embedding", "memory-bound", (stream(2 * rope_bytes),), (stream(2 * rope_bytes),))]
    return [
        linear("QKV projection", T, qkv, h, saved=split_input + kept_qkv),
        *rope,
        *attention_core(model, layout, sh),
        linear("output projection", T, h, q, saved=0.0 if layout.flash_attention else BF16 * T * q),
    ]


def mlp_operations(model: ModelSpec, sh: Shapes) -> list[Operation]:
    """The dense MLP: in (gate and up), SwiGLU or GeLU, out."""
    T, h, f = sh.tokens, sh.hidden, sh.ffn
    split_input = BF16 * sh.split_tokens * h
    gated = 2 if model.gated_mlp else 1
    activation_in = BF16 * T * gated * f
    activation = Operation(
        "SwiGLU" if model.gated_mlp else "GeLU",
        "memory-bound",
        (stream(activation_in + BF16 * T * f),),
        (stream(activation_in + BF16 * T * f + activation_in),),
        saved=activation_in,
    )
    return [
        linear("MLP in" + (" (gate and up)" if model.gated_mlp else ""), T, gated * f, h, saved=split_input),
        activation,
        linear("MLP out", T, h, f, saved=BF16 * T * f),
    ]


def kept_tensors(
    operations: tuple[Operation, ...], model: ModelSpec, layout: Layout, *, statistics: bool = True
) -> list[tuple[str, float]]:
    """What one layer keeps for one micro-batch under the layout's recomputation, by operation: (name, bytes)
    (``statistics=False``: without the per-token statistics, as Korthikanti et al. count). Selective recomputation
    drops what the attention core keeps beyond its inputs; full keeps only the layer's input, T'·h (Korthikanti
    Table 2's 2sbh, divided by t when sequence parallelism splits that input)."""
    shapes = Shapes.of(model, layout)
    if layout.recompute == "full":
        return [("layer input", BF16 * shapes.split_tokens * model.hidden_size)]
    kept = [
        (op.name, op.saved - (0.0 if statistics else op.statistics))
        for op in operations
        if op.saved and not (layout.recompute == "selective" and op.core)
    ]
    dropped_core = any(op.core and op.category == "attention" for op in operations)
    if layout.recompute == "selective" and layout.flash_attention and dropped_core:  # the projection keeps its output
        kept.append(("output projection", BF16 * shapes.tokens * shapes.query))
    return kept


def saved_bytes(operations: tuple[Operation, ...], model: ModelSpec, layout: Layout, *, statistics=True) -> float:
    """Bytes one layer keeps for one micro-batch (``kept_tensors`` summed)."""
    return math.fsum(size for _, size in kept_tensors(operations, model, layout, statistics=statistics))


def embedding_operations(model: ModelSpec, layout: Layout) -> tuple[Operation, ...]:
    """The first stage's extra: the token lookup (and learned positions) writes T'·h; dropout keeps a mask."""
    sh = Shapes.of(model, layout)
    size = BF16 * sh.split_tokens * sh.hidden
    mask = MASK * sh.split_tokens * sh.hidden if model.dropout else 0.0
    return (Operation("embedding", "memory-bound", (stream(2 * size + mask),), (stream(2 * size + mask),), saved=mask),)


def output_operations(model: ModelSpec, layout: Layout) -> tuple[Operation, ...]:
    """The last stage's extra: the final norm, the output GEMM over the vocabulary (V/t per GPU) and the
    cross-entropy, which keeps the logits in FP32 (Korthikanti et al. 2022 §4.3: 4·s·b·V/t)."""
    sh = Shapes.of(model, layout)
    logits = sh.tokens * sh.vocab
    return (
        norm("final norm", model, sh),
        linear("output layer", sh.tokens, sh.vocab, sh.hidden, saved=BF16 * sh.split_tokens * sh.hidden),
        Operation("cross-entropy", "memory-bound", (stream((BF16 + FP32) * logits),),
                  (stream((FP32 + BF16) * logits),), saved=FP32 * logits),
    )  # fmt: skip

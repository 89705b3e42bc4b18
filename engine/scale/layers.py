"""One transformer layer as its operations (``operations``): norms, attention (multi-head, grouped-query or MLA),
the FFN (a dense MLP or an MoE layer's experts, ``experts``) and the residual adds — built once here for time
(``costs``), memory (``memory``) and the page's kept-tensor table (``plan``)."""

from __future__ import annotations

from .experts import mla_operations, moe_operations
from .layout import Layout
from .models import ModelSpec
from .operations import (
    Operation,
    Shapes,
    attention_operations,
    fp8_casts,
    in_fp8,
    mlp_operations,
    norm,
    residual,
)


def layer_operations(model: ModelSpec, layout: Layout, *, moe: bool = False) -> tuple[Operation, ...]:
    """Every operation of one transformer layer, in forward order (recomputation not yet applied: ``saved_bytes``
    and ``roofline`` apply it). ``moe``: the FFN is the model's routed and shared experts; MLA's projections replace
    Q, K and V where the model has them. With ``Layout.fp8`` every linear layer's GEMMs run in FP8 (the router and
    attention's core stay BF16)."""
    sh = Shapes.of(model, layout)
    attention = mla_operations(model, layout, sh) if model.is_mla else attention_operations(model, layout, sh)
    mlp = moe_operations(model, layout, sh) if moe else mlp_operations(model, sh)
    operations = (
        norm("norm 1", model, sh),
        *attention,
        residual("residual 1", model, sh),
        norm("norm 2", model, sh),
        *mlp,
        residual("residual 2", model, sh),
    )
    return tuple(_in_fp8(operations, sh.tokens / layout.tensor_parallel)) if layout.fp8 else operations


ROUTED_IN = "routed experts in (gate and up)"


def _in_fp8(operations: tuple[Operation, ...], local_tokens: float):
    """Each linear layer at the FP8 peak, followed by its quantization kernels (``fp8_casts``). An input is
    quantized once: KV down reads Q down's (MLA: both project the normed hidden state); the routed experts read
    tokens dispatched in FP8, quantized on this GPU before the dispatch (report §3.3.2: T/t rows, not the T·k/t
    copies that arrive), and the shared experts the same quantized tokens."""
    routed = any(op.name == ROUTED_IN for op in operations)
    for op in operations:
        fast = in_fp8(op)
        yield fast
        if fast is op:  # not a linear layer in FP8 (the router stays BF16)
            continue
        if op.name == ROUTED_IN:
            yield fp8_casts(op, forward_rows=local_tokens)
        elif op.name == "KV down" or (op.name == "shared experts in" and routed):
            yield fp8_casts(op, forward_rows=0.0)
        else:
            yield fp8_casts(op)

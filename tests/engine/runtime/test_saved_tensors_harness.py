"""The saved-tensor harness itself (tests/saved_tensors.py): its custom Functions' gradients, its counting, and
its GPT layer against Korthikanti et al. 2022's formula, so that the harness can then judge a planner's."""

from __future__ import annotations

import pytest
import saved_tensors
import torch
from saved_tensors import (
    GptLayer,
    LlamaLayer,
    RmsNorm,
    Rope,
    SwiGlu,
    korthikanti_bytes,
    llama_bytes,
    measure,
    saved_bytes,
)
from torch.autograd import gradcheck
from torch.utils.checkpoint import checkpoint


def test_custom_functions_have_correct_gradients():
    torch.manual_seed(0)
    x = torch.randn(3, 2, 8, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(8, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda x, w: RmsNorm.apply(x, w, 1e-5), (x, weight))
    assert gradcheck(SwiGlu.apply, (torch.randn(3, 2, 10, dtype=torch.float64, requires_grad=True),))
    angles = torch.rand(3, 1, 1, 4, dtype=torch.float64) * 6
    q = torch.randn(3, 2, 2, 4, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda q: Rope.apply(q, angles.cos(), angles.sin()), (q,))


def test_a_storage_counts_once_however_many_views_are_saved():
    base = torch.randn(4, 8, requires_grad=True)

    def two_views(base):
        w = base * 2  # a new storage (mul by a number saves nothing)
        return (w[:2].sin() + w[2:].cos()).sum() + (w * w).sum()  # sin, cos: a view each; w * w: w twice

    saved = saved_bytes(two_views, base)
    assert saved.total == 4 * 8 * 4 and saved.tensors == [((2, 8), torch.float32, 128)]
    assert saved_bytes(two_views, base, skip=[base * 0]).total == 128  # another storage: still counted


def test_parameters_and_buffers_are_skipped_and_inputs_counted():
    linear = torch.nn.Linear(8, 8, bias=False)
    x = torch.randn(5, 8, requires_grad=True)
    saved = saved_bytes(linear, x)  # addmm keeps x and the weight
    assert (saved.total, saved.skipped) == (5 * 8 * 4, 8 * 8 * 4)
    assert saved_bytes(linear, x, skip=()).total == 5 * 8 * 4 + 8 * 8 * 4


@pytest.mark.parametrize("t", [1, 2])
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize(("h", "ffn", "a", "s", "b"), [(64, 256, 4, 32, 2), (96, 200, 6, 24, 3)])
def test_gpt_layer_saves_korthikanti_plus_the_layernorm_statistics(h, ffn, a, s, b, t, recompute):
    """Exactly Table 2 (TP without SP; the second shape's FFN is not 4h, so its MLP reads 4·sbf/t for 16sbh/t),
    plus what the paper leaves out: each LayerNorm's per-token mean and rstd, [s, b, 1] each, bf16 on CPU
    (CUDA keeps them in fp32): 2 norms × 2 × sb × 2 bytes. Full recomputation keeps the input only."""
    saved = measure(GptLayer(h, ffn, a, recompute=recompute, tp=t), s, b, h)
    statistics = [x for x in saved.tensors if x[0] == (s, b, 1)]
    if recompute == "full":
        assert saved.total == korthikanti_bytes(s, b, h, a, t, recompute) == 2 * s * b * h
        assert statistics == []
    else:
        assert saved.total == korthikanti_bytes(s, b, h, a, t, recompute, ffn) + 2 * 2 * s * b * 2
        assert statistics == [((s, b, 1), torch.bfloat16, s * b * 2)] * 4


@pytest.mark.parametrize("t", [1, 2])
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_llama_layer_saves_its_listed_tensors(recompute, t):
    h, ffn, a, kv, s, b = 64, 96, 4, 2, 16, 2
    saved = measure(LlamaLayer(h, ffn, a, kv, recompute=recompute, tp=t), s, b, h)
    assert saved.total == llama_bytes(s, b, h, a, kv, ffn, t, recompute)


def test_sdpa_runs_cpus_flash_kernel_in_bf16():
    """``llama_bytes`` assumes the CPU flash kernel (fp32 logsumexp; its output in q's layout, so the o_proj
    input is a view of it); the math fallback would keep the s² probabilities."""
    q = torch.randn(8, 2, 4, 16, dtype=torch.bfloat16).permute(1, 2, 0, 3).requires_grad_(True)  # [s, b, a, d]
    kv = torch.randn(2, 2, 8, 16, dtype=torch.bfloat16)
    out = saved_tensors.sdpa(q, kv, kv)
    assert type(out.grad_fn).__name__ == "ScaledDotProductFlashAttentionForCpuBackward0"
    assert out.permute(2, 0, 1, 3).is_contiguous()


@pytest.mark.parametrize("recompute", ["selective", "full"])
def test_non_reentrant_checkpoint_counts_the_same(monkeypatch, recompute):
    """torch 2.13's non-reentrant checkpoint hides its region behind its own hooks but saves its inputs outside
    them, so the outer hooks count what reentrant checkpoint keeps."""
    layers = (GptLayer(64, 256, 4, recompute=recompute), LlamaLayer(64, 96, 4, 2, recompute=recompute))
    reentrant = [measure(layer, 16, 2, 64).total for layer in layers]
    monkeypatch.setattr(
        saved_tensors, "checkpoint", lambda f, *args, use_reentrant: checkpoint(f, *args, use_reentrant=False)
    )
    assert [measure(layer, 16, 2, 64).total for layer in layers] == reentrant


@pytest.mark.parametrize(
    "build", [lambda r: GptLayer(32, 64, 4, recompute=r), lambda r: LlamaLayer(32, 64, 4, 2, recompute=r)]
)
def test_recomputation_keeps_the_gradients(build):
    """The checkpointed layers compute what the plain one does, dropout masks included (the RNG is replayed)."""
    grads = []
    for recompute in ("none", "selective", "full"):
        torch.manual_seed(0)
        layer = build(recompute).double().train()
        x = torch.randn(8, 2, 32, dtype=torch.float64, requires_grad=True)
        layer(x).square().sum().backward()
        grads.append([x.grad, *(p.grad for p in layer.parameters())])
    for other in grads[1:]:
        assert all(torch.allclose(g, o) for g, o in zip(grads[0], other, strict=True))

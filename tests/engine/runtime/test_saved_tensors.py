"""The planner's activation count (``engine.scale.operations``) against what torch's autograd really keeps: small
GPT- and Llama-style layers built in torch on the CPU (``tests/saved_tensors.py``), every saved tensor counted
once per storage, for several shapes, both layer styles, one TP rank of 1 or 2 and every recomputation mode."""

import pytest

from engine.scale import Layout
from engine.scale.memory import layer_activation_bytes
from engine.scale.models import custom_model
from tests.saved_tensors import GptLayer, LlamaLayer, measure

SHAPES = [  # (h, ffn, heads, kv heads, s, b)
    (256, 1024, 8, 2, 128, 2),
    (512, 1376, 8, 2, 256, 1),
    (384, 1536, 6, 6, 64, 4),
]
TOLERANCE = 0.005
"""The only difference allowed: the per-token statistics' width (the planner counts FP32, as on a GPU; torch's
CPU LayerNorm keeps them in BF16), at most 0.15 % of a layer here."""


def planned(style: str, h: int, ffn: int, a: int, kv: int, s: int, b: int, t: int, recompute: str) -> float:
    model = custom_model(
        num_layers=1, hidden_size=h, ffn_hidden_size=ffn, num_attention_heads=a, num_kv_heads=kv if style == "llama"
        else a, vocab_size=1000, seq_length=s, style=style,
    )  # fmt: skip
    layout = Layout(
        tensor_parallel=t, pipeline_parallel=1, data_parallel=1, global_batch=b, microbatch_size=b, family="1f1b",
        split="even", recompute=recompute, sequence_parallel=False, flash_attention=style == "llama", zero=0,
    )  # fmt: skip
    return layer_activation_bytes(model, layout)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda shape: "h{}-f{}-a{}-kv{}-s{}-b{}".format(*shape))
@pytest.mark.parametrize("t", [1, 2])
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("style", ["gpt", "llama"])
def test_planned_activations_are_what_autograd_saves(style, recompute, t, shape):
    h, ffn, a, kv, s, b = shape
    layer = (
        GptLayer(h, ffn, a, recompute=recompute, tp=t)
        if style == "gpt"
        else LlamaLayer(h, ffn, a, kv, recompute=recompute, tp=t)
    )
    measured = measure(layer, s, b, h).total
    assert planned(style, h, ffn, a, kv, s, b, t, recompute) == pytest.approx(measured, rel=TOLERANCE)

"""Toy models, their data and their split into stages."""

import re

import pytest
import torch

from engine.model_config import ModelConfig, partition
from engine.models import ToyModel, make_batch, split_model
from engine.runtime.stage import accumulate_weight_gradient


@pytest.mark.parametrize(
    "layers, stages, rule, expected",
    [
        (8, 4, "balanced", [2, 2, 2, 2]),
        (10, 4, "balanced", [3, 3, 2, 2]),
        (14, 4, "llama3", [3, 4, 4, 3]),  # 16 "layers" with embedding and head, one fewer block at each end
        (6, 2, "llama3", [3, 3]),
        (7, 4, "llama3", [1, 3, 2, 1]),  # the remainder goes to the middle: the ends stay one block fewer
        (5, 1, "llama3", [5]),
        (18, 4, "4,5,5,4", [4, 5, 5, 4]),
        (9, 3, [0, 9, 0], [0, 9, 0]),
    ],
)
def test_partition(layers, stages, rule, expected):
    counts = partition(layers, stages, rule)
    assert counts == expected and sum(counts) == layers


@pytest.mark.parametrize(
    "layers, stages, rule, message",
    [
        (3, 4, "balanced", "3 blocks cannot fill 4 stages"),
        (18, 4, "4,5,5", "has 3 entries for 4 stages"),
        (18, 4, "4,5,5,5", "covers 19 blocks, the model has 18: 4 + 5 + 5 + 5 = 19"),
        (9, 3, "4,0,5", "leaves stage 1 empty"),
        (9, 3, "a,b,c", "partition must be balanced, llama3 or blocks per stage as whole numbers ≥ 0"),
        (1, 4, "llama3", "leaves a middle stage empty"),
    ],
)
def test_partition_errors_show_the_arithmetic(layers, stages, rule, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        partition(layers, stages, rule)


@pytest.mark.parametrize("kind", ["mlp", "gpt"])
def test_models_are_seeded_and_the_split_computes_the_same_loss(kind):
    config = ModelConfig(kind=kind, layers=4, hidden=32, batch=8, seq_len=8, vocab=16)
    x, target = make_batch(config)
    again_x, _ = make_batch(config)
    assert torch.equal(x, again_x)
    whole = ToyModel(config)
    assert torch.equal(next(whole.parameters()), next(ToyModel(config).parameters()))
    y = x
    for stage in split_model(whole, [1, 2, 0, 1]):
        y = stage(y, target)
    assert torch.allclose(y, whole(x, target))


def test_gpt_rejects_hidden_not_divisible_by_heads():
    with pytest.raises(ValueError, match=r"hidden \(30\) must be a multiple of heads \(4\): 30 = 7×4 \+ 2"):
        ModelConfig(kind="gpt", hidden=30, heads=4)


@pytest.mark.parametrize(
    "layer, x",
    [
        (torch.nn.Linear(5, 3), torch.randn(2, 4, 5)),
        (torch.nn.LayerNorm(5), torch.randn(2, 4, 5)),
        (torch.nn.Embedding(7, 5), torch.randint(7, (2, 4))),
    ],
)
def test_weight_gradient_formulas_match_autograd(layer, x):
    """W's per-layer formulas against autograd's gradient of the same layer."""
    layer = layer.double()
    if x.is_floating_point():
        x = x.double()
    g = torch.randn_like(layer(x))
    layer(x).backward(g)
    expected = {name: p.grad.clone() for name, p in layer.named_parameters()}
    layer.zero_grad(set_to_none=True)
    accumulate_weight_gradient(layer, x, g)
    for name, parameter in layer.named_parameters():
        torch.testing.assert_close(parameter.grad, expected[name])

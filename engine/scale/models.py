"""Transformer model specs from published architectures, their exact parameter counts and their FLOPs.

Legend (Narayanan et al. 2021, Korthikanti et al. 2022): l layers, h hidden size, f FFN size, a attention
heads, k key/value heads, d = h/a head size, V vocabulary, s sequence length, b sequences per micro-batch,
B sequences per step.

Two ways to count, kept apart on purpose:

* the closed forms of Narayanan et al. 2021 ("Efficient Large-Scale Language Model Training on GPU Clusters
  Using Megatron-LM", SC'21): Eq. 2 for parameters and Eq. 3 for FLOPs per iteration. They hold for
  GPT-style layers (f = 4h, k = a, GeLU MLP, biases, LayerNorm, tied embeddings, learned positions).
* the exact count from the layer's matrices (``ModelSpec.parameter_count``, ``ModelSpec.layer_flops``),
  which also covers grouped-query attention and SwiGLU (Llama 3). For a GPT-style model it agrees with
  Eq. 2 up to the final LayerNorm's 2h, and its FLOPs with full recomputation equal Eq. 3 exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ..limits import MAX_FFN, MAX_HEADS, MAX_HIDDEN, MAX_LAYERS, MAX_SEQUENCE, MAX_VOCAB, whole_number

NORMS = ("layernorm", "rmsnorm")


class LayerFlops(NamedTuple):
    """Forward FLOPs of one transformer layer on one micro-batch, in the two parts the backward treats
    differently (a FLOP is a multiply or an add: a matrix product of m×n by n×p is 2mnp)."""

    weights: float
    """Products with a weight matrix: 2 × tokens × the layer's matrix parameters. The backward repeats each
    once for the input gradient (I) and once for the weight gradient (W)."""
    attention: float
    """Q·Kᵀ and the scores times V: 4·b·s²·h (Narayanan et al. 2021, appendix). No weights: the backward
    computes both operands' gradients, 2× this, all in I."""

    @property
    def forward(self) -> float:
        return self.weights + self.attention


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer: the sizes that decide parameters, FLOPs and activation bytes."""

    name: str
    """Registry key, e.g. "llama3-405b"; "custom" for a hand-made one."""
    title: str
    """How the page names it."""
    num_layers: int
    """l: transformer layers."""
    hidden_size: int
    """h: model (residual stream) width."""
    ffn_hidden_size: int
    """f: inner width of the MLP (4h for GPT-3; 3.5h-ish for Llama 3's SwiGLU)."""
    num_attention_heads: int
    """a: query heads; must divide h."""
    num_kv_heads: int
    """k: key/value heads (k = a: multi-head attention; k < a: grouped-query attention); must divide a."""
    vocab_size: int
    """V: vocabulary (padded as trained)."""
    seq_length: int
    """s: the sequence length the model was trained at (a layout may override it)."""
    tied_embeddings: bool = False
    """True when the output layer reuses the input embedding matrix (GPT-3); False for Llama 3."""
    gated_mlp: bool = True
    """True for SwiGLU (three f×h matrices), False for a GeLU MLP (two)."""
    norm: str = "rmsnorm"
    """"layernorm" (weight and bias) or "rmsnorm" (weight only)."""
    linear_biases: bool = False
    """True when every linear layer has a bias (GPT-3), False for Llama 3."""
    learned_positions: bool = False
    """True for a learned position table of s × h (GPT-3), False for rotary embeddings (Llama 3)."""
    dropout: bool = False
    """True when the layer has dropout (GPT-3, Megatron's default 0.1 on attention probabilities and hidden
    states; masks of one byte are kept for the backward), False for Llama 3 (none)."""
    source: str = ""
    """Where the sizes come from."""

    def __post_init__(self) -> None:
        who = f"model {self.name}"
        whole_number("layers", self.num_layers, 1, MAX_LAYERS, who)
        whole_number("hidden size", self.hidden_size, 1, MAX_HIDDEN, who)
        whole_number("FFN size", self.ffn_hidden_size, 1, MAX_FFN, who)
        whole_number("attention heads", self.num_attention_heads, 1, MAX_HEADS, who)
        whole_number("key/value heads", self.num_kv_heads, 1, MAX_HEADS, who)
        whole_number("vocabulary", self.vocab_size, 1, MAX_VOCAB, who)
        whole_number("sequence length", self.seq_length, 1, MAX_SEQUENCE, who)
        h, a, k = self.hidden_size, self.num_attention_heads, self.num_kv_heads
        if h % a:
            raise ValueError(
                f"{who}: attention heads ({a}) must divide the hidden size ({h}): {h} = {h // a}×{a} + {h % a}"
            )
        if a % k:
            raise ValueError(
                f"{who}: key/value heads ({k}) must divide the attention heads ({a}): {a} = {a // k}×{k} + {a % k}"
            )
        if self.norm not in NORMS:
            raise ValueError(f"{who}: norm must be one of {', '.join(NORMS)}, got {self.norm!r}")

    # -- shapes ---------------------------------------------------------------------------------------------
    @property
    def head_size(self) -> int:
        """d = h / a."""
        return self.hidden_size // self.num_attention_heads

    @property
    def kv_size(self) -> int:
        """Width of the keys (and of the values): k·d; equals h without grouped-query attention."""
        return self.num_kv_heads * self.head_size

    @property
    def is_gpt_style(self) -> bool:
        """True when Narayanan et al.'s Eq. 2 and Eq. 3 describe this model (their assumptions, §5.1)."""
        return (
            self.ffn_hidden_size == 4 * self.hidden_size
            and self.num_kv_heads == self.num_attention_heads
            and not self.gated_mlp
            and self.norm == "layernorm"
            and self.linear_biases
            and self.tied_embeddings
            and self.learned_positions
            and self.dropout
        )

    # -- parameters -------------------------------------------------------------------------------------------
    @property
    def layer_matrix_parameters(self) -> int:
        """Weights in one layer's matrices: Q (h·h), K and V (h·k·d each), the output projection (h·h), and
        the MLP (2 or 3 matrices of h·f). GPT-3: 3h² + h² + 8h² = 12h² (Narayanan et al. 2021, Eq. 2)."""
        h, f = self.hidden_size, self.ffn_hidden_size
        mlp_matrices = 3 if self.gated_mlp else 2
        return h * (h + 2 * self.kv_size) + h * h + mlp_matrices * h * f

    @property
    def layer_parameters(self) -> int:
        """Every parameter of one layer: its matrices, their biases and its two norms.
        GPT-3: 12h² + 13h (biases 3h + h + 4h + h = 9h; two LayerNorms 4h)."""
        h, f = self.hidden_size, self.ffn_hidden_size
        biases = 0
        if self.linear_biases:
            mlp_bias = (2 * f if self.gated_mlp else f) + h
            biases = (h + 2 * self.kv_size) + h + mlp_bias
        norms = 2 * self.norm_parameters
        return self.layer_matrix_parameters + biases + norms

    @property
    def norm_parameters(self) -> int:
        """One norm: weight and bias (LayerNorm, 2h) or weight only (RMSNorm, h)."""
        return (2 if self.norm == "layernorm" else 1) * self.hidden_size

    @property
    def embedding_parameters(self) -> int:
        """The input side: the token embedding V·h, plus the position table s·h when positions are learned."""
        positions = self.seq_length * self.hidden_size if self.learned_positions else 0
        return self.vocab_size * self.hidden_size + positions

    @property
    def output_parameters(self) -> int:
        """The output side: the final norm, plus the V·h output matrix unless it is the embedding's (tied)."""
        return self.norm_parameters + (0 if self.tied_embeddings else self.vocab_size * self.hidden_size)

    def parameter_count(self) -> int:
        """Exact parameters: l layers, the embedding and the output side (a tied matrix counted once).
        Llama 3 8B: 8,030,261,248; 70B: 70,553,706,496; 405B: 405,853,388,800."""
        return self.num_layers * self.layer_parameters + self.embedding_parameters + self.output_parameters

    # -- FLOPs ----------------------------------------------------------------------------------------------------
    def layer_flops(self, sequences: int, seq_length: int) -> LayerFlops:
        """Forward FLOPs of one layer on ``sequences`` × ``seq_length`` tokens (Narayanan et al. 2021, appendix:
        24bsh² + 4bs²h for a GPT-3 layer). Attention is counted over the full s × s square, as they do."""
        tokens = sequences * seq_length
        return LayerFlops(
            weights=2.0 * tokens * self.layer_matrix_parameters,
            attention=4.0 * sequences * seq_length**2 * self.hidden_size,
        )

    def logits_flops(self, sequences: int, seq_length: int) -> float:
        """Forward FLOPs of the output layer: 2·b·s·h·V (Narayanan et al. 2021, appendix)."""
        return 2.0 * sequences * seq_length * self.hidden_size * self.vocab_size


def narayanan_parameters(num_layers: int, hidden_size: int, vocab_size: int, seq_length: int) -> float:
    """Narayanan et al. 2021, Eq. 2: P = 12·l·h²·(1 + 13/(12h) + (V + s)/(12·l·h))."""
    layers, h, v, s = num_layers, hidden_size, vocab_size, seq_length
    return 12 * layers * h**2 * (1 + 13 / (12 * h) + (v + s) / (12 * layers * h))


def narayanan_flops(batch: int, seq_length: int, num_layers: int, hidden_size: int, vocab_size: int) -> float:
    """Narayanan et al. 2021, Eq. 3: FLOPs per iteration F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)).

    It counts the GEMMs of a forward, a backward (2× the forward) and the recomputed forward of full
    activation recomputation on every layer (4 passes), and 3 passes of the logit layer."""
    b, s, layers, h, v = batch, seq_length, num_layers, hidden_size, vocab_size
    return 96 * b * s * layers * h**2 * (1 + s / (6 * h) + v / (16 * layers * h))


# The presets. Sizes are as published; each cites where.
LLAMA3_SOURCE = (
    "Llama Team, 'The Llama 3 Herd of Models' (2024), Table 3 (layers, model and FFN dimension, heads, 8 key/value "
    "heads, SwiGLU, RoPE); vocabulary 128,256 as released (the table rounds it to 128,000); 8K pre-training "
    "sequence (§3.4)"
)


def _gpt_style(name: str, title: str, layers: int, hidden: int, heads: int, source: str) -> ModelSpec:
    """A GPT-3-style model: f = 4h, multi-head attention, GeLU, LayerNorm, biases, tied embeddings, learned
    positions, V = 51,200 and s = 2,048 (Narayanan et al. 2021 §5.1)."""
    return ModelSpec(
        name,
        title,
        num_layers=layers,
        hidden_size=hidden,
        ffn_hidden_size=4 * hidden,
        num_attention_heads=heads,
        num_kv_heads=heads,
        vocab_size=51_200,
        seq_length=2_048,
        tied_embeddings=True,
        gated_mlp=False,
        norm="layernorm",
        linear_biases=True,
        learned_positions=True,
        dropout=True,
        source=source,
    )


def _llama3(name: str, title: str, layers: int, hidden: int, ffn: int, heads: int) -> ModelSpec:
    """A Llama 3 model: 8 key/value heads, SwiGLU, RMSNorm, no biases, RoPE, untied output, V = 128,256."""
    return ModelSpec(
        name,
        title,
        num_layers=layers,
        hidden_size=hidden,
        ffn_hidden_size=ffn,
        num_attention_heads=heads,
        num_kv_heads=8,
        vocab_size=128_256,
        seq_length=8_192,
        source=LLAMA3_SOURCE,
    )


NARAYANAN_TABLE_1_MODELS = (
    ("1.7b", 1.7, 24, 2304, 24),
    ("3.6b", 3.6, 32, 3072, 30),
    ("7.5b", 7.5, 32, 4096, 36),
    ("18b", 18.4, 48, 6144, 40),
    ("39b", 39.1, 64, 8192, 48),
    ("76b", 76.1, 80, 10240, 60),
    ("145b", 145.6, 96, 12288, 80),
    ("310b", 310.1, 128, 16384, 96),
    ("530b", 529.6, 128, 20480, 105),
    ("1t", 1008.0, 160, 25600, 128),
)
"""Narayanan et al. 2021, Table 1: (key, published billions of parameters, heads, hidden size, layers)."""

MODEL_PRESETS: dict[str, ModelSpec] = {
    model.name: model
    for model in (
        _gpt_style(
            "gpt3-175b",
            "GPT-3 175B",
            layers=96,
            hidden=12_288,
            heads=96,
            source="Brown et al. 2020, 'Language Models are Few-Shot Learners', Table 2.1 (96 layers, d_model 12288, "
            "96 heads, context 2048); vocabulary padded to 51,200 as in Narayanan et al. 2021 §5.1 (174.6B, Table 2)",
        ),
        *(
            _gpt_style(
                f"megatron-{size}",
                f"Megatron GPT {size.upper()}",
                layers=layers,
                hidden=hidden,
                heads=heads,
                source=f"Narayanan et al. 2021, Table 1 ({published}B parameters, {heads} heads, hidden {hidden}, "
                f"{layers} layers; V = 51,200 and s = 2048 for all models, §5.1)",
            )
            for size, published, heads, hidden, layers in NARAYANAN_TABLE_1_MODELS
        ),
        _llama3("llama3-8b", "Llama 3 8B", layers=32, hidden=4_096, ffn=14_336, heads=32),
        _llama3("llama3-70b", "Llama 3 70B", layers=80, hidden=8_192, ffn=28_672, heads=64),
        _llama3("llama3-405b", "Llama 3 405B", layers=126, hidden=16_384, ffn=53_248, heads=128),
    )
}
"""The published architectures, by key."""


def model_named(name: str) -> ModelSpec:
    """A preset by key; ValueError listing the keys for an unknown one."""
    try:
        return MODEL_PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; choose one of: {', '.join(MODEL_PRESETS)}, or custom") from None


MODEL_STYLES = ("llama", "gpt")
"""A custom model's layer: "llama" (SwiGLU, RMSNorm, no biases, rotary positions) or "gpt" (GeLU MLP,
LayerNorm, biases, learned positions)."""


def custom_model(
    *,
    num_layers: int,
    hidden_size: int,
    num_attention_heads: int,
    vocab_size: int,
    seq_length: int,
    ffn_hidden_size: int | None = None,
    num_kv_heads: int | None = None,
    tied_embeddings: bool = False,
    style: str = "llama",
) -> ModelSpec:
    """A hand-made model: FFN size 4h and key/value heads = heads unless given."""
    if style not in MODEL_STYLES:
        raise ValueError(f"model style must be one of {', '.join(MODEL_STYLES)}, got {style!r}")
    gpt = style == "gpt"
    return ModelSpec(
        "custom",
        f"custom {num_layers}-layer model",
        num_layers=num_layers,
        hidden_size=hidden_size,
        ffn_hidden_size=4 * hidden_size if ffn_hidden_size is None else ffn_hidden_size,
        num_attention_heads=num_attention_heads,
        num_kv_heads=num_attention_heads if num_kv_heads is None else num_kv_heads,
        vocab_size=vocab_size,
        seq_length=seq_length,
        tied_embeddings=tied_embeddings,
        gated_mlp=not gpt,
        norm="layernorm" if gpt else "rmsnorm",
        linear_biases=gpt,
        learned_positions=gpt,
        dropout=gpt,
        source="entered by hand",
    )

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
    # -- mixture of experts and multi-head latent attention (``engine.scale.experts``): all 0 for a dense model
    experts: int = 0
    """Routed experts in each MoE layer (0: every layer's FFN is dense)."""
    experts_per_token: int = 0
    """Top-k: routed experts each token goes to."""
    shared_experts: int = 0
    """Experts every token goes to, beside its k routed ones (DeepSeek-V3: 1)."""
    expert_ffn_size: int = 0
    """Inner width of one expert's SwiGLU MLP."""
    dense_layers: int = 0
    """The first layers keep a dense FFN of ``ffn_hidden_size`` (DeepSeek-V3: 3)."""
    node_limit: int = 0
    """Node-limited routing: the most nodes one token's experts sit on (DeepSeek-V3: 4; 0: no limit)."""
    head_dim: int = 0
    """Query/key head size when it is not h/a (Qwen3's 128; MLA's no-position part); 0: h/a."""
    q_lora_rank: int = 0
    """MLA: the queries' compressed width (0: no MLA)."""
    kv_lora_rank: int = 0
    """MLA: the keys' and values' compressed latent width (0: no MLA)."""
    rope_head_dim: int = 0
    """MLA: the rotary part of each query and key head (shared by every head for the key)."""
    value_head_dim: int = 0
    """MLA: each head's value width."""
    mtp_modules: int = 0
    """Multi-token prediction modules after the last layer (DeepSeek-V3: 1, on the last pipeline stage)."""

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
        """d = h / a, or ``head_dim`` where the model sets it."""
        return self.head_dim or self.hidden_size // self.num_attention_heads

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def moe_layers(self) -> int:
        """Layers whose FFN is routed experts: all but the first ``dense_layers``."""
        return self.num_layers - self.dense_layers if self.is_moe else 0

    @property
    def query_key_head(self) -> int:
        """Each head's query and key width: d, plus MLA's rotary part."""
        return self.head_size + self.rope_head_dim

    @property
    def value_head(self) -> int:
        return self.value_head_dim or self.head_size

    @property
    def attention_matrix_parameters(self) -> int:
        """Attention's weights. Without MLA: Q (h·a·d), K and V (h·k·d each), the output (a·d·h). With MLA
        (DeepSeek-V2 §2.1, DeepSeek-V3 config.json): Q down h·q_c and up q_c·a·(d + d_r); the keys' and values'
        latent and the shared rotary key h·(kv_c + d_r), up kv_c·a·(d + d_v); the output a·d_v·h."""
        h, a = self.hidden_size, self.num_attention_heads
        if self.is_mla:
            q_c, kv_c, d_r = self.q_lora_rank, self.kv_lora_rank, self.rope_head_dim
            return (h * q_c + q_c * a * self.query_key_head + h * (kv_c + d_r)
                    + kv_c * a * (self.head_size + self.value_head) + a * self.value_head * h)  # fmt: skip
        q = a * self.head_size
        return h * (q + 2 * self.kv_size) + q * h

    @property
    def expert_parameters(self) -> int:
        """One expert: a SwiGLU MLP of three h × f_e matrices."""
        return 3 * self.hidden_size * self.expert_ffn_size

    @property
    def moe_layer_parameters(self) -> int:
        """One MoE layer: attention, the router (E × h), the shared and the routed experts, two norms (and MLA's
        two latent norms)."""
        return (self.attention_matrix_parameters + self.experts * self.hidden_size + self._latent_norms
                + (self.experts + self.shared_experts) * self.expert_parameters + 2 * self.norm_parameters)  # fmt: skip

    @property
    def moe_layer_active_parameters(self) -> int:
        """What one token uses of an MoE layer: its k routed experts and the shared ones, not the other E − k."""
        return self.moe_layer_parameters - (self.experts - self.experts_per_token) * self.expert_parameters

    @property
    def _latent_norms(self) -> int:
        return self.q_lora_rank + self.kv_lora_rank if self.is_mla else 0

    @property
    def mtp_parameters(self) -> int:
        """One multi-token prediction module (DeepSeek-V3 §2.2): an MoE layer, the projection of the two joined
        inputs (2h × h) and two norms; it shares the embedding and the output head."""
        return self.moe_layer_parameters + 2 * self.hidden_size**2 + 2 * self.norm_parameters

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
        return self.attention_matrix_parameters + mlp_matrices * h * f

    @property
    def layer_parameters(self) -> int:
        """Every parameter of one layer: its matrices, their biases and its two norms.
        GPT-3: 12h² + 13h (biases 3h + h + 4h + h = 9h; two LayerNorms 4h)."""
        h, f = self.hidden_size, self.ffn_hidden_size
        biases = 0
        if self.linear_biases:
            mlp_bias = (2 * f if self.gated_mlp else f) + h
            biases = (h + 2 * self.kv_size) + h + mlp_bias
        norms = 2 * self.norm_parameters + self._latent_norms
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
        Llama 3 8B: 8,030,261,248; 70B: 70,553,706,496; 405B: 405,853,388,800. An MoE model counts every expert
        (``active_parameter_count``: what one token uses) and its MTP modules."""
        dense = self.num_layers - self.moe_layers
        layers = dense * self.layer_parameters + self.moe_layers * self.moe_layer_parameters
        return layers + self.mtp_modules * self.mtp_parameters + self.embedding_parameters + self.output_parameters

    def active_parameter_count(self) -> int:
        """Parameters one token goes through: the total less each MoE layer's E − k unused routed experts and the
        MTP modules (DeepSeek-V3's "37B activated" counts neither)."""
        unused = self.moe_layers * (self.experts - self.experts_per_token) * self.expert_parameters
        return self.parameter_count() - unused - self.mtp_modules * self.mtp_parameters

    # -- FLOPs ----------------------------------------------------------------------------------------------------
    def layer_flops(self, sequences: int, seq_length: int) -> LayerFlops:
        """Forward FLOPs of one layer on ``sequences`` × ``seq_length`` tokens (Narayanan et al. 2021, appendix:
        24bsh² + 4bs²h for a GPT-3 layer). Attention is counted over the full s × s square, as they do."""
        tokens = sequences * seq_length
        widths = self.num_attention_heads * (self.query_key_head + self.value_head)  # 2h without MLA
        return LayerFlops(
            weights=2.0 * tokens * self.layer_matrix_parameters,
            attention=2.0 * sequences * seq_length**2 * widths,
        )

    def stack_flops(self, sequences: int, seq_length: int) -> LayerFlops:
        """Forward FLOPs of all l layers: the dense ones' (``layer_flops``) and the MoE ones' for the experts a
        token goes to (2 × tokens × active matrix parameters; the router counted)."""
        one = self.layer_flops(sequences, seq_length)
        dense = self.num_layers - self.moe_layers
        active = self.moe_layer_active_parameters - 2 * self.norm_parameters - self._latent_norms
        moe = 2.0 * sequences * seq_length * active
        return LayerFlops(dense * one.weights + self.moe_layers * moe, self.num_layers * one.attention)

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

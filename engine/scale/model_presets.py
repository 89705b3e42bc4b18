"""The published architectures the planner knows by name (GPT-3, Megatron-LM's GPTs, Llama 3, DeepSeek-V3, Qwen3's
mixtures of experts), each with its source; ``engine.scale.models`` holds what a model is (``ModelSpec``).
"""

from __future__ import annotations

from .models import ModelSpec

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
        ModelSpec(
            "deepseek-v3",
            "DeepSeek-V3 (671B, 37B active)",
            num_layers=61,
            hidden_size=7_168,
            ffn_hidden_size=18_432,
            num_attention_heads=128,
            num_kv_heads=128,
            vocab_size=129_280,
            seq_length=4_096,
            experts=256,
            experts_per_token=8,
            shared_experts=1,
            expert_ffn_size=2_048,
            dense_layers=3,
            node_limit=4,
            head_dim=128,
            q_lora_rank=1_536,
            kv_lora_rank=512,
            rope_head_dim=64,
            value_head_dim=128,
            mtp_modules=1,
            source="deepseek-ai/DeepSeek-V3 inference/configs/config_671B.json (dim 7168, inter_dim 18432, "
            "moe_inter_dim 2048, 61 layers, 3 dense, 128 heads, 256 routed + 1 shared experts, 8 activated, "
            "4 of 8 expert groups, q_lora_rank 1536, kv_lora_rank 512, head dims 128 + 64 rotary, v 128, vocabulary "
            "129,280); DeepSeek-V3 report §2.2 (one MTP module), §3.2.2 (each token to at most 4 nodes), §4.2 "
            "(4K pre-training sequences)",
        ),
        ModelSpec(
            "qwen3-30b-a3b",
            "Qwen3 30B-A3B",
            num_layers=48,
            hidden_size=2_048,
            ffn_hidden_size=6_144,
            num_attention_heads=32,
            num_kv_heads=4,
            vocab_size=151_936,
            seq_length=4_096,
            experts=128,
            experts_per_token=8,
            expert_ffn_size=768,
            head_dim=128,
            source="Qwen/Qwen3-30B-A3B config.json (hidden 2048, 48 layers, every one MoE: decoder_sparse_step 1, "
            "32 heads, 4 key/value heads of 128, 128 experts of 768, 8 per token, vocabulary 151,936, untied)",
        ),
        ModelSpec(
            "qwen3-235b-a22b",
            "Qwen3 235B-A22B",
            num_layers=94,
            hidden_size=4_096,
            ffn_hidden_size=12_288,
            num_attention_heads=64,
            num_kv_heads=4,
            vocab_size=151_936,
            seq_length=4_096,
            experts=128,
            experts_per_token=8,
            expert_ffn_size=1_536,
            head_dim=128,
            source="Qwen/Qwen3-235B-A22B config.json (hidden 4096, 94 layers, every one MoE, 64 heads, 4 key/value "
            "heads of 128, 128 experts of 1536, 8 per token, vocabulary 151,936, untied)",
        ),
    )
}
"""The published architectures, by key."""


def model_named(name: str) -> ModelSpec:
    """A preset by key; ValueError listing the keys for an unknown one."""
    try:
        return MODEL_PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; choose one of: {', '.join(MODEL_PRESETS)}, or custom") from None

"""Real scale (engine.scale): every formula against a hand calculation written here, the papers' own numbers,
the memory peak against the simulator for every family, the CLI's JSON and its one-line refusals."""

import dataclasses
import math
import re

import pytest

from engine import FAMILIES, UNIT, build_schedule, simulate
from engine.scale import (
    GPU_PRESETS,
    LAYOUT_PRESETS,
    MODEL_PRESETS,
    GpuSpec,
    Layout,
    ModelSpec,
    narayanan_flops,
    narayanan_parameters,
    plan,
    plan_preset,
)
from engine.scale.costs import step_flops
from engine.scale.memory import ModelStateBytes, layer_activation_bytes
from engine.scale.models import custom_model
from engine.scale.torchtitan import torchtitan_toml

H100 = GPU_PRESETS["h100"]


@pytest.fixture(scope="module")
def llama_as_trained():
    return plan_preset("llama3-405b-as-trained")


@pytest.fixture(scope="module")
def megatron_1t():
    return plan_preset("megatron-1t")


def small_model(layers=16, style="gpt", **sizes) -> ModelSpec:
    """A model small enough to simulate many times: 16 layers, h 1024, 16 heads."""
    base = dict(num_layers=layers, hidden_size=1024, num_attention_heads=16, vocab_size=32_000, seq_length=2048)
    return custom_model(**{**base, **sizes}, style=style)


def small_layout(**changes) -> Layout:
    base = dict(tensor_parallel=2, pipeline_parallel=4, data_parallel=2, global_batch=16, family="1f1b", split="even")
    return Layout(**{**base, **changes})


# -- parameters: Narayanan et al. 2021 Eq. 2, and exact counts ----------------------------------------------------
def test_eq2_gives_gpt3_175b_and_megatron_1t_as_published():
    L, h, v, s = 96, 12_288, 51_200, 2_048
    by_hand = 12 * L * h * h + 13 * L * h + (v + s) * h  # Eq. 2 multiplied out
    assert narayanan_parameters(L, h, v, s) == pytest.approx(by_hand, rel=1e-12)
    assert round(by_hand / 1e9, 1) == 174.6  # Narayanan et al. 2021, Table 2
    L, h = 128, 25_600
    assert round(narayanan_parameters(L, h, v, s) / 1e9, 1) == 1008.0  # Table 1, last row


def test_exact_count_of_a_gpt_model_is_eq2_plus_the_final_layernorm():
    for name in ("gpt3-175b", "megatron-1t"):
        model = MODEL_PRESETS[name]
        L, h, v, s = model.num_layers, model.hidden_size, model.vocab_size, model.seq_length
        assert model.parameter_count() == 12 * L * h * h + 13 * L * h + (v + s) * h + 2 * h


@pytest.mark.parametrize(
    "name, layers, hidden, ffn, heads, published",
    [
        ("llama3-8b", 32, 4096, 14336, 32, "8.03"),
        ("llama3-70b", 80, 8192, 28672, 64, "70.6"),
        ("llama3-405b", 126, 16384, 53248, 128, "405.9"),
    ],
)
def test_llama3_exact_parameter_counts(name, layers, hidden, ffn, heads, published):
    v, kv = 128_256, 8
    kv_width = kv * hidden // heads
    per_layer = hidden * hidden + 2 * hidden * kv_width + hidden * hidden + 3 * hidden * ffn + 2 * hidden
    by_hand = layers * per_layer + 2 * v * hidden + hidden  # embedding, untied output, final RMSNorm
    count = MODEL_PRESETS[name].parameter_count()
    assert count == by_hand
    assert f"{count / 1e9:.{len(published.split('.')[1])}f}" == published


# -- FLOPs: Eq. 3 ------------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_eq3_for_megatron_1t_and_the_aggregate_at_52_percent(megatron_1t):
    B, s, L, h, v = 3072, 2048, 128, 25_600, 51_200
    by_hand = 96 * B * s * L * h**2 + 16 * B * s**2 * L * h + 6 * B * s * h * v  # Eq. 3 multiplied out
    assert narayanan_flops(B, s, L, h, v) == pytest.approx(by_hand, rel=1e-12)
    assert megatron_1t.flops_closed_form == pytest.approx(by_hand, rel=1e-12)
    # full recomputation: the plan's hardware FLOPs are Eq. 3 exactly; model FLOPs drop the recomputed forward
    assert megatron_1t.hardware_flops_per_step == pytest.approx(by_hand, rel=1e-12)
    three_passes = 72 * B * s * L * h**2 + 12 * B * s**2 * L * h + 6 * B * s * h * v
    assert megatron_1t.model_flops_per_step == pytest.approx(three_passes)
    # calibrated on this run (163 TFLOP/s per GPU): the aggregate is the paper's 502.0 PF/s within its rounding
    assert megatron_1t.achieved_flops_per_second / 1e15 == pytest.approx(502.0, rel=0.005)


def test_model_flops_are_three_passes_and_recomputation_adds_its_forward():
    model, layout = (
        MODEL_PRESETS["gpt3-175b"],
        Layout(tensor_parallel=8, pipeline_parallel=8, data_parallel=24, global_batch=1536, split="even"),
    )
    B, s, L, h, v = 1536, 2048, 96, 12_288, 51_200
    forward_layer = 24 * B * s * h * h + 4 * B * s * s * h  # Narayanan appendix: 24Bsh² + 4Bs²h per layer
    model_flops = 3 * (L * forward_layer + 2 * B * s * h * v)
    for recompute, extra in (("none", 0), ("selective", L * 4 * B * s * s * h), ("full", L * forward_layer)):
        got = step_flops(model, dataclasses.replace(layout, recompute=recompute))
        assert got == pytest.approx((model_flops, model_flops + extra), rel=1e-12)


# -- model states: ZeRO ------------------------------------------------------------------------------------------------
def test_megatron_bytes_per_parameter_and_zero():
    psi, d = 7.5e9, 64
    layout = Layout(data_parallel=d)
    # Megatron-LM's table (docs/api-guide/dist_optimizer.md), bf16 parameters with fp32 gradients: 18 bytes, and
    # 6 + 12/d with its distributed optimizer (ZeRO-1)
    expected = {0: 18 * psi, 1: (6 + 12 / d) * psi, 2: (2 + 16 / d) * psi, 3: 18 * psi / d}
    for zero, total in expected.items():
        assert ModelStateBytes.of(psi, dataclasses.replace(layout, zero=zero)).total == pytest.approx(total)
    # with 16-bit gradients, Rajbhandari et al.'s Figure 1 example: 120, 31.4, 16.6 and 1.9 GB
    bf16 = dataclasses.replace(layout, gradient_precision="bf16")
    totals = [ModelStateBytes.of(psi, dataclasses.replace(bf16, zero=zero)).total for zero in range(4)]
    assert [round(total / 1e9, 1) for total in totals] == [120.0, 31.4, 16.6, 1.9]


def test_plan_memory_holds_each_ranks_parameters_over_tp(llama_as_trained):
    model = MODEL_PRESETS["llama3-405b"]
    rank1 = llama_as_trained.memory[1]  # stages 1, 17, …, 113: one layer each, nothing else
    assert rank1.stages == tuple(range(1, 128, 16)) and rank1.layers == 8
    psi = 8 * model.layer_parameters / 8
    assert rank1.parameters == pytest.approx(psi)
    # ZeRO-2 with FP32 gradients (the paper's FSDP): 2 bytes of weights, 4 of gradients and 12 of optimizer / 64
    assert (rank1.weights, rank1.gradients, rank1.optimizer) == pytest.approx((2 * psi, 4 * psi / 64, 12 * psi / 64))
    rank0 = llama_as_trained.memory[0]  # stage 0: the embedding alone; stages 16, …, 112: one layer each
    assert rank0.parameters == pytest.approx((7 * model.layer_parameters + 128_256 * 16_384) / 8)


def test_a_tied_embedding_has_a_copy_on_the_last_rank():
    model = small_model()  # GPT style: tied
    result = plan(model, H100, small_layout())
    h, v, s = 1024, 32_000, 2048
    assert result.memory[0].parameters == pytest.approx((4 * model.layer_parameters + (v + s) * h) / 2)
    assert result.memory[-1].parameters == pytest.approx((4 * model.layer_parameters + 2 * h + v * h) / 2)


# -- layer splits ------------------------------------------------------------------------------------------------------
def test_layer_splits():
    model = MODEL_PRESETS["llama3-405b"]
    assert Layout().layers_per_stage(model) == (3,) + (4,) * 30 + (3,)  # 126 + 2 = 32 × 4
    slots = LAYOUT_PRESETS["llama3-405b-as-trained"].layout  # v = 8: one layer slot a chunk
    assert slots.num_chunks == 8 and slots.layers_per_stage(model) == (0,) + (1,) * 126 + (0,)
    one_chunk = Layout(family="1f1b")
    assert one_chunk.layers_per_stage(model) == (7,) + (8,) * 14 + (7,)
    assert dataclasses.replace(one_chunk, split="even").layers_per_stage(model) == (8,) * 14 + (7, 7)
    custom = (6,) + (8,) * 14 + (8,)
    assert dataclasses.replace(one_chunk, split=custom).layers_per_stage(model) == custom


@pytest.mark.parametrize(
    "change, message",
    [
        ({"split": (8,) * 16}, "covers 128 blocks, the model has 126: 8 + 8"),
        ({"split": (8,) * 15}, "has 15 entries for 16 stages"),
        ({"pipeline_parallel": 128, "data_parallel": 8}, "126 blocks cannot fill 128 stages"),
    ],
)
def test_bad_splits_say_why(change, message):
    layout = dataclasses.replace(Layout(family="1f1b", split="even"), **change)
    with pytest.raises(ValueError, match=re.escape(message)):
        layout.layers_per_stage(MODEL_PRESETS["llama3-405b"])


# -- the peak in flight is the simulator's, for every family -----------------------------------------------------------
@pytest.mark.parametrize("family", list(FAMILIES))
def test_memory_peak_count_is_the_simulators(family):
    p, m = 4, 8
    chunks = 2 if FAMILIES[family].takes_chunks else None
    layout = small_layout(pipeline_parallel=p, data_parallel=2, global_batch=2 * m, family=family, chunks=chunks)
    model = small_model(layers=16)
    result = plan(model, H100, layout)
    schedule = build_schedule(family, p, m, chunks)
    assert result.schedule.to_csv() == schedule.to_csv()
    expected = simulate(schedule, UNIT).peak_memory_per_rank()
    assert [rank.peak_microbatches_in_flight for rank in result.memory] == expected
    # a rank with neither the embedding nor the output layer: bytes = peak × the layers of one rank's share of the
    # model × one layer's bytes (DualPipe's ranks hold two shares, one per copy)
    per_layer = layer_activation_bytes(model, layout)
    ends = {
        schedule.rank_of(s)
        for s in range(schedule.num_stages)
        if schedule.block_of(s) in (0, schedule.route_length - 1)
    }
    shares = schedule.weights_per_rank()
    for rank in result.memory:
        if rank.rank not in ends:
            share_layers = rank.layers / shares[rank.rank]
            assert rank.activations == pytest.approx(expected[rank.rank] * share_layers * per_layer)


def test_known_peaks_gpipe_holds_m_1f1b_holds_p_minus_r():
    model = small_model(layers=16)
    gpipe = plan(model, H100, small_layout(family="gpipe", global_batch=16))
    one_f_one_b = plan(model, H100, small_layout(family="1f1b", global_batch=16))
    assert [rank.peak_microbatches_in_flight for rank in gpipe.memory] == [8] * 4
    assert [rank.peak_microbatches_in_flight for rank in one_f_one_b.memory] == [4, 3, 2, 1]


# -- the plan as a whole -----------------------------------------------------------------------------------------------
def test_llama_as_trained_loads_the_papers_layout(llama_as_trained):
    preset = LAYOUT_PRESETS["llama3-405b-as-trained"]
    layout = llama_as_trained.layout
    assert (layout.tensor_parallel, layout.context_parallel, layout.pipeline_parallel, layout.data_parallel) == (
        8,
        1,
        16,
        64,
    )
    assert llama_as_trained.num_gpus == 8192 and layout.global_batch == 64 * 32  # Table 4: 32 per DP group
    assert llama_as_trained.tokens_per_step == 16 * 2**20  # Table 4: 16M tokens
    assert preset.reported_tflops_per_gpu == 430 and layout.recompute == "none"  # §3.3.2: no checkpointing
    assert llama_as_trained.layers_per_stage == (0,) + (1,) * 126 + (0,)
    assert llama_as_trained.num_microbatches == 32 and llama_as_trained.schedule.num_chunks == 8


def test_step_time_tokens_mfu_and_bubble_follow_from_the_timeline(llama_as_trained):
    result = llama_as_trained
    assert result.pipeline_seconds == result.timeline.makespan
    reduced = max(step.end for step in result.allreduce)
    assert result.step_seconds == max(end.end for end in result.step_ends) > reduced > result.pipeline_seconds
    for end, reduction in zip(result.step_ends, result.allreduce, strict=True):  # Llama 3: untied, no embedding
        assert end.reduced == end.embedding_start == reduction.end and end.embedding == 0
        assert end.end == pytest.approx(reduction.end + end.optimizer)
    assert result.tokens_per_second == pytest.approx(2048 * 8192 / result.step_seconds)
    assert result.mfu == pytest.approx(result.model_flops_per_step / (8192 * 989e12 * result.step_seconds))
    assert result.bubble_fraction == result.timeline.bubble_fraction
    assert 0.3 < result.mfu < result.gpu.gemm_share  # below the GEMMs' share: bubble, memory-bound work, collectives
    frame = result.timeline.frame
    for step in result.allreduce:  # overlapped: each rank's reduction starts when its first stage's gradients are done
        grads = frame[(frame["rank"] == step.rank) & frame["kind"].isin(["B", "W"])]
        assert step.start == grads.groupby("stage")["end"].max().min()
    waiting = plan(result.model, result.gpu, dataclasses.replace(result.layout, dp_overlap=False))
    for step in waiting.allreduce:  # not overlapped: after the rank's last action
        assert step.start == waiting.timeline.frame.query(f"rank == {step.rank}")["end"].max()


def test_memory_message_says_why_in_words(llama_as_trained):
    result = llama_as_trained
    worst = max(result.memory, key=lambda rank: rank.total)
    assert not worst.fits and not result.fits
    assert worst.reason == (
        f"pipeline rank {worst.rank} (stages {', '.join(map(str, worst.stages))}) needs {worst.total / 1e9:.1f} GB "
        f"of 80 GB: activations of {worst.peak_microbatches_in_flight:g} micro-batches in flight "
        f"({worst.activations / 1e9:.1f} GB)"
    )
    assert result.memory_message.startswith(f"does not fit: {worst.reason}")
    roomy = plan(MODEL_PRESETS["llama3-405b"], GPU_PRESETS["b200"], Layout(family="1f1b"))
    assert roomy.fits and roomy.memory_message.startswith("fits: pipeline rank")


def test_compare_families_sorts_fitting_ones_by_step_time():
    model = small_model(layers=16)
    rows = plan(model, GpuSpec("tiny", "tiny", 100, 3, 100, 10), small_layout(global_batch=32)).compare_families()
    assert {row.family for row in rows} == set(FAMILIES)
    fitting = [row for row in rows if row.fits]
    assert fitting and [row.step_seconds for row in fitting] == sorted(row.step_seconds for row in fitting)
    assert list(rows[: len(fitting)]) == fitting and any(not row.fits for row in rows)  # GPipe holds all 16


def test_a_family_that_cannot_run_the_layout_says_why():
    layout = small_layout(split=(4, 4, 4, 4))  # four stages: the two-chunk families need eight
    rows = plan(small_model(), H100, layout).compare_families()
    errors = {row.family: row.error for row in rows if row.error}
    assert "has 4 entries for 8 stages" in errors["zb-v"] and rows[-1].error is not None


# -- bounds and errors -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Layout(num_gpus=4096), "TP × PP × DP × CP = 8 × 16 × 64 × 1 = 8,192 GPUs, not the 4,096 given"),
        (
            lambda: Layout(global_batch=2000),
            "not divisible by DP × micro-batch size = 64 × 1 = 64: 2,000 = 31 × 64 + 16",
        ),
        (lambda: Layout(pipeline_parallel=0), "PP must be from 1 to 256, got 0"),
        (lambda: Layout(family="1f1b", chunks=2), "1f1b always has 1 chunk"),
        (lambda: Layout(data_parallel=1, global_batch=16384), "16 ranks × 16384 micro-batches × 2 chunk(s) = 524,288"),
        (lambda: small_model(layers=10**9), "layers must be from 1 to 10000, got 1000000000"),
        (lambda: GpuSpec("x", "x", 100, 80, -5, 10), "NVLink bandwidth (GB/s) must be a finite number ≥ 1"),
        (lambda: GpuSpec("x", "x", math.nan, 80, 900, 10), "peak TFLOP/s must be a finite number"),
        (lambda: GpuSpec("x", "x", 1e-300, 80, 900, 10), "peak TFLOP/s must be a finite number ≥ 1 and ≤ 1e+06"),
        (lambda: GpuSpec("x", "x", 100, 80, 900, 1e-300), "inter-node bandwidth (GB/s) must be a finite number ≥ 1"),
        (lambda: GpuSpec("x", "x", 100, 80, 900, 10, hbm_gb_s=0.5), "HBM bandwidth (GB/s) must be a finite number ≥ 1"),
        (
            lambda: GpuSpec("x", "x", 100, 80, 900, 10, gemm_share=1e-300),
            "GEMM share of peak must be a finite number ≥ 0.05",
        ),
        (
            lambda: plan("llama3-405b", "h100", Layout(family="1f1b"), measured=[{"F": 1.0}]),
            "give 1 stage(s) but the plan has 16",
        ),
        (lambda: plan("llama3-405b", "h100", Layout(tensor_parallel=3, data_parallel=1, global_batch=32)), "42×3 + 2"),
    ],
)
def test_refusals_carry_the_arithmetic(make, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make()


# -- exports -----------------------------------------------------------------------------------------------------------
def test_torchtitan_fragment(llama_as_trained):
    toml = llama_as_trained.torchtitan_toml()
    for line in (
        "pipeline_parallel_degree = 16",
        'pipeline_parallel_schedule = "Interleaved1F1B"',
        "pipeline_parallel_microbatch_size = 1",
        "pipeline_parallel_layers_per_stage = 1",
        "pipeline_parallel_first_stage_less_layers = 1",
        "pipeline_parallel_last_stage_less_layers = 1",
        "tensor_parallel_degree = 8",
        "data_parallel_shard_degree = 64",
        "local_batch_size = 32",
        "seq_len = 8192",
    ):
        assert line in toml.splitlines()
    uneven = torchtitan_toml(small_model(), small_layout(family="zb-h1"), (3, 5, 4, 4), "my.csv")
    assert 'pipeline_parallel_schedule_csv = "my.csv"' in uneven
    assert '["tok_embeddings", "layers.0", "layers.1", "layers.2"]' in uneven
    assert '["layers.12", "layers.13", "layers.14", "layers.15", "norm", "output"]' in uneven
    # DualPipe's second copy is the same blocks again: one copy's parts, and torchtitan's limit said
    dual = torchtitan_toml(small_model(), small_layout(family="dualpipe"), (3, 5, 4, 4, 3, 5, 4, 4), "my.csv")
    assert '["layers.12", "layers.13", "layers.14", "layers.15", "norm", "output"]' in dual
    assert "layers.16" not in dual and "cannot run this schedule" in dual


def test_the_split_follows_the_models_paper_unless_asked():
    from engine.scale.request import PlanRequest

    assert PlanRequest().layout().split == "llama3"  # Llama 3's own rule for Llama 3
    assert PlanRequest(model="custom").layout().split == "even"  # a GPT or any hand-made model: even
    assert PlanRequest(model="gpt3-175b").layout().split == "even"
    assert PlanRequest(model="custom", split="llama3").layout().split == "llama3"


def test_where_the_time_goes_adds_up_and_the_bubble_is_the_timelines(llama_as_trained):
    result = llama_as_trained
    shares = result.time_shares()
    assert sum(shares.values()) == pytest.approx(1.0)
    p = result.layout.pipeline_parallel
    assert shares["pipeline bubble"] == pytest.approx(
        result.bubble_fraction * result.pipeline_seconds / result.step_seconds
    )
    after = shares["DP reduction (exposed)"] + shares["embedding all-reduce"] + shares["optimizer step"]
    assert after == pytest.approx(1 - result.pipeline_seconds / result.step_seconds)
    last = max(result.step_ends, key=lambda end: end.end)
    assert shares["optimizer step"] == pytest.approx(last.optimizer / result.step_seconds)  # p × seconds / (p × step)
    busy = sum(
        shares[c]
        for c in ("GEMMs", "attention", "memory-bound", "TP communication", "CP communication", "PP hand-offs")
    )
    assert busy * p * result.step_seconds == pytest.approx(sum(result.timeline.busy_per_rank()))

"""Interleaved 1F1B (Megatron-LM): v model chunks per rank shrink the fill and drain by v."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..closed_forms import M_MULTIPLE_OF_P, ClosedForm, Setting, held, interleaved_bubble
from ..ir import Schedule
from .common import check_chunks
from .depth_first import depth_first_schedule
from .family import Family

if TYPE_CHECKING:
    from ..timeline import Timeline


def interleaved_1f1b(num_ranks: int, num_microbatches: int, num_chunks: int = 2) -> Schedule:
    """Interleaved 1F1B (Narayanan et al. 2021, "Efficient large-scale language model training on GPU
    clusters using Megatron-LM", §2.2.2; PyTorch ``ScheduleInterleaved1F1B``).

    Each rank holds v = ``num_chunks`` model chunks; stage s = chunk·p + rank (loop placement). Micro-batches
    go through the chunks in rounds (``depth_first.microbatch_rounds``: p per round when m is a multiple of
    p, as in Megatron; PyTorch's flexible rounds otherwise). Rank r warms up with (v−1)·(round) + 2(p−1−r)
    forwards (Megatron's ``num_warmup_microbatches``), then alternates 1F1B. Bubble ratio idle/busy
    = (p−1)/(v·m) with equal costs — the paper's formula for m a multiple of p, which the lab's rounds keep for
    every m ≥ p. Accepts any m ≥ 1.
    """
    family = "interleaved-1f1b"
    check_chunks(family, num_chunks, minimum=2)
    return depth_first_schedule(family, num_ranks, num_microbatches, num_chunks, warmup_hops=2, split_backward=False)


def closed_forms(s: Setting, timeline: Timeline) -> list[ClosedForm]:
    p, m, v = s.p, s.m, s.v
    warm = (v - 1) * p + 2 * (p - 1) + 1
    return [
        interleaved_bubble(s, timeline),
        held(
            s,
            timeline,
            "peak activation memory on rank 0 (chunks of 1/v)",
            "min((v − 1)·p + 2(p − 1) + 1, v·m) / v",
            f"min({warm}, {v * m}) / {v}",
            min(warm, v * m) / v,
            "Megatron-LM's warm-up count",
            [M_MULTIPLE_OF_P],
        ),
    ]


FAMILY = Family(
    name="interleaved-1f1b",
    build=interleaved_1f1b,
    pytorch_class="ScheduleInterleaved1F1B",
    title="Interleaved 1F1B (Megatron)",
    source="Narayanan et al. 2021 (Megatron-LM) §2.2.2",
    story="Each rank holds v smaller chunks of the model, not one; the fill and drain take a "
    "chunk's time instead of a rank's whole share, so the bubble shrinks by v — paid for "
    "with about v times as many transfers between ranks: a micro-batch crosses v·p − 1 stage borders "
    "each way instead of p − 1, 2m(v·p − 1) transfers a step, (v·p − 1)/(p − 1) times 1F1B's.",
    fixed_chunks=None,
    in_rounds=True,
    forms=closed_forms,
)

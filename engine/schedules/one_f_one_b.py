"""1F1B, the PipeDream-flush schedule: GPipe's bubble at a fraction of its memory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..closed_forms import ClosedForm, Setting, fill_and_drain, held
from ..ir import Schedule
from .depth_first import depth_first_schedule
from .family import Family

if TYPE_CHECKING:
    from ..timeline import Timeline


def one_f_one_b(num_ranks: int, num_microbatches: int) -> Schedule:
    """1F1B, the PipeDream-flush schedule (Narayanan et al. 2021, "Memory-efficient pipeline-parallel DNN
    training", §3; Megatron-LM's non-interleaved schedule; PyTorch ``Schedule1F1B``).

    Rank r runs ``min(p−1−r, m)`` warm-up forwards, then alternates forward and backward, then drains the
    remaining backwards. Same idle time as GPipe, (p−1)/(m+p−1) with equal costs and no transfer time (with a
    transfer time each steady-state backward waits for a round trip, and 1F1B falls behind GPipe: 49 against
    39 at p = 4, m = 8, comm = 1), but rank r never holds
    more than ``min(p−r, m)`` micro-batches of activations instead of m. Accepts any p ≥ 1, m ≥ 1.
    """
    return depth_first_schedule("1f1b", num_ranks, num_microbatches, warmup_hops=1, split_backward=False)


def closed_forms(s: Setting, timeline: Timeline) -> list[ClosedForm]:
    return fill_and_drain(s, timeline, "GPipe §2.3; PipeDream-Flush keeps it") + [
        held(
            s,
            timeline,
            "peak activation memory, micro-batches held at once (rank 0)",
            "min(p, m)",
            f"min({s.p}, {s.m})",
            min(s.p, s.m),
            "PipeDream-Flush (Narayanan et al. 2021)",
            [],
        )
    ]


FAMILY = Family(
    name="1f1b",
    build=one_f_one_b,
    pytorch_class="Schedule1F1B",
    title="1F1B (PipeDream-flush)",
    source="Narayanan et al. 2021 (PipeDream-flush)",
    story="After a warm-up of p − 1 − r forwards, rank r alternates one forward with one backward. With "
    "free transfers and equal stages the fill and drain are GPipe's, so the bubble is too — but each "
    "backward frees its micro-batch's activations before the rank's next forward starts, so rank 0 never "
    "holds more than p of them. With a transfer time, 1F1B waits for round trips that GPipe does not.",
    forms=closed_forms,
)

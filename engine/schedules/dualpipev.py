"""DualPipeV (DeepSeek-V3 technical report §3.2.1 "DualPipe", and its V-shaped "cut-in-half" variant
published in deepseek-ai/DualPipe as ``DualPipeV``; PyTorch ``ScheduleDualPipeV``)."""

from __future__ import annotations

from collections import deque

from ..ir import Action, Kind, Overlap, Schedule, Slot
from ..limits import check_pairs
from .common import check_sizes, keep_microbatches
from .family import Family


def minimum_microbatches(num_ranks: int) -> int:
    """2p: DualPipeV's main phase runs m − 2p + r + 1 rounds on rank r, at least one on rank 0."""
    return 2 * num_ranks


def dualpipev(num_ranks: int, num_microbatches: int) -> Schedule:
    """DualPipeV: V placement (rank r holds stage r on the way down and stage 2p−1−r on the way back up)
    and, in the steady phase, a forward of one chunk overlapped with the backward of the other chunk as one
    slot — so one micro-batch's communication can hide behind the other's compute.

    Phases on rank r, chunk 0 = c0 (stage r), chunk 1 = c1 (stage 2p−1−r), in DeepSeek's step names:

    1. nF0:     2(p−r−1) forwards of c0
    2. nF0F1:   r+1 pairs (F c0, F c1)
    3. nB1W1F1: p−r−1 rounds (I c1, W c1, F c1) — split backward, W at once
    4. nF0B1F1B0 (main): m−2p+r+1 rounds of two overlapped pairs (F c0 & B c1), (F c1 & B c0); the last rank
       runs its first F c0 and B c1 apart (nothing to overlap with yet)
    5. nB1F1B0: p−r−1 rounds (B c1, then F c1 & B c0 overlapped)
    6. nB1B0:   r+1 rounds (B c1, B c0); from the middle round on, backwards are split (I now, W queued)
    7. nWB0:    p−r−1 rounds (a queued W, then I c0 with its W queued)
    8. nW:      the remaining queued W's, oldest first

    DualPipeV itself needs m ≥ 2p (phase 4 runs m−2p+r+1 ≥ 1 rounds on rank 0); for fewer, the schedule is
    built for 2p and the extra micro-batches are dropped (an overlapped pair that loses one half runs the
    other alone). Accepts any m ≥ 1.
    """
    family = "dualpipev"
    check_sizes(family, num_ranks, num_microbatches, 2)
    p, m = num_ranks, num_microbatches
    requested, m = m, max(m, minimum_microbatches(p))
    check_pairs(p, m, 2, f"{family} (built for {m} micro-batches, the fewest it runs on, 2p)")
    ranks = tuple(dualpipev_order(rank, p, m) for rank in range(p))
    return keep_microbatches(Schedule(family, p, m, 2, "v", ranks), requested)


def dualpipev_order(rank: int, p: int, m: int) -> tuple[Slot, ...]:
    """Rank ``rank``'s list of DualPipeV on p ranks and m ≥ 2p micro-batches (phases 1–8 in ``dualpipev``); also
    DualPipe's, in phases, at its half rank (``dualpipe``)."""
    stage_of_chunk = (rank, 2 * p - 1 - rank)
    next_forward = [0, 0]
    next_backward = [0, 0]
    queued_weights: deque[Action] = deque()
    slots: list = []

    def fwd(chunk: int) -> Action:
        action = Action(stage_of_chunk[chunk], Kind.F, next_forward[chunk])
        next_forward[chunk] += 1
        return action

    def bwd(chunk: int, split: bool) -> Action:
        stage, mb = stage_of_chunk[chunk], next_backward[chunk]
        next_backward[chunk] += 1
        if split:
            queued_weights.append(Action(stage, Kind.W, mb))
            return Action(stage, Kind.I, mb)
        return Action(stage, Kind.B, mb)

    def weight() -> Action:
        return queued_weights.popleft()

    is_last_rank = rank == p - 1
    for _ in range(2 * (p - rank - 1)):  # 1. nF0
        slots.append(fwd(0))
    for _ in range(rank + 1):  # 2. nF0F1
        slots += [fwd(0), fwd(1)]
    for _ in range(p - rank - 1):  # 3. nB1W1F1
        slots.append(bwd(1, split=True))
        slots += [weight(), fwd(1)]
    for round_index in range(m - 2 * p + rank + 1):  # 4. nF0B1F1B0, the main phase
        if round_index == 0 and is_last_rank:
            slots += [fwd(0), bwd(1, split=False)]
        else:
            slots.append(Overlap(fwd(0), bwd(1, split=False)))
        slots.append(Overlap(fwd(1), bwd(0, split=False)))
    for _ in range(p - rank - 1):  # 5. nB1F1B0
        slots.append(bwd(1, split=False))
        slots.append(Overlap(fwd(1), bwd(0, split=False)))
    split = False
    steps_6 = rank + 1
    for round_index in range(steps_6):  # 6. nB1B0, second half split
        if round_index == steps_6 // 2 and rank % 2 == 1:
            split = True
        slots.append(bwd(1, split))
        if round_index == steps_6 // 2 and rank % 2 == 0:
            split = True
        slots.append(bwd(0, split))
    for _ in range(p - rank - 1):  # 7. nWB0
        slots.append(weight())
        slots.append(bwd(0, split=True))
    while queued_weights:  # 8. nW
        slots.append(weight())
    assert next_forward == [m, m] and next_backward == [m, m], (rank, next_forward, next_backward)
    return tuple(slots)


FAMILY = Family(
    name="dualpipev",
    build=dualpipev,
    pytorch_class="ScheduleDualPipeV",
    title="DualPipeV (overlapped F&B)",
    source="DeepSeek-V3 report §3.2.1; deepseek-ai/DualPipe DualPipeV; PyTorch ScheduleDualPipeV",
    story="DeepSeek-V3's schedule, cut in half: a V like ZB-V, and in the steady phase one chunk's "
    "forward runs together with the other chunk's backward, so one micro-batch's transfers hide "
    "behind another's compute; the F&B cost sets its gain.",
    fixed_chunks=2,
    placement="v",
    splits_backward=True,
    overlaps_forward_backward=True,
    minimum_microbatches=minimum_microbatches,
    minimum_reason="its steady phase needs m ≥ 2p to overlap a forward with a backward on every rank",
    trim_note="PyTorch's ScheduleDualPipeV and DeepSeek's dualpipev.py refuse m < 2p (only PyTorch's "
    "ScheduleZBVZeroBubble pads and trims); the lab pads and trims instead, so every m runs — but the padded "
    "schedule is a poor one: with F = I = W on 2 to 8 ranks its step is a median 15 % longer than ZB-V's at "
    "the same m, up to 24 %. For m < 2p, choose ZB-V.",
)

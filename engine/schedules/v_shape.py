"""The V-shape construction V-Half and V-Min share (Qi et al. 2024, "Pipeline Parallelism with Controllable
Memory", §2 building a pipeline from a building block; the authors' ``zbv_greedy.py``): a building block repeated
once per micro-batch, the warm-up and cool-down squeezed, the W's filling free slots — and the two forms both
families state. The families differ only in their building block (``v_half.py``, ``v_min.py``).

Legend: p ranks, m micro-batches, rank r. A *slot* is one action of one chunk at F = I = W; one micro-batch
takes six slots on every rank (F, I and W of each of its two chunks). The six lists of a rank, in the
authors' order: F↓ (forward of stage r, chunk 0, on the way down), F↑ (forward of stage 2p−1−r, chunk 1, on
the way back up), I↑, I↓ (their input-gradient passes, the up chunk's first) and W↑, W↓.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left, insort
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..closed_forms import (
    EQUAL_STAGES,
    NO_RECOMPUTE,
    NO_TRANSFER,
    UNIT_COSTS,
    Assumption,
    ClosedForm,
    Setting,
    form,
    number,
    peak,
    worst_idle,
)
from ..ir import Action, Kind, Schedule
from ..limits import MAX_SQUEEZED_RANKS
from .common import check_sizes

if TYPE_CHECKING:
    from ..timeline import Timeline

F_DOWN, F_UP, I_UP, I_DOWN, W_UP, W_DOWN = range(6)
W_ANY = 4
"""While squeezing, a rank's W's are one list (either chunk's, in the order their I's ran)."""
PERIOD = 6
"""Slots between one micro-batch's building block and the next: 2 chunks × (F, I, W)."""
_MEMORY_CHANGE = (1, 1, 0, 0, -1)
"""What each list does to a rank's held activations in the squeeze, in chunks (the authors' accounting: I
keeps everything, W frees it)."""
_FROM_RANK_ABOVE = (F_DOWN, I_UP)  # activations go down the ranks, the up chunk's gradients too
_FROM_RANK_BELOW = (F_UP, I_DOWN)

BuildingBlock = Callable[[int], list[tuple[int, int, int, int]]]
"""p → each rank's slots for micro-batch 0's F↓, F↑, I↑, I↓ (micro-batch k: the same + 6k)."""


# -- the V-shape construction (shared with V-Min) ------------------------------------------------------------------
def greedy_microbatches(num_ranks: int) -> int:
    """2p + 8: the most micro-batches the squeeze runs on. By then the middle micro-batches run the building
    block unchanged (the steady phase), so each further micro-batch repeats one steady round (checked against
    the squeeze on all micro-batches in tests/engine/test_v_shapes.py)."""
    return 2 * num_ranks + 8


def v_shape_schedule(family: str, num_ranks: int, num_microbatches: int, block: BuildingBlock) -> Schedule:
    """Repeat a V-shape building block, squeeze its warm-up and cool-down, place the W's (the phases in
    ``v_half``'s docstring): the same slots as the authors' ``PipelineGraph.create_schedule``, so the same
    order, computed with running memory states instead of recounting a rank's memory for every try. Beyond
    ``greedy_microbatches`` the steady round is repeated instead of squeezed again."""
    check_sizes(family, num_ranks, num_microbatches, 2)
    if num_ranks > MAX_SQUEEZED_RANKS:
        raise ValueError(
            f"{family}: ranks must be from 1 to {MAX_SQUEEZED_RANKS}, got {num_ranks}: its warm-up and cool-down "
            f"are squeezed slot by slot, work that grows about as ranks³ ({num_ranks}³ / {MAX_SQUEEZED_RANKS}³ = "
            f"{(num_ranks / MAX_SQUEEZED_RANKS) ** 3:.1f}× the largest accepted)"
        )
    p, m = num_ranks, num_microbatches
    built = min(m, greedy_microbatches(p))
    ranks = squeezed_ranks(p, built, block)
    if built < m:
        ranks = [_repeat_steady_round(rank, list(actions), built, m - built) for rank, actions in enumerate(ranks)]
    return Schedule(family, p, m, 2, "v", tuple(ranks))


def squeezed_ranks(num_ranks: int, num_microbatches: int, block: BuildingBlock) -> list[tuple[Action, ...]]:
    """Every rank's actions from the building block, repeated and squeezed on all micro-batches."""
    p, m = num_ranks, num_microbatches
    offsets = block(p)
    for rank, slots in enumerate(offsets):
        assert len({slot % PERIOD for slot in slots}) == 4, (p, rank, slots)  # one action a slot
    times = [[[first + PERIOD * k for k in range(m)] for first in offsets[rank]] for rank in range(p)]
    times = _squeeze([_place_weights(lists, split=False) for lists in times], explicit_weights=True)  # warm-up
    times = _squeeze([lists[:4] for lists in times], explicit_weights=False)  # cool-down again, W's in the holes
    times = [_place_weights(lists[:4], split=True) for lists in times]
    return [_rank_actions(rank, p, lists) for rank, lists in enumerate(times)]


def _repeat_steady_round(rank: int, actions: list[Action], built: int, extra: int) -> tuple[Action, ...]:
    """Rank ``rank``'s actions for ``built`` + ``extra`` micro-batches from those for ``built``: the six
    actions before the forward of micro-batch ``built`` // 2 (one steady round) run ``extra`` more times,
    each on the next micro-batches, and everything after them moves ``extra`` micro-batches on."""
    cut = actions.index(Action(rank, Kind.F, built // 2))
    steady = actions[cut - PERIOD : cut]
    assert len({(a.stage, a.kind) for a in steady}) == PERIOD, (rank, steady)  # F, I, W of both chunks

    def later(part: list[Action], by: int) -> list[Action]:
        return [Action(a.stage, a.kind, a.microbatch + by) for a in part]

    repeated = [action for by in range(1, extra + 1) for action in later(steady, by)]
    return tuple(actions[:cut] + repeated + later(actions[cut:], extra))


def _rank_actions(rank: int, p: int, lists: list[list[int]]) -> tuple[Action, ...]:
    down, up = rank, 2 * p - 1 - rank
    stage = {F_DOWN: down, F_UP: up, I_UP: up, I_DOWN: down, W_UP: up, W_DOWN: down}
    kind = {F_DOWN: Kind.F, F_UP: Kind.F, I_UP: Kind.I, I_DOWN: Kind.I, W_UP: Kind.W, W_DOWN: Kind.W}
    timed = sorted((time, which, k) for which, slots in enumerate(lists) for k, time in enumerate(slots))
    return tuple(Action(stage[which], kind[which], k) for _, which, k in timed)


def _place_weights(lists: list[list[int]], *, split: bool) -> list[list[int]]:
    """F↓, F↑, I↑, I↓ slots plus the W's, each W in the first free slot after its I (with ``split``, two
    lists, the up chunk's W first when both wait; else one list); W's still waiting go after the last slot."""
    taken = dict((time, which) for which in range(4) for time in lists[which])
    last = max(taken)
    weights: list[list[int]] = [[], []]
    waiting = [0, 0]
    for slot in range(last + 1):
        which = taken.get(slot)
        if which is not None:
            if which in (I_UP, I_DOWN):
                waiting[which - I_UP if split else 0] += 1
            continue
        for chunk in (0, 1):
            if waiting[chunk]:
                weights[chunk].append(slot)
                waiting[chunk] -= 1
                break
    slot = last
    for chunk in (0, 1):
        for _ in range(waiting[chunk]):
            slot += 1
            weights[chunk].append(slot)
    return [*lists, *(weights if split else weights[:1])]


class _Rank:
    """One rank's slots while squeezing, with the W's in place: who sits in each slot (−1: free) and the
    activations held after each slot — the authors' ``mem_of_stage``, kept up to date instead of recounted
    for every try. Moving an action changes what is held only between its new and its old slot, by its own
    +1 (F), 0 (I) or −1 (W)."""

    def __init__(self, lists: list[list[int]]) -> None:
        self.last = max(max(slots) for slots in lists)
        self.taken = [-1] * (self.last + 1)
        for which, slots in enumerate(lists):
            for time in slots:
                assert self.taken[time] == -1, (time, which)  # one action a slot
                self.taken[time] = which
        self.held = list(itertools.accumulate(_MEMORY_CHANGE[which] if which >= 0 else 0 for which in self.taken))
        self.peak = max(0, *self.held)

    def move(self, which: int, old: int, earliest: int, cap: int) -> int:
        """Move the action in slot ``old`` to the first free slot from ``earliest`` on where the rank never
        holds more than ``cap``; return that slot (``old`` when there is none)."""
        change = _MEMORY_CHANGE[which]
        start = earliest
        if change > 0:  # only after the last slot already at the cap
            window = self.held[earliest:old]
            if cap in window:
                start = old - window[::-1].index(cap)
        try:
            new = self.taken.index(-1, start, old)
        except ValueError:
            return old
        if change:
            self.held[new:old] = [held + change for held in self.held[new:old]]
        self.taken[new], self.taken[old] = which, -1
        if old == self.last:
            self.last = max(new, _last_taken(self.taken, old))
        return new


class _RankWaiting:
    """The same without the W's: a free slot runs a W if one is waiting, so a move also shifts the W's after
    it. The W's waiting follow Lindley's recursion, waiting = max(0, waiting + 1 at an I, − 1 at a free slot),
    which numpy solves for a stretch of slots at once; a move is walked from its new slot until the states
    meet the old ones again after its old slot (the rest is then unchanged)."""

    def __init__(self, lists: list[list[int]]) -> None:
        self.last = max(max(slots) for slots in lists)
        self.taken = np.full(self.last + 1, -1, dtype=np.int64)
        for which, slots in enumerate(lists):
            self.taken[slots] = which
        assert (self.taken >= 0).sum() == sum(map(len, lists))  # one action a slot
        self.step, self.change = _STEP[self.taken], _CHANGE[self.taken]
        self.held, self.waiting = _states(self.step, self.change, 0, 0)
        self.peak = max(0, int(self.held.max()))

    def move(self, which: int, old: int, earliest: int, cap: int) -> int:
        """As ``_Rank.move``."""
        for new in map(int, earliest + np.flatnonzero(self.taken[earliest:old] < 0)):
            last = self.last if old != self.last else max(new, _last_taken(self.taken, old))
            walked = self._walk(which, new, old, last, cap)
            if walked is not None:
                held, waiting = walked
                self.held[new : new + len(held)], self.waiting[new : new + len(held)] = held, waiting
                self.taken[new], self.taken[old] = which, -1
                self.step[new], self.change[new] = _STEP[which], _CHANGE[which]
                self.step[old], self.change[old] = -1, 0
                self.last = last
                return new
        return old

    def _walk(self, which: int, new: int, old: int, last: int, cap: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The states from ``new`` up to where they meet the stored ones after ``old`` (or up to ``last``) if
        the action in ``old`` sat in ``new``; None when more than ``cap`` is held on the way."""
        start = (int(self.held[new - 1]), int(self.waiting[new - 1])) if new else (0, 0)
        end = min(last, old + 4)
        while True:
            step, change = self.step[new : end + 1].copy(), self.change[new : end + 1].copy()
            step[0], change[0] = _STEP[which], _CHANGE[which]
            if old <= end:
                step[old - new], change[old - new] = -1, 0
            held, waiting = _states(step, change, *start)
            if held.max() > cap:
                return None
            if end == last:
                return held, waiting
            after = old - new
            met = np.flatnonzero(
                (held[after:] == self.held[old : end + 1]) & (waiting[after:] == self.waiting[old : end + 1])
            )
            if len(met):
                return held[: after + met[0]], waiting[: after + met[0]]
            end = min(last, 2 * end - new)


_STEP = np.array([0, 0, 1, 1, -1])
"""Per list (and −1: a free slot, the last entry): what it does to the W's waiting before Lindley's floor."""
_CHANGE = np.array([1, 1, -1, -1, 0])
"""Per list: forwards minus input-gradient passes, so that held = (that, summed) + W's still waiting."""


def _states(step: np.ndarray, change: np.ndarray, held: int, waiting: int) -> tuple[np.ndarray, np.ndarray]:
    """Activations held and W's waiting after each slot of a stretch (no W's in place: a free slot runs a
    waiting one), from each slot's ``_STEP`` and ``_CHANGE`` and the states before the stretch."""
    total = np.cumsum(step)
    after = total - np.minimum(np.minimum.accumulate(total), -waiting)  # Lindley
    return held - waiting + np.cumsum(change) + after, after


def _last_taken(taken: Sequence[int] | np.ndarray, before: int) -> int:
    """The last slot before ``before`` that holds an action (−1: none)."""
    slot = before - 1
    while slot >= 0 and taken[slot] == -1:
        slot -= 1
    return slot


WARM_UP, STEADY, COOL_DOWN = range(3)


def _in_slot_order(times: Sequence[list[list[int]]]) -> list[tuple[int, int, int, int]]:
    """Every action as (slot, rank, list, micro-batch), sorted: the order the authors visit them in."""
    return sorted(
        (time, r, which, k)
        for r, lists in enumerate(times)
        for which, slots in enumerate(lists)
        for k, time in enumerate(slots)
    )


def _squeeze(times: list[list[list[int]]], *, explicit_weights: bool) -> list[list[list[int]]]:
    """One pass of the authors' ``reorder``: visit the actions in slot order (ties by rank, list, micro-batch)
    and move each one of the warm-up (only with ``explicit_weights``) and of the cool-down to the earliest free
    slot after its inputs where no rank's memory exceeds the largest peak before the pass. Returns the slots
    of the eager run of the result (``_eager``), the authors' "squeeze". An action's slot only changes when
    it is visited, so the order of the visits is known from the start."""
    m = len(times[0][0])
    ranks: list[_Rank | _RankWaiting] = [(_Rank if explicit_weights else _RankWaiting)(lists) for lists in times]
    cap = max(rank.peak for rank in ranks)
    backwards = [sorted(lists[I_UP] + lists[I_DOWN]) for lists in times]  # the k-th W waits for the k-th I
    phase = WARM_UP
    for time, r, which, k in _in_slot_order(times):
        if phase == WARM_UP and which == I_DOWN and r == 0:
            phase = STEADY
        if phase == STEADY:
            if which == F_DOWN and k == m - 1:
                phase = COOL_DOWN
            continue
        if phase == WARM_UP and not explicit_weights:
            continue
        new = ranks[r].move(which, time, _inputs_ready(times, backwards, r, which, k) + 1, cap)
        if new != time:
            times[r][which][k] = new
            if which == I_UP or which == I_DOWN:
                backwards[r].pop(bisect_left(backwards[r], time))
                insort(backwards[r], new)
    if not explicit_weights:  # the eager run below places the W's where the free slots are
        times = [_place_weights(lists, split=False) for lists in times]
    return _eager(times)


def _inputs_ready(times: list[list[list[int]]], backwards: list[list[int]], r: int, which: int, k: int) -> int:
    """The latest slot among what action (which, k) on rank r waits for (−1: nothing)."""
    p = len(times)
    ready = -1
    if which in _FROM_RANK_ABOVE and r > 0:
        ready = times[r - 1][which][k]
    if which in _FROM_RANK_BELOW and r < p - 1:
        ready = max(ready, times[r + 1][which][k])
    if 0 < which < 4:  # F↑ after F↓ (the turn on rank p−1), I↑ after F↑ (rank 0), I↓ after I↑ (rank p−1)
        ready = max(ready, times[r][which - 1][k])
    if which == W_ANY and len(times[r]) == 5:
        ready = max(ready, backwards[r][k])
    if k:
        ready = max(ready, times[r][which][k - 1])
    return ready


def _eager(times: Sequence[list[list[int]]]) -> list[list[list[int]]]:
    """Each action as early as its inputs and its rank's order allow, every action one slot long, no transfer
    time (the authors' ``eager_execution_time`` with unit costs): the slots without the holes."""
    p = len(times)
    starts: list[list[list[int]]] = [[[-1] * len(slots) for slots in lists] for lists in times]
    rank_free = [0] * p
    for _, r, which, k in _in_slot_order(times):
        mine = starts[r]
        start = rank_free[r]
        if k and mine[which][k - 1] >= start:
            start = mine[which][k - 1] + 1
        if 0 < which < 4 and mine[which - 1][k] >= start:
            start = mine[which - 1][k] + 1
        if which < 4:
            neighbour = r - 1 if which in _FROM_RANK_ABOVE else r + 1
            if 0 <= neighbour < p:
                ready = starts[neighbour][which][k]
                assert ready >= 0, (r, which, k)  # every input was visited first
                start = max(start, ready + 1)
        mine[which][k] = start
        rank_free[r] = start + 1
    return starts


# -- the forms both V-shapes state -----------------------------------------------------------------------------
M_AT_LEAST_2P: Assumption = (
    "m ≥ 2p: with fewer micro-batches the squeezed warm-up and cool-down meet and the count differs",
    lambda s: s.m >= 2 * s.p,
)


def at_least_ranks(fewest: int) -> Assumption:
    return (f"p ≥ {fewest}: on fewer ranks the warm-up and cool-down are shaped differently", lambda s: s.p >= fewest)


def v_shape_forms(
    s: Setting,
    timeline: Timeline,
    *,
    held: tuple[str, int, list[Assumption]],
    idle: tuple[str, float, int],
    rate: str,
) -> list[ClosedForm]:
    """A V-shape family's two forms: its peak, min(m, the authors' count), and the idle time of each rank at
    F = I = W. ``held`` is (formula in p, its value, extra assumptions); ``idle`` is (formula, its value in F, the
    fewest ranks it holds on)."""
    peak_formula, peak_count, peak_assumptions = held
    idle_formula, idle_in_f, fewest_ranks = idle
    return [
        form(
            s,
            "peak activation memory, micro-batches held at once (the most on any rank)",
            f"min(m, {peak_formula})",
            f"min({s.m}, {peak_count})",
            float(min(s.m, peak_count)),
            peak(timeline),
            "memory",
            "Qi et al. 2024; the authors' table (HF space sail/pipeline-parallelism-with-controllable-memory)",
            [NO_RECOMPUTE, *peak_assumptions],
        ),
        form(
            s,
            "idle time of each rank per step (when F = I = W)",
            f"({idle_formula}) × F",
            f"{number(idle_in_f)} × {number(s.F)}",
            idle_in_f * s.F,
            worst_idle(timeline.idle_per_rank()),
            "time",
            f"the lab's count of the authors' order, checked up to p = 48 (Qi et al. 2024 give the rate, about {rate})",
            [NO_TRANSFER, EQUAL_STAGES, UNIT_COSTS, at_least_ranks(fewest_ranks), M_AT_LEAST_2P],
        ),
    ]

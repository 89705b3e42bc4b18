"""Transfers that occupy their link: the simulator's second model of communication.

By default (``engine.walk.walk``) a product made on another rank arrives ``comm`` after its producer
ends, however many others cross the same link at once — a pure delay. Here each direction between two ranks
carries one transfer at a time, in the order the products were made: a transfer departs at
max(producer end, the link's previous arrival) and arrives ``comm`` later. Schedules that send bursts over one
link (interleaved's many hops, DualPipeV's two products per overlapped slot) then wait for the link as well.
PyTorch's pipelining simulator names this as future work.

The walk is event-driven: slot ends are taken from a heap in time order, so the links serve products first come
first served; a rank starts its next slot once it is free and every input is known. With ``comm`` = 0 it
gives the delay model's times (``tests/app/charts/test_links.py``).
"""

from __future__ import annotations

import heapq
from typing import NamedTuple

import numpy as np

from .dependencies import ScheduleError, compiled
from .ir import Schedule


class LinkWalk(NamedTuple):
    starts: list[float]
    """Start of every slot, in flat slot order."""
    ends: list[float]
    depart: np.ndarray
    """Per action: when its input from another rank left on the link (nan where it has none)."""
    arrive: np.ndarray
    """Per action: when that input arrived."""


def walk_on_links(schedule: Schedule, slot_durations, comm: float) -> LinkWalk:
    c = compiled(schedule)
    durations = np.asarray(slot_durations, float).tolist()
    first_action = c.slot_first_action.tolist()
    makes, from_neighbour, from_own = c.makes.tolist(), c.from_neighbour.tolist(), c.from_own.tolist()
    remote = c.neighbour_is_remote.tolist()
    rank_of_action = c.rank.tolist()
    consumer = np.full(2 * c.num_stages * c.num_microbatches, -1, dtype=np.int64)
    needs = np.flatnonzero(c.from_neighbour >= 0)
    consumer[c.from_neighbour[needs]] = needs  # the action that takes each product from a neighbour stage
    consumer_of = consumer.tolist()
    available: dict[int, float] = {}  # key -> when its product exists on its producer's rank
    depart = np.full(c.num_actions, np.nan)
    arrive = np.full(c.num_actions, np.nan)
    link_free: dict[tuple[int, int], float] = {}
    pointer, stop = c.rank_first_slot[:-1].tolist(), c.rank_first_slot[1:].tolist()
    free, busy = [0.0] * c.num_ranks, [False] * c.num_ranks
    starts, ends = [0.0] * c.num_slots, [0.0] * c.num_slots
    events: list[tuple[float, int, int]] = []  # (end, slot, rank)

    def ready_time(slot: int, rank: int) -> float | None:
        """When ``slot`` can start on ``rank``, or None while an input is still unknown."""
        ready = free[rank]
        for i in range(first_action[slot], first_action[slot + 1]):
            own, neighbour = from_own[i], from_neighbour[i]
            if own >= 0:
                if own not in available:
                    return None
                ready = max(ready, available[own])
            if neighbour >= 0:
                known = arrive[i] if remote[i] else available.get(neighbour)
                if known is None or known != known:  # unknown, or nan: not yet sent
                    return None
                ready = max(ready, float(known))
        return ready

    def try_start(rank: int) -> None:
        slot = pointer[rank]
        if busy[rank] or slot >= stop[rank]:
            return
        ready = ready_time(slot, rank)
        if ready is None:
            return
        starts[slot] = ready
        busy[rank] = True
        heapq.heappush(events, (ready + durations[slot], slot, rank))

    for rank in range(c.num_ranks):
        try_start(rank)
    while events:
        end, slot, rank = heapq.heappop(events)
        ends[slot], free[rank], busy[rank] = end, end, False
        pointer[rank] += 1
        woken = {rank}
        for i in range(first_action[slot], first_action[slot + 1]):
            key = makes[i]
            if key < 0:
                continue
            available[key] = end
            taker = consumer_of[key]
            if taker < 0:
                continue
            if remote[taker]:  # first come, first served on this direction of the link
                link = (rank, rank_of_action[taker])
                leaves = max(end, link_free.get(link, 0.0))
                depart[taker], arrive[taker] = leaves, leaves + comm
                link_free[link] = leaves + comm
            woken.add(rank_of_action[taker])
        for other in woken:
            try_start(other)
    stuck = {r: pointer[r] - int(c.rank_first_slot[r]) for r in range(c.num_ranks) if pointer[r] < stop[r]}
    if stuck:
        raise ScheduleError(
            f"deadlock: {len(stuck)} rank(s) wait for each other and can never continue\n"
            + schedule.grid(mark=stuck, max_rows=24)
        )
    return LinkWalk(starts, ends, depart, arrive)

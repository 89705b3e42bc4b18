"""The walk: every slot of a schedule timed in dependency order (each rank runs its list in order; a slot starts
when its rank is free and its inputs have arrived), by the compiled hand-off rules of ``engine.dependencies``."""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

import numpy as np

from .dependencies import ScheduleError, compiled
from .fast_walk import fast_walk
from .ir import Schedule


class Walk(NamedTuple):
    starts: np.ndarray
    """Start of every slot, in flat slot order."""
    ends: np.ndarray
    order: np.ndarray
    """The slots in the order they were visited: an order a single process can execute the schedule in."""


def walk(schedule: Schedule, slot_durations=None, comm: float | np.ndarray = 0.0) -> Walk:
    """Time every slot: each rank runs its list in order, a slot starts at max(rank free, every input
    arrived). ``slot_durations`` (per flat slot; None = all zero); ``comm`` the transfer time, or one per action
    (``simulator.hop_delays``). Raises ScheduleError on deadlock.

    Because each rank's order is fixed, start times follow from the dependencies alone: the walk visits slots
    in a dependency order and needs no global event queue. A rank that waits for a product whose producer can
    never run is a deadlock; that does not depend on costs, which is how ``validate`` uses it.
    """
    c = compiled(schedule)
    p = schedule.num_ranks
    slot_array = np.zeros(c.num_slots) if slot_durations is None else np.asarray(slot_durations, dtype=float)
    delay_array = c.neighbour_is_remote * np.asarray(comm, dtype=float)
    fast = fast_walk(c, slot_array, delay_array)
    if fast is not None:
        return Walk(*fast)
    durations = slot_array.tolist()
    first_action = c.slot_first_action.tolist()
    makes, from_neighbour, from_own = c.makes.tolist(), c.from_neighbour.tolist(), c.from_own.tolist()
    delay = delay_array.tolist()
    done: list = [None] * (2 * c.num_stages * c.num_microbatches)  # key -> when its product exists
    waiting: dict[int, list[int]] = {}  # key -> ranks blocked on it
    starts, ends = [0.0] * c.num_slots, [0.0] * c.num_slots
    order: list[int] = []
    pointer = c.rank_first_slot[:-1].tolist()
    stop = c.rank_first_slot[1:].tolist()
    free = [0.0] * p
    queue = deque(range(p))
    while queue:
        rank = queue.popleft()
        flat = pointer[rank]
        while flat < stop[rank]:
            ready = free[rank]
            blocked = -1
            for i in range(first_action[flat], first_action[flat + 1]):
                for key, hop in ((from_own[i], 0.0), (from_neighbour[i], delay[i])):
                    if key < 0:
                        continue
                    arrived = done[key]
                    if arrived is None:
                        blocked = key
                        break
                    if arrived + hop > ready:
                        ready = arrived + hop
                if blocked >= 0:
                    break
            if blocked >= 0:
                waiting.setdefault(blocked, []).append(rank)
                break
            end = ready + durations[flat]
            starts[flat], ends[flat] = ready, end
            order.append(flat)
            for i in range(first_action[flat], first_action[flat + 1]):
                key = makes[i]
                if key >= 0:
                    done[key] = end
                    woken = waiting.pop(key, None)
                    if woken:
                        queue.extend(woken)
            free[rank] = end
            flat += 1
        pointer[rank] = flat
    stuck = {r: pointer[r] - int(c.rank_first_slot[r]) for r in range(p) if pointer[r] < stop[r]}
    if stuck:
        notes = {
            rank: f"waits for {c.decode(key)} (rank {c.producer_rank(key)})"
            for key, ranks in waiting.items()
            for rank in ranks
        }
        raise ScheduleError(
            f"deadlock: {len(stuck)} rank(s) wait for each other and can never continue\n"
            + schedule.grid(mark=stuck, notes=notes, max_rows=24)
        )
    return Walk(np.asarray(starts), np.asarray(ends), np.asarray(order, dtype=np.int64))


def execution_order(schedule: Schedule) -> np.ndarray:
    """The untimed walk's visiting order, computed once per schedule (validation computes it; see
    [Note: derived values] in ``engine.ir``)."""
    return schedule.derived(_untimed_order)


def _untimed_order(schedule: Schedule) -> np.ndarray:
    return walk(schedule).order

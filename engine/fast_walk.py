"""The simulator's walk (``engine.walk.walk``) compiled to machine code with Numba: the same algorithm, the
same visiting order, the same floating-point operations in the same order, so the same starts and ends to the
last bit — about a hundred times faster than the Python loop (``benchmarks/simulate.py`` measures it against
PyTorch's dry-run).

The walk: each rank runs its list in order; a slot starts at max(rank free, every input arrived). Ranks wait in a
FIFO queue; a rank that needs a product not yet made is parked on that product's list and queued again, in the
order it was parked, when the product is made. Without Numba (or on a deadlock, whose message the Python walk
writes), ``walk.walk`` runs its own loop.

Loading Numba costs a process 0.4–0.8 s once (its import, then its compiler's set-up to load the machine code
this file caches beside itself, ``cache=True``), while the Python walk takes about 2 µs a slot: a process that walks
less than a few hundred thousand slots in all is done sooner without it. So a process loads it at its first
schedule of ``FIRST_USE_SLOTS`` slots or more, or once the slots it has walked reach that many, and then uses it for
every schedule: the command line's one ``simulate`` of ZB-H1 at 32 × 1,024 (98k slots) walks in Python (about
0.2 s) instead of loading Numba, and a server, which walks many schedules, lowers the threshold
(``server_mode``) so that its first large one loads it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

FIRST_USE_SLOTS = 100_000
"""A process loads Numba at its first schedule this large, or once it has walked this many slots in all."""
SERVER_FIRST_USE_SLOTS = 20_000
"""The same for a server (``server_mode``): a schedule this large, walked again and again by its visitors, pays the
load back within a few walks."""
_first_use = FIRST_USE_SLOTS
_walked = 0
"""Slots walked in Python by this process so far."""


def server_mode() -> None:
    """Load Numba from ``SERVER_FIRST_USE_SLOTS`` slots on (the app calls this once)."""
    global _first_use
    _first_use = SERVER_FIRST_USE_SLOTS


def _walk_arrays(durations, first_action, rank_first_slot, from_own, from_neighbour, makes, delay, num_keys):
    """Starts and ends per slot, the visiting order, how many slots were visited, and each rank's pointer (a rank
    whose pointer stops short of its list is deadlocked)."""
    num_slots = len(durations)
    p = len(rank_first_slot) - 1
    starts = np.zeros(num_slots)
    ends = np.zeros(num_slots)
    order = np.empty(num_slots, dtype=np.int64)
    done = np.zeros(num_keys)
    made = np.zeros(num_keys, dtype=np.bool_)
    # each key's parked ranks, first parked first: a linked list in flat arrays (a rank parks once per blocked
    # input of a slot, at most four per slot)
    capacity = 4 * num_slots + p + 8
    head = np.full(num_keys, -1, dtype=np.int64)
    tail = np.full(num_keys, -1, dtype=np.int64)
    parked_rank = np.empty(capacity, dtype=np.int64)
    parked_next = np.empty(capacity, dtype=np.int64)
    parked = 0
    queue = np.empty(capacity, dtype=np.int64)
    queue_start, queue_end = 0, 0
    for rank in range(p):
        queue[queue_end] = rank
        queue_end += 1
    pointer = rank_first_slot[:-1].copy()
    free = np.zeros(p)
    count = 0
    while queue_start < queue_end:
        rank = queue[queue_start]
        queue_start += 1
        flat = pointer[rank]
        stop = rank_first_slot[rank + 1]
        while flat < stop:
            ready = free[rank]
            blocked = -1
            for i in range(first_action[flat], first_action[flat + 1]):
                key = from_own[i]
                if key >= 0:
                    if not made[key]:
                        blocked = key
                        break
                    if done[key] + 0.0 > ready:
                        ready = done[key] + 0.0
                key = from_neighbour[i]
                if key >= 0:
                    if not made[key]:
                        blocked = key
                        break
                    if done[key] + delay[i] > ready:
                        ready = done[key] + delay[i]
            if blocked >= 0:
                parked_rank[parked] = rank
                parked_next[parked] = -1
                if head[blocked] < 0:
                    head[blocked] = parked
                else:
                    parked_next[tail[blocked]] = parked
                tail[blocked] = parked
                parked += 1
                break
            end = ready + durations[flat]
            starts[flat] = ready
            ends[flat] = end
            order[count] = flat
            count += 1
            for i in range(first_action[flat], first_action[flat + 1]):
                key = makes[i]
                if key >= 0:
                    done[key] = end
                    made[key] = True
                    node = head[key]
                    while node >= 0:
                        queue[queue_end] = parked_rank[node]
                        queue_end += 1
                        node = parked_next[node]
                    head[key] = -1
                    tail[key] = -1
            free[rank] = end
            flat += 1
        pointer[rank] = flat
    return starts, ends, order, count, pointer


_compiled: Any = None
"""The walk as machine code, once loaded (False: Numba cannot load here)."""


def load() -> bool:
    """Load the compiled walk now (a benchmark or a server may want to pay the load up front); False without
    Numba."""
    global _compiled
    if _compiled is None:
        try:  # Numba is a requirement, but the walk must still work where it cannot load
            import numba
        except ImportError:  # pragma: no cover - exercised only without Numba
            _compiled = False
        else:
            _compiled = numba.njit(cache=True, nogil=True)(_walk_arrays)
    return _compiled is not False


def fast_walk(c, durations: np.ndarray, delay: np.ndarray):
    """The walk over a compiled schedule ``c`` (``CompiledSchedule``) with per-slot ``durations`` and per-action
    transfer ``delay``: (starts, ends, order) as arrays, or None for the Python walk — a small schedule before the
    process has loaded Numba, no Numba, or a deadlock (whose message the Python walk writes)."""
    global _walked
    if _compiled is None and c.num_slots < _first_use and _walked + c.num_slots < _first_use:
        _walked += c.num_slots
        return None
    if not load():
        return None
    num_keys = 2 * c.num_stages * c.num_microbatches
    starts, ends, order, count, pointer = _compiled(
        np.ascontiguousarray(durations, dtype=np.float64),
        c.slot_first_action,
        c.rank_first_slot,
        c.from_own,
        c.from_neighbour,
        c.makes,
        np.ascontiguousarray(delay, dtype=np.float64),
        num_keys,
    )
    if (pointer < c.rank_first_slot[1:]).any():
        return None
    return starts, ends, order[:count]

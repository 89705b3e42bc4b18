"""The exact, event-driven simulator: per-rank lists in order, each action at max(rank free, inputs arrived).

Dependencies (DESIGN.md):
  F(s,m) needs F(s−1,m);  I/B(s,m) needs F(s,m) and I/B(s+1,m);  W(s,m) needs I(s,m).
An input made on another rank arrives ``comm`` after its producer ends; on the same rank, at once.
Because each rank's order is fixed, start times follow from the dependencies alone; the walk below visits
slots in a dependency order and never needs a global event queue. A rank that waits for an input that its
producer can never reach is a deadlock; that does not depend on costs, which is how ``validate`` uses it.

Memory, in units of one micro-batch's activations through one rank's share of the model (a stage of a
schedule with v stages per rank holds 1/v of that): F adds 1/v; I frees all but ``w_memory_fraction``;
W frees the rest; B frees all. With recomputation F keeps only ``recompute_memory_fraction``, and I
rebuilds the part W needs.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from .costs import Costs
from .ir import KIND_LETTERS, Schedule
from .timeline import Timeline
from .validate import ScheduleError, check_structure

_F, _B, _I, _W = range(4)  # kind codes, as in ir.KIND_CODES


def walk(schedule: Schedule, slot_duration=None, comm: float = 0.0) -> tuple[list[float], list[float], list[int]]:
    """Start and end time of every slot (flat slot order), visiting each once its inputs exist; and the order
    of the visits (flat slot indices), which is an order a single process can execute the schedule in.

    ``slot_duration(flat_index, slot) -> float`` gets the slot's ``(kind, stage, microbatch)`` triples
    (None: all zero). Raises ScheduleError on deadlock.
    """
    compiled = schedule.compiled
    p, m = schedule.num_ranks, schedule.num_microbatches
    num_stages = schedule.num_stages
    owner = [schedule.rank_of(s) for s in range(num_stages)]
    forward_done: list = [None] * (num_stages * m)  # end time of F(s, mb) at index s*m+mb
    grad_done: list = [None] * (num_stages * m)  # end time of I or B(s, mb): the input gradient exists
    waiting: dict[int, list[int]] = {}  # index (negative for gradients) -> ranks blocked on it
    starts = [0.0] * compiled.num_slots
    ends = [0.0] * compiled.num_slots
    visits: list[int] = []
    first_slot = compiled.rank_first_slot
    pointer = [0] * p
    free = [0.0] * p
    queue = deque(range(p))
    last_stage = num_stages - 1
    while queue:
        rank = queue.popleft()
        slots = compiled.slots[rank]
        length = len(slots)
        while pointer[rank] < length:
            slot = slots[pointer[rank]]
            ready = free[rank]
            blocked = None
            for kind, stage, mb in slot:
                if kind == _F:
                    if stage == 0:
                        continue
                    producer, table, key = stage - 1, forward_done, (stage - 1) * m + mb
                elif kind == _W:
                    producer, table, key = stage, grad_done, stage * m + mb
                else:
                    key = stage * m + mb
                    done = forward_done[key]
                    if done is None:
                        blocked = key + 1
                        break
                    if done > ready:
                        ready = done  # F(s) and I/B(s) share a rank
                    if stage == last_stage:
                        continue
                    producer, table, key = stage + 1, grad_done, key + m
                done = table[key]
                if done is None:
                    blocked = key + 1 if table is forward_done else -key - 1
                    break
                if owner[producer] != rank:
                    done += comm
                if done > ready:
                    ready = done
            if blocked is not None:
                waiting.setdefault(blocked, []).append(rank)
                break
            flat = first_slot[rank] + pointer[rank]
            end = ready + slot_duration(flat, slot) if slot_duration else ready
            visits.append(flat)
            starts[flat] = ready
            ends[flat] = end
            for kind, stage, mb in slot:
                if kind == _W:
                    continue
                key = stage * m + mb
                if kind == _F:
                    forward_done[key] = end
                    woken = waiting.pop(key + 1, None)
                else:
                    grad_done[key] = end
                    woken = waiting.pop(-key - 1, None)
                if woken:
                    queue.extend(woken)
            free[rank] = end
            pointer[rank] += 1
    stuck = {r: pointer[r] for r in range(p) if pointer[r] < len(compiled.slots[r])}
    if stuck:
        notes = {}
        for blocked, ranks in waiting.items():
            stage, mb = divmod(abs(blocked) - 1, m)
            what = f"{stage}F{mb}" if blocked > 0 else f"{stage}I{mb}/{stage}B{mb}"
            for r in ranks:
                notes[r] = f"waits for {what} (rank {owner[stage]})"
        raise ScheduleError(
            f"deadlock: {len(stuck)} rank(s) wait for each other and can never continue\n"
            + schedule.grid(mark=stuck, notes=notes, max_rows=24)
        )
    return starts, ends, visits


def simulate(schedule: Schedule, costs: Costs | None = None, *, check: bool = True) -> Timeline:
    """Time every action of ``schedule`` under ``costs``; return the Timeline (source "simulated")."""
    costs = costs or Costs()
    if check:
        check_structure(schedule)
    v = schedule.stages_per_rank
    num_stages = schedule.num_stages
    scale = costs.stage_scale or (1.0,) * num_stages
    if len(scale) != num_stages:
        raise ValueError(
            f"stage_scale has {len(scale)} entries but the schedule has {num_stages} stages "
            f"({schedule.num_ranks} ranks × {v} per rank)"
        )
    if costs.stage_costs is not None:  # measured per stage (recomputation already inside I and B)
        if len(costs.stage_costs) != num_stages:
            raise ValueError(f"stage_costs has {len(costs.stage_costs)} entries but the schedule has {num_stages} "
                             f"stages ({schedule.num_ranks} ranks × {v} per rank)")
        per_stage = [[costs.stage_costs[s][kind] for s in range(num_stages)] for kind in range(4)]

        def slot_duration(flat, slot):
            return sum(per_stage[kind][stage] for kind, stage, _ in slot)
    else:
        recompute_extra = costs.forward if costs.recompute else 0.0
        base = [costs.forward, costs.full_backward + recompute_extra, costs.input_backward + recompute_extra,
                costs.weight_backward]  # indexed by kind code F, B, I, W
        per_stage = [[base[kind] * scale[s] / v for s in range(num_stages)] for kind in range(4)]
        overlapped = costs.overlapped_pair + recompute_extra

        def slot_duration(flat, slot):
            if len(slot) == 1:
                kind, stage, _ = slot[0]
                return per_stage[kind][stage]
            (_, forward_stage, _), (_, backward_stage, _) = slot
            return overlapped * (scale[forward_stage] + scale[backward_stage]) / 2 / v

    starts, ends, _ = walk(schedule, slot_duration, costs.comm)
    compiled = schedule.compiled
    # memory: each kind's change, in units of a micro-batch through one rank's share; cumulated per rank
    share = 1.0 / v
    keep = costs.recompute_memory_fraction if costs.recompute else 1.0
    w_part = costs.w_memory_fraction
    delta = np.array([keep, -keep, -keep + w_part, -w_part]) * share
    memory = _cumsum_by_group(delta[compiled.kind], compiled.rank)  # actions are in rank-then-list order
    return timeline_from_slots(schedule, starts, ends, memory, source="simulated")


def timeline_from_slots(schedule: Schedule, starts, ends, memory_after, *, source: str, **extra) -> Timeline:
    """The Timeline of a schedule whose slots ran at ``starts``/``ends`` (flat slot order); ``memory_after``
    per action in the compiled (rank-then-list) order. Shared by the simulator and the runtime."""
    compiled = schedule.compiled
    slot_of_action = compiled.slot_index
    columns = {
        "rank": compiled.rank,
        "stage": compiled.stage,
        "chunk": compiled.stage // schedule.num_ranks,
        "microbatch": compiled.microbatch,
        "kind": np.array(list(KIND_LETTERS))[compiled.kind],
        "start": np.asarray(starts)[slot_of_action],
        "end": np.asarray(ends)[slot_of_action],
        "memory_after": np.asarray(memory_after, dtype=float),
        "step": compiled.step,
        "overlapped": compiled.overlapped,
        **extra,
    }
    return Timeline.from_columns(columns, schedule.num_ranks, source=source, name=schedule.name)


def _cumsum_by_group(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Running sum of ``values`` restarting at each new value of the (sorted) ``groups``."""
    if len(values) == 0:
        return values
    total = np.cumsum(values)
    starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
    offsets = np.repeat(np.r_[0.0, total[starts[1:] - 1]], np.diff(np.r_[starts, len(values)]))
    return total - offsets

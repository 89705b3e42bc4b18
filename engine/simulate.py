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

from .costs import Costs
from .ir import Kind, Overlap, Schedule, slot_actions
from .timeline import Timeline
from .validate import ScheduleError, check_structure

_F, _B, _I, _W = Kind.F, Kind.B, Kind.I, Kind.W


def walk(schedule: Schedule, durations, comm: float = 0.0, on_slot=None) -> None:
    """Visit every slot once its inputs exist. ``durations(rank, slot) -> float`` (None: all zero);
    ``on_slot(rank, step, slot, start, end)`` is called for each. Raises ScheduleError on deadlock."""
    p, m = schedule.num_ranks, schedule.num_microbatches
    num_stages = schedule.num_stages
    owner = [schedule.rank_of(s) for s in range(num_stages)]
    forward_done: list = [None] * (num_stages * m)  # end time of F(s, mb) at index s*m+mb
    grad_done: list = [None] * (num_stages * m)  # end time of I or B(s, mb): the input gradient exists
    waiting: dict[tuple[int, int], list[int]] = {}
    pointer = [0] * p
    free = [0.0] * p
    queue = deque(range(p))
    last_stage = num_stages - 1
    while queue:
        rank = queue.popleft()
        slots = schedule.ranks[rank]
        while pointer[rank] < len(slots):
            slot = slots[pointer[rank]]
            ready = free[rank]
            blocked = None
            for action in slot_actions(slot):
                stage, kind, mb = action.stage, action.kind, action.microbatch
                if kind is _F:
                    needs = ((0, stage - 1),) if stage > 0 else ()
                elif kind is _W:
                    needs = ((1, stage),)
                elif stage < last_stage:
                    needs = ((0, stage), (1, stage + 1))
                else:
                    needs = ((0, stage),)
                for table, producer in needs:
                    done = (forward_done if table == 0 else grad_done)[producer * m + mb]
                    if done is None:
                        blocked = (table, producer * m + mb)
                        break
                    arrival = done + comm if owner[producer] != rank else done
                    if arrival > ready:
                        ready = arrival
                if blocked:
                    break
            if blocked:
                waiting.setdefault(blocked, []).append(rank)
                break
            end = ready + (durations(rank, slot) if durations else 0.0)
            if on_slot:
                on_slot(rank, pointer[rank], slot, ready, end)
            for action in slot_actions(slot):
                stage, kind, mb = action.stage, action.kind, action.microbatch
                if kind is _F:
                    key = (0, stage * m + mb)
                    forward_done[stage * m + mb] = end
                elif kind is _W:
                    continue
                else:
                    key = (1, stage * m + mb)
                    grad_done[stage * m + mb] = end
                woken = waiting.pop(key, None)
                if woken:
                    queue.extend(woken)
            free[rank] = end
            pointer[rank] += 1
    stuck = {r: pointer[r] for r in range(p) if pointer[r] < len(schedule.ranks[r])}
    if stuck:
        notes = {}
        for r, step in stuck.items():
            for (table, index), ranks in waiting.items():
                if r in ranks:
                    stage, mb = divmod(index, m)
                    what = f"{stage}F{mb}" if table == 0 else f"{stage}I{mb}/{stage}B{mb}"
                    notes[r] = f"waits for {what} (rank {owner[stage]})"
        raise ScheduleError(
            f"deadlock: {len(stuck)} rank(s) wait for each other and can never continue\n"
            + schedule.grid(mark=stuck, notes=notes, max_rows=24)
        )


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
    recompute_extra = costs.forward if costs.recompute else 0.0
    base = {
        _F: costs.forward,
        _B: costs.full_backward + recompute_extra,
        _I: costs.input_backward + recompute_extra,
        _W: costs.weight_backward,
    }
    per_stage = {kind: [base[kind] * scale[s] / v for s in range(num_stages)] for kind in base}
    overlapped = costs.overlapped_pair + recompute_extra

    def durations(rank, slot):
        if isinstance(slot, Overlap):
            f, b = slot.forward, slot.backward
            return overlapped * (scale[f.stage] + scale[b.stage]) / 2 / v
        return per_stage[slot.kind][slot.stage]

    # memory deltas per kind, in units of a micro-batch through one rank's share
    share = 1.0 / v
    keep = costs.recompute_memory_fraction if costs.recompute else 1.0
    w_part = costs.w_memory_fraction
    delta = {
        _F: keep * share,
        _B: -keep * share,
        _I: (-keep + w_part) * share,
        _W: -w_part * share,
    }
    memory = [0.0] * schedule.num_ranks
    columns: dict[str, list] = {name: [] for name in Timeline.COLUMNS if name != "source"}

    def record(rank, step, slot, start, end):
        actions = slot_actions(slot)
        for action in actions:
            memory[rank] += delta[action.kind]
            columns["rank"].append(rank)
            columns["stage"].append(action.stage)
            columns["chunk"].append(action.stage // schedule.num_ranks)
            columns["microbatch"].append(action.microbatch)
            columns["kind"].append(action.kind.value)
            columns["start"].append(start)
            columns["end"].append(end)
            columns["memory_after"].append(memory[rank])
            columns["step"].append(step)
            columns["overlapped"].append(len(actions) > 1)

    walk(schedule, durations, costs.comm, record)
    return Timeline.from_columns(columns, schedule.num_ranks, source="simulated", name=schedule.name)

"""The exact, event-driven simulator: per-rank lists in order, each action at max(rank free, inputs arrived).

Who waits for whom is ``engine.dependencies`` (the hand-off rules and the walk); this module adds the cost
model (how long each slot takes) and the memory model.

Memory, in units of one micro-batch's activations through one rank's share of the model (a stage of a
schedule with v chunks per rank holds 1/v of that; a stage of DualPipe, whose two chunks are two copies, all of
it: ``Schedule.stage_share``): F adds 1/v; I frees all but ``w_memory_fraction``;
W frees the rest; B frees all. With recomputation F keeps only ``recompute_memory_fraction``; a backward
first rebuilds the rest (held while it runs: ``memory_peak``), and I keeps the part W needs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .costs import COST_OF_KIND, PAIR_KEY, Costs
from .dependencies import CompiledSchedule, compiled
from .ir import Kind, Schedule
from .links import walk_on_links
from .timeline import Timeline
from .validation import check_structure
from .walk import walk

RECOMPUTING = (Kind.B, Kind.I)
"""The kinds that, with recomputation, first re-run their forward (the backward passes that need activations)."""


def slot_durations(schedule: Schedule, costs: Costs) -> np.ndarray:
    """How long each slot takes under ``costs`` (flat slot order): each action its kind's cost (``COST_KINDS``),
    an overlapped pair's slot the F&B cost; plus the expert all-to-all each slot leaves exposed
    (``expert_overlap``)."""
    c = compiled(schedule)
    share = schedule.stage_share
    pairs = _overlapped_slots(c)
    durations = np.bincount(c.slot, weights=_action_compute(schedule, costs), minlength=c.num_slots)
    if len(pairs) and costs.stage_costs is not None:  # a pair: its halves, plus the mean of its two stages' gain
        gain = np.array([row[PAIR_KEY] - (row["F"] + row["B"]) for row in costs.stage_costs])
        first = c.slot_first_action[pairs]
        durations[pairs] += (gain[c.stage[first]] + gain[c.stage[first + 1]]) / 2
    elif len(pairs):  # one overlapped F&B pair costs F&B, scaled by the mean of its two stages
        scale = _stage_scale(schedule, costs)
        recompute_extra = costs.forward if costs.recompute else 0.0
        first = c.slot_first_action[pairs]
        mean_scale = (scale[c.stage[first]] + scale[c.stage[first + 1]]) / 2
        durations[pairs] = (costs.durations[PAIR_KEY] + recompute_extra) * mean_scale * share
    if costs.expert_comm > 0:
        comm, hidden = expert_overlap(schedule, costs)
        durations += np.bincount(c.slot, weights=comm - hidden, minlength=c.num_slots)
    return durations


def _stage_scale(schedule: Schedule, costs: Costs) -> np.ndarray:
    num_stages = schedule.num_stages
    scale = np.asarray(costs.stage_scale or (1.0,) * num_stages, dtype=float)
    if len(scale) != num_stages:
        raise ValueError(
            f"stage_scale has {len(scale)} entries but the schedule has {num_stages} stages "
            f"({schedule.num_ranks} ranks × {schedule.num_chunks} per rank)"
        )
    return scale


def _action_compute(schedule: Schedule, costs: Costs) -> np.ndarray:
    """Each action's compute time run alone (compiled order): its kind's cost through its stage's share, times
    its stage's multiplier (with recomputation B and I first re-run F); measured per-stage costs as they are."""
    c = compiled(schedule)
    num_stages = schedule.num_stages
    if costs.stage_costs is not None:  # measured per stage (recomputation already inside I and B)
        if len(costs.stage_costs) != num_stages:
            raise ValueError(
                f"stage_costs has {len(costs.stage_costs)} entries but the schedule has {num_stages} "
                f"stages ({schedule.num_ranks} ranks × {schedule.num_chunks} per rank)"
            )
        per_stage_and_kind = np.zeros((num_stages, len(Kind)))  # (stage, kind)
        for kind, cost in COST_OF_KIND.items():
            per_stage_and_kind[:, kind] = [row[cost.key] for row in costs.stage_costs]
        return per_stage_and_kind[c.stage, c.kind]
    scale = _stage_scale(schedule, costs)
    recompute_extra = costs.forward if costs.recompute else 0.0  # a backward first re-runs its forward
    base = np.zeros(len(Kind))
    for kind, cost in COST_OF_KIND.items():
        base[kind] = costs.durations[cost.key] + (recompute_extra if kind in RECOMPUTING else 0.0)
    with np.errstate(over="ignore"):  # an overflow becomes inf, which simulate() refuses with the numbers
        return base[c.kind] * scale[c.stage] * schedule.stage_share


def expert_overlap(schedule: Schedule, costs: Costs) -> tuple[np.ndarray, np.ndarray]:
    """Per action (compiled order), its expert all-to-all time and the part of it that runs under compute.

    Every F, B and I of a stage carries ``Costs.expert_comm`` × the stage's share of communication (dispatch and
    combine; W has none). Run alone, an action waits for all of it. In an overlapped F&B pair (DualPipe,
    DualPipeV) DeepSeek-V3 runs one micro-batch's all-to-all while the other computes (report §3.2.1, Figure 4):
    the forward's communication hides under the backward's compute, the backward's under the forward's, each up
    to that compute's length — so a pair's slot takes F&B plus what is left over, max(0, c − B) + max(0, c − F).
    """
    c = compiled(schedule)
    comm = np.where(c.kind == Kind.W, 0.0, costs.expert_comm * schedule.stage_share)
    hidden = np.zeros(c.num_actions)
    pairs = _overlapped_slots(c)
    if len(pairs) and costs.expert_comm > 0:
        compute = _action_compute(schedule, costs)
        first = c.slot_first_action[pairs]  # the forward; the backward is first + 1
        hidden[first] = np.minimum(comm[first], compute[first + 1])
        hidden[first + 1] = np.minimum(comm[first + 1], compute[first])
    return comm, hidden


def _overlapped_slots(c: CompiledSchedule) -> np.ndarray:
    return np.flatnonzero(np.diff(c.slot_first_action) > 1)


def memory_model(schedule: Schedule, costs: Costs) -> tuple[np.ndarray, np.ndarray]:
    """Modelled activation memory on each rank after each action, and the most held during it (compiled
    action order). A recomputing backward first rebuilds the (1 − kept) part of its micro-batch's activations,
    so while it runs the rank holds that much more than before it."""
    c = compiled(schedule)
    share = schedule.stage_share
    keep = costs.recompute_memory_fraction if costs.recompute else 1.0
    w_part = costs.w_memory_fraction
    change = np.zeros(len(Kind))
    change[Kind.F], change[Kind.B], change[Kind.I], change[Kind.W] = keep, -keep, -keep + w_part, -w_part
    after = _cumsum_by_group(change[c.kind] * share, c.rank)  # actions are in rank-then-list order
    before = after - change[c.kind] * share
    rebuilt = np.where(costs.recompute & np.isin(c.kind, RECOMPUTING), (1.0 - keep) * share, 0.0)
    return after, np.maximum(after, before + rebuilt)


@dataclass(frozen=True)
class SlotTimes:
    """When every slot of a schedule starts and ends under some costs (flat slot order), and when each action's
    input left and arrived where that is not simply producer end + comm (hop times, shared links)."""

    starts: np.ndarray
    ends: np.ndarray
    transfer_times: tuple[np.ndarray, np.ndarray] | None

    def idle_per_rank(self, schedule: Schedule) -> np.ndarray:
        """Each rank's idle time: the makespan minus its busy time, as ``Timeline.idle_per_rank`` counts it (same
        sums in the same order), without building a Timeline."""
        c = compiled(schedule)
        rank_of_slot = np.repeat(np.arange(schedule.num_ranks), np.diff(c.rank_first_slot))
        busy = np.bincount(rank_of_slot, weights=self.ends - self.starts, minlength=schedule.num_ranks)
        makespan = self.makespan
        return np.array([0.0 if abs(makespan - b) <= 1e-9 * max(makespan, 1.0) else makespan - b for b in busy])

    @property
    def makespan(self) -> float:
        return float(self.ends.max() - self.starts.min()) if len(self.ends) else 0.0


def slot_times(schedule: Schedule, costs: Costs) -> SlotTimes:
    """Time every slot of ``schedule`` under ``costs`` (no Timeline: what ``simulate`` and the idle attribution's
    levels share)."""
    durations = slot_durations(schedule, costs)
    if costs.shared_links and costs.comm > 0:
        linked = walk_on_links(schedule, durations, costs.comm)
        return SlotTimes(np.asarray(linked.starts, dtype=float), np.asarray(linked.ends, dtype=float),
                         (linked.depart, linked.arrive))  # fmt: skip
    if costs.hop_comm is not None:
        delays = hop_delays(schedule, costs.hop_comm)
        starts, ends, _ = walk(schedule, durations, delays)
        c = compiled(schedule)
        depart = np.asarray(ends, dtype=float)[c.slot][np.maximum(c.producer_of_neighbour, 0)]
        return SlotTimes(np.asarray(starts), np.asarray(ends), (depart, depart + delays))
    starts, ends, _ = walk(schedule, durations, costs.comm)
    return SlotTimes(np.asarray(starts, dtype=float), np.asarray(ends, dtype=float), None)


def simulate(schedule: Schedule, costs: Costs | None = None, *, check: bool = True) -> Timeline:
    """Time every action of ``schedule`` under ``costs``; return the Timeline (source "simulated")."""
    costs = costs or Costs()
    if check:
        check_structure(schedule)
    times = slot_times(schedule, costs)
    if len(times.ends) and not np.isfinite(times.ends).all():
        raise ValueError(
            f"the simulated times overflow (a step ends at {times.ends.max():g}): the costs are too large "
            f"for {schedule.num_actions:,} actions; use smaller numbers"
        )
    after, peak = memory_model(schedule, costs)
    expert = expert_overlap(schedule, costs) if costs.expert_comm > 0 else None
    return Timeline.from_slots(
        schedule,
        times.starts,
        times.ends,
        after,
        source="simulated",
        comm=max(costs.hop_comm) if costs.hop_comm else costs.comm,
        recompute=recompute_time(schedule, costs),
        memory_peak=peak,
        transfer_times=times.transfer_times,
        **({} if expert is None else {"expert_comm": expert[0], "expert_hidden": expert[1]}),
    )


def hop_delays(schedule: Schedule, hop_comm: tuple[float, ...]) -> np.ndarray:
    """Per action, the time its neighbour's product takes to arrive: the hop's time between the producer's rank
    and this one (``Costs.hop_comm``, by the lower rank of r ↔ r + 1 mod p), 0 on the same rank."""
    c = compiled(schedule)
    p = schedule.num_ranks
    if len(hop_comm) != p:
        raise ValueError(f"hop_comm has {len(hop_comm)} entries but the schedule has {p} ranks (one hop per rank)")
    source = c.rank[np.maximum(c.producer_of_neighbour, 0)]
    forward_hop = (source + 1) % p == c.rank
    backward_hop = (c.rank + 1) % p == source
    if np.any(c.neighbour_is_remote & ~forward_hop & ~backward_hop):
        raise ValueError("hop_comm needs every transfer between neighbouring ranks (r and r + 1 mod p)")
    hop = np.where(forward_hop, source, c.rank)
    return np.where(c.neighbour_is_remote, np.asarray(hop_comm, dtype=float)[hop], 0.0)


def recompute_time(schedule: Schedule, costs: Costs) -> np.ndarray:
    """Per action, the time a B or I spends first re-running its forward (recomputation), else 0."""
    c = compiled(schedule)
    if not costs.recompute:
        return np.zeros(c.num_actions)
    if costs.stage_costs is not None:  # measured: the forward's own mean time stands for its re-run
        per_stage = np.array([row["F"] for row in costs.stage_costs])
    else:
        per_stage = costs.forward * _stage_scale(schedule, costs) * schedule.stage_share
    return np.where(np.isin(c.kind, RECOMPUTING), per_stage[c.stage], 0.0)


def _cumsum_by_group(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Running sum of ``values`` restarting at each new value of the (sorted) ``groups``."""
    if len(values) == 0:
        return values
    total = np.cumsum(values)
    starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
    offsets = np.repeat(np.r_[0.0, total[starts[1:] - 1]], np.diff(np.r_[starts, len(values)]))
    return total - offsets

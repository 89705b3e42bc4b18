"""A timeline told event by event, for a lecturer's "next": at each moment some ranks start work, the others
are busy, finished, or waiting — and then for what, from which rank, and until when.

An event is a time at which at least one slot starts. The reasons come from the hand-off rules
(``engine.dependencies``): an idle rank waits for the latest-arriving input of its next action.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .dependencies import CompiledSchedule, compiled
from .ir import KIND_NAMES, Action, Schedule
from .timeline import Timeline


@dataclass(frozen=True)
class RankState:
    rank: int
    state: str
    """"starts", "busy", "waits", "finished" or "not started"."""
    text: str
    """One line in words, e.g. "starts 2F5 (stage 2, forward, micro-batch 5)"."""
    until: float | None = None
    """For a waiting rank: when its next action's last input arrives (the simulator starts it then)."""


@dataclass(frozen=True)
class Event:
    index: int
    time: float
    ranks: tuple[RankState, ...]

    def headline(self) -> str:
        count = {state: sum(r.state == state for r in self.ranks) for state in ("starts", "busy", "finished")}
        waiting = sum(r.state in ("waits", "not started") for r in self.ranks)
        return f"t = {self.time:g}: {count['starts']} start, {count['busy']} busy, {waiting} waiting" + (
            f", {count['finished']} finished" if count["finished"] else ""
        )


def describe_action(action: Action) -> str:
    """E.g. "2F5 (stage 2, forward, micro-batch 5)"."""
    return f"{action} (stage {action.stage}, {KIND_NAMES[action.kind]}, micro-batch {action.microbatch})"


@dataclass(frozen=True)
class Narration:
    """A schedule's timeline ready to be told: ``times`` are the events; ``event(k)`` tells the k-th."""

    schedule: Schedule
    timeline: Timeline
    comm: float = 0.0
    end: np.ndarray = field(init=False, repr=False, compare=False)
    """End of every action (compiled order), read from the timeline."""
    slot_start: np.ndarray = field(init=False, repr=False, compare=False)
    """Start of every slot (flat slot order)."""
    slot_end: np.ndarray = field(init=False, repr=False, compare=False)
    """End of every slot: the later end of its actions."""

    def __post_init__(self) -> None:
        # derived fields of a frozen dataclass are set once, here (the dataclass documentation's way)
        c = self.compiled
        start, end = self.timeline.frame["start"].to_numpy(), self.timeline.frame["end"].to_numpy()
        first = c.slot_first_action[:-1]
        object.__setattr__(self, "end", end)
        object.__setattr__(self, "slot_start", start[first])
        object.__setattr__(self, "slot_end", np.maximum.reduceat(end, first) if len(end) else end)

    @property
    def compiled(self) -> CompiledSchedule:
        return compiled(self.schedule)

    @property
    def times(self) -> np.ndarray:
        """The distinct times at which some slot that takes time starts, in order: an action of no duration (the
        backwards of a forwards-only lesson, B = 0) is no event to narrate."""
        lasting = self.slot_end > self.slot_start
        return np.unique(self.slot_start[lasting] if lasting.any() else self.slot_start)

    def event(self, index: int) -> Event:
        t = float(self.times[index])
        return Event(index, t, tuple(self._rank_state(rank, t) for rank in range(self.schedule.num_ranks)))

    def _rank_state(self, rank: int, t: float) -> RankState:
        c, slot_start, slot_end = self.compiled, self.slot_start, self.slot_end
        slots = c.rank_slots(rank)
        lo, hi = slots.start, slots.stop
        if lo == hi:
            return RankState(rank, "finished", "has no work")
        tolerance = 1e-9 * max(1.0, abs(t))
        # a rank's slots run in list order, so their starts are sorted
        here = lo + int(np.searchsorted(slot_start[lo:hi], t - tolerance))
        if here < hi and abs(slot_start[here] - t) <= tolerance:
            what = " together with ".join(describe_action(c.action(i)) for i in c.slot_actions(here))
            return RankState(rank, "starts", f"starts {what}")
        if here > lo and slot_end[here - 1] > t + tolerance:
            busy_with = c.label(c.slot_actions(here - 1).start)
            return RankState(rank, "busy", f"is busy with {busy_with} until {slot_end[here - 1]:g}")
        if here == hi:
            return RankState(rank, "finished", "has finished its list")
        latest, reason = -np.inf, ""
        for i in c.slot_actions(here):
            for producer, remote in c.inputs(i):
                finished = self.end[producer]
                arrival = finished + (self.comm if remote else 0.0)
                if arrival > latest:
                    latest = arrival
                    where = f"from rank {c.rank[producer]}" if remote else "on this rank"
                    timing = (
                        f"finishes at {finished:g}, arrives at {arrival:g}"
                        if remote and self.comm
                        else f"finishes at {finished:g}"
                    )
                    reason = f"{c.label(producer)} {where} ({timing})"
        upcoming = c.label(c.slot_actions(here).start)
        if here == lo:
            return RankState(
                rank, "not started", f"has not started: its first action {upcoming} waits for {reason}", latest
            )
        return RankState(rank, "waits", f"is idle: its next action {upcoming} waits for {reason}", latest)

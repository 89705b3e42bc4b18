"""A timeline told event by event, for a lecturer's "next": at each moment some ranks start work, the others
are busy, finished, or waiting — and then for what, from which rank, and until when.

An event is a time at which at least one slot starts. The reasons come from the hand-off rules
(``engine.dependencies``): an idle rank waits for the latest-arriving input of its next action.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dependencies import compiled
from .ir import KIND_NAMES, Kind, Schedule
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


def describe_action(stage: int, kind: int, microbatch: int) -> str:
    kind = Kind(kind)
    return f"{stage}{kind.name}{microbatch} (stage {stage}, {KIND_NAMES[kind]}, micro-batch {microbatch})"


@dataclass(frozen=True)
class Narration:
    """A schedule's timeline ready to be told: ``times`` are the events; ``event(k)`` tells the k-th."""

    schedule: Schedule
    timeline: Timeline
    comm: float = 0.0

    def __post_init__(self) -> None:
        c = compiled(self.schedule)
        start, end = self.timeline.frame["start"].to_numpy(), self.timeline.frame["end"].to_numpy()
        first = c.slot_first_action[:-1]
        slot_end = np.maximum.reduceat(end, first) if len(end) else end
        action_of_key = np.full(2 * c.num_stages * c.num_microbatches, -1, dtype=np.int64)
        made = c.makes >= 0
        action_of_key[c.makes[made]] = np.flatnonzero(made)
        object.__setattr__(self, "_arrays", (c, start[first], slot_end, end, action_of_key))

    @property
    def times(self) -> np.ndarray:
        """The distinct times at which some slot starts, in order."""
        return np.unique(self._arrays[1])

    def event(self, index: int) -> Event:
        t = float(self.times[index])
        c = self._arrays[0]
        return Event(index, t, tuple(self._rank_state(rank, t) for rank in range(c.num_ranks)))

    def _rank_state(self, rank: int, t: float) -> RankState:
        c, slot_start, slot_end, end, action_of_key = self._arrays
        lo, hi = int(c.rank_first_slot[rank]), int(c.rank_first_slot[rank + 1])
        if lo == hi:
            return RankState(rank, "finished", "has no work")
        tolerance = 1e-9 * max(1.0, abs(t))
        # a rank's slots run in list order, so their starts are sorted
        here = lo + int(np.searchsorted(slot_start[lo:hi], t - tolerance))
        if here < hi and abs(slot_start[here] - t) <= tolerance:
            actions = range(int(c.slot_first_action[here]), int(c.slot_first_action[here + 1]))
            what = " together with ".join(describe_action(c.stage[i], c.kind[i], c.microbatch[i]) for i in actions)
            return RankState(rank, "starts", f"starts {what}")
        if here > lo and slot_end[here - 1] > t + tolerance:
            return RankState(
                rank,
                "busy",
                f"is busy with {_name(c, int(c.slot_first_action[here - 1]))} until {slot_end[here - 1]:g}",
            )
        if here == hi:
            return RankState(rank, "finished", "has finished its list")
        latest, reason = -np.inf, ""
        for i in range(int(c.slot_first_action[here]), int(c.slot_first_action[here + 1])):
            for key, remote in ((c.from_own[i], False), (c.from_neighbour[i], bool(c.neighbour_is_remote[i]))):
                if key < 0:
                    continue
                producer = int(action_of_key[key])
                arrival = end[producer] + (self.comm if remote else 0.0)
                if arrival > latest:
                    latest = arrival
                    where = f"from rank {c.rank[producer]}" if remote else "on this rank"
                    timing = (
                        f"finishes at {end[producer]:g}, arrives at {arrival:g}"
                        if remote and self.comm
                        else f"finishes at {end[producer]:g}"
                    )
                    reason = f"{_name(c, producer)} {where} ({timing})"
        upcoming = _name(c, int(c.slot_first_action[here]))
        if here == lo:
            return RankState(
                rank, "not started", f"has not started: its first action {upcoming} waits for {reason}", latest
            )
        return RankState(rank, "waits", f"is idle: its next action {upcoming} waits for {reason}", latest)


def _name(c, i: int) -> str:
    return f"{c.stage[i]}{Kind(int(c.kind[i])).name}{c.microbatch[i]}"

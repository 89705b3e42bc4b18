"""Who needs whose output: the one home of the hand-off rules and the schedule compiled to arrays that apply
them (the walk that visits a schedule in dependency order reads them: ``engine.walk``). The validator, the
simulator and both runtime backends ask this module; none of them writes a rule again.

[Note: hand-off rules] (DESIGN.md). A finished action leaves a *product*:

    F(s, mb)     the activation of stage s (on the last stage: the loss)
    I/B(s, mb)   the gradient of stage s's input
    W(s, mb)     nothing anyone waits for

and needs at most one product from a neighbour stage and one from its own stage:

    F(s, mb)     activation of s−1 (s > 0)                        —
    I/B(s, mb)   input gradient of s+1 (s < last)                  activation of s (its own forward)
    W(s, mb)     —                                                 input gradient of s (its own I)

Activations flow to the next stage, input gradients to the previous one (``FLOW``). A product made on
another rank arrives ``comm`` after its producer ends; on the same rank, at once. "First" and "last" are of the
micro-batch's route: every stage, or for DualPipe one copy's (``Schedule.route``): a neighbour is a stage of the
same copy, so the first copy's last stage hands nothing to the second copy's first.

Keys: each product is one integer, ``(product × stages + stage) × micro-batches + micro-batch``, so the
walk's tables are flat lists and the distributed backend uses the key as its message tag.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

from .ir import Action, Kind, Schedule, slot_actions


class ScheduleError(ValueError):
    """A schedule that cannot run; the message shows the grid with ``<-- here``."""


class Product(enum.IntEnum):
    """What a finished action leaves for others."""

    ACTIVATION = 0
    INPUT_GRADIENT = 1


FLOW = {Product.ACTIVATION: +1, Product.INPUT_GRADIENT: -1}
"""Which way each product travels: activations to the next stage, input gradients to the previous one."""


class Handoff(NamedTuple):
    """One product of one stage and micro-batch."""

    product: Product
    stage: int
    microbatch: int

    def __str__(self) -> str:
        if self.product is Product.ACTIVATION:
            return f"{self.stage}F{self.microbatch}"
        return f"{self.stage}I{self.microbatch}/{self.stage}B{self.microbatch}"


def handoff_keys(
    kind: np.ndarray,
    stage: np.ndarray,
    microbatch: np.ndarray,
    num_stages: int,
    num_microbatches: int,
    route_length: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rules of [Note: hand-off rules] for arrays of actions: the key each action makes, the key it needs
    from a neighbour stage and the key it needs from its own stage (−1: none). ``route_length``: the stages of
    one copy of the model (all of them unless given)."""
    route_length = num_stages if route_length is None else route_length
    per_product = num_stages * num_microbatches

    def key(product, at_stage):
        return product * per_product + at_stage * num_microbatches + microbatch

    is_forward = kind == Kind.F
    is_gradient = (kind == Kind.B) | (kind == Kind.I)
    product = np.where(is_forward, Product.ACTIVATION, Product.INPUT_GRADIENT)
    makes = np.where(is_forward | is_gradient, key(product, stage), -1)
    # the neighbour's product comes from the stage it flows from: s − FLOW
    neighbour_stage = stage - np.where(is_forward, FLOW[Product.ACTIVATION], FLOW[Product.INPUT_GRADIENT])
    same_copy = neighbour_stage // route_length == stage // route_length
    has_neighbour = (is_forward | is_gradient) & (neighbour_stage >= 0) & (neighbour_stage < num_stages) & same_copy
    from_neighbour = np.where(has_neighbour, key(product, neighbour_stage), -1)
    own_product = np.where(kind == Kind.W, Product.INPUT_GRADIENT, Product.ACTIVATION)
    from_own = np.where(is_forward, -1, key(own_product, stage))
    return makes, from_neighbour, from_own


@dataclass(frozen=True, eq=False)
class CompiledSchedule:
    """The schedule as flat integer arrays, one entry per action in rank-then-list order, with the hand-off
    keys of each action. Built once per schedule (``compiled``), shared by the validator, the simulator, the
    runtime and the Timeline.

    The arrays are the engine's working form; read single actions, slots and ranks through the named
    accessors below (``action(i)``, ``label(i)``, ``rank_actions(r)``, ``producer(i)``…) rather than by
    indexing the arrays by hand."""

    num_ranks: int
    num_stages: int
    num_microbatches: int
    actions: tuple[Action, ...]
    """Every action as the IR writes it (the schedule's own objects), in compiled order: what ``action(i)``
    returns, looked up rather than rebuilt from the arrays (the runtime asks once per action it runs)."""
    rank: np.ndarray
    """Rank of each action."""
    step: np.ndarray
    """Position of the action's slot in its rank's list."""
    stage: np.ndarray
    kind: np.ndarray
    """``Kind`` codes."""
    microbatch: np.ndarray
    slot: np.ndarray
    """Index of the action's slot, numbered 0..num_slots−1 across ranks (both halves of a pair share one)."""
    overlapped: np.ndarray
    """True for both halves of an overlapped pair."""
    slot_first_action: np.ndarray
    """Index of each slot's first action, and the number of actions at the end."""
    rank_first_slot: np.ndarray
    """Index of each rank's first slot, and the number of slots at the end."""
    owner: np.ndarray
    """Rank of each stage."""
    makes: np.ndarray
    """Key of the product each action makes (−1 for W)."""
    from_neighbour: np.ndarray
    """Key of the product each action needs from a neighbour stage (−1: none)."""
    from_own: np.ndarray
    """Key of the product each action needs from its own stage (−1: none)."""
    route_length: int
    """Stages of one copy of the model (all of them but for DualPipe, see ``Schedule.route``)."""

    @property
    def num_slots(self) -> int:
        return len(self.slot_first_action) - 1

    @property
    def num_actions(self) -> int:
        return len(self.stage)

    @classmethod
    def of(cls, schedule: Schedule) -> CompiledSchedule:
        flat: list[Action] = []
        slot_sizes: list[int] = []
        rank_sizes: list[int] = []
        for slots in schedule.ranks:
            rank_sizes.append(len(slots))
            for slot in slots:
                actions = slot_actions(slot)
                flat.extend(actions)
                slot_sizes.append(len(actions))
        triples = np.fromiter(
            (value for action in flat for value in action), dtype=np.int64, count=3 * len(flat)
        ).reshape(-1, 3)  # (stage, kind, micro-batch) per action
        stage, kind, microbatch = triples[:, 0], triples[:, 1], triples[:, 2]
        sizes = np.asarray(slot_sizes, dtype=np.int64)
        slot_of_action = np.repeat(np.arange(len(sizes)), sizes)
        rank_first_slot = np.concatenate([[0], np.cumsum(rank_sizes)]).astype(np.int64)
        rank_of_slot = np.repeat(np.arange(schedule.num_ranks), rank_sizes)
        step_of_slot = np.arange(len(sizes)) - rank_first_slot[rank_of_slot]
        num_stages, m = schedule.num_stages, schedule.num_microbatches
        in_range = (stage >= 0) & (stage < num_stages) & (microbatch >= 0) & (microbatch < m)
        # out-of-range actions get no keys; the validator reports them before anything walks
        keys = handoff_keys(
            kind,
            np.clip(stage, 0, num_stages - 1),
            np.clip(microbatch, 0, m - 1),
            num_stages,
            m,
            schedule.route_length,
        )
        makes, from_neighbour, from_own = (np.where(in_range, k, -1) for k in keys)
        return cls(
            num_ranks=schedule.num_ranks,
            num_stages=num_stages,
            num_microbatches=m,
            actions=tuple(flat),
            rank=rank_of_slot[slot_of_action],
            step=step_of_slot[slot_of_action],
            stage=stage,
            kind=kind,
            microbatch=microbatch,
            slot=slot_of_action,
            overlapped=sizes[slot_of_action] > 1,
            slot_first_action=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
            rank_first_slot=rank_first_slot,
            owner=np.asarray([schedule.rank_of(s) for s in range(num_stages)], dtype=np.int64),
            route_length=schedule.route_length,
            makes=makes,
            from_neighbour=from_neighbour,
            from_own=from_own,
        )

    # -- one action, one slot, one rank ------------------------------------------------------------------
    def action(self, i: int) -> Action:
        """Action ``i`` (compiled order) as the IR writes it."""
        return self.actions[i]

    def label(self, i: int) -> str:
        """Action ``i``'s text form, e.g. "2F5"."""
        return str(self.action(i))

    def labels(self, indices: Iterable[int] | np.ndarray) -> np.ndarray:
        """The text forms of many actions (a Timeline labels thousands): looked up in ``all_labels``."""
        return self.all_labels[np.asarray(indices, dtype=np.int64)]

    @cached_property
    def all_labels(self) -> np.ndarray:
        """Every action's text form, in compiled order, built once per schedule (as ``Action.__str__`` writes it)."""
        names = [kind.name for kind in Kind]
        return np.array(
            [
                f"{stage}{names[kind]}{microbatch}"
                for stage, kind, microbatch in zip(
                    self.stage.tolist(), self.kind.tolist(), self.microbatch.tolist(), strict=True
                )
            ],
            dtype=object,
        )

    def slot_actions(self, slot: int) -> range:
        """The actions of one slot: one, or the two halves of an overlapped pair."""
        return range(int(self.slot_first_action[slot]), int(self.slot_first_action[slot + 1]))

    def rank_slots(self, rank: int) -> range:
        """Rank ``rank``'s slots, in its list's order."""
        return range(int(self.rank_first_slot[rank]), int(self.rank_first_slot[rank + 1]))

    def rank_actions(self, rank: int) -> range:
        """Rank ``rank``'s actions, in its list's order."""
        slots = self.rank_slots(rank)
        return range(int(self.slot_first_action[slots.start]), int(self.slot_first_action[slots.stop]))

    def producer(self, i: int) -> int:
        """The action that makes action ``i``'s input from its neighbour stage (−1: it needs none)."""
        return int(self.producer_of_neighbour[i])

    def inputs(self, i: int) -> list[Input]:
        """Every action whose product action ``i`` waits for, per [Note: hand-off rules]: its own stage's
        (same rank) and its neighbour's (maybe another rank)."""
        found = []
        for key, remote in ((self.from_own[i], False), (self.from_neighbour[i], bool(self.neighbour_is_remote[i]))):
            if key >= 0:
                found.append(Input(int(self.maker[key]), remote))
        return found

    def receiver(self, i: int) -> int:
        """The rank action ``i``'s product is handed to (−1: nothing is handed on: W, or the model's ends)."""
        return int(self.receiving_rank[i])

    def decode(self, key: int) -> Handoff:
        product, rest = divmod(int(key), self.num_stages * self.num_microbatches)
        stage, microbatch = divmod(rest, self.num_microbatches)
        return Handoff(Product(product), stage, microbatch)

    def producer_rank(self, key: int) -> int:
        return int(self.owner[self.decode(key).stage])

    # -- the same, for every action at once (computed on first use, then kept: the arrays never change) ----
    @cached_property
    def neighbour_is_remote(self) -> np.ndarray:
        """True where the neighbour's product comes from another rank (and pays the transfer time)."""
        needs = self.from_neighbour >= 0
        producer_stage = np.where(
            needs, (self.from_neighbour % (self.num_stages * self.num_microbatches)) // self.num_microbatches, 0
        )
        return needs & (self.owner[producer_stage] != self.rank)

    @cached_property
    def maker(self) -> np.ndarray:
        """Index of the action that makes each product key (−1: none in this schedule)."""
        action_of_key = np.full(2 * self.num_stages * self.num_microbatches, -1, dtype=np.int64)
        made = self.makes >= 0
        action_of_key[self.makes[made]] = np.flatnonzero(made)
        return action_of_key

    @cached_property
    def producer_of_neighbour(self) -> np.ndarray:
        """Index of the action that makes each action's neighbour product (−1: none needed)."""
        return np.where(self.from_neighbour >= 0, self.maker[np.maximum(self.from_neighbour, 0)], -1)

    @cached_property
    def receiving_rank(self) -> np.ndarray:
        """Rank that receives each action's product (−1 where nothing is handed on: W, the model's ends)."""
        flow = np.where(self.kind == Kind.F, FLOW[Product.ACTIVATION], FLOW[Product.INPUT_GRADIENT])
        target = self.stage + flow
        same_copy = target // self.route_length == self.stage // self.route_length
        handed_on = (self.makes >= 0) & (target >= 0) & (target < self.num_stages) & same_copy
        return np.where(handed_on, self.owner[np.clip(target, 0, self.num_stages - 1)], -1)


class Input(NamedTuple):
    """One product an action waits for."""

    producer: int
    """Index of the action that makes it."""
    remote: bool
    """True when it comes from another rank (and arrives ``comm`` after its producer ends)."""


def compiled(schedule: Schedule) -> CompiledSchedule:
    """The compiled arrays of ``schedule``, built on first use and kept with it (see [Note: derived values]
    in ``engine.ir``)."""
    return schedule.derived(CompiledSchedule.of)

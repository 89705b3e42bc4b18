"""Actions read from autograd events, for schedules that label none (PyTorch's ``Schedule1F1B``).

Each forward op autograd records carries a "Sequence number"; the backward the autograd engine runs for it
(``autograd::engine::evaluate_function: AddmmBackward0``) carries the same number. One rank of a one-stage-per-
rank schedule runs bursts of forward ops and bursts of backward functions, separated by its sends and receives
(``c10d::send``, ``c10d::recv_``): each burst is one action, F or B. Such schedules run each rank's forwards in
micro-batch order and its backwards in micro-batch order too (1F1B, GPipe), so the k-th forward burst is F of
micro-batch k and the k-th backward burst B of micro-batch k; the stage is the rank. Every action read so is
marked ``inferred``.
"""

from __future__ import annotations

from ..ir import Action, Kind
from .actions import RECEIVES, Hand, RankStep, TimedAction
from .reading import Event, RankTrace, keeps

BACKWARD_PREFIX = "autograd::engine::evaluate_function"
COMMUNICATION_PREFIXES = ("c10d::", "gloo:", "nccl:")
ARRIVAL_SLACK_US = 50.0
"""A receive that ends this soon after an action's first op still fed it (the op may start as it returns)."""


def keeps_autograd(event: dict) -> bool:
    """What inference needs besides the usual: every op autograd recorded (those with a sequence number)."""
    if keeps(event):
        return True
    args = event.get("args")
    return event.get("ph") == "X" and isinstance(args, dict) and "Sequence number" in args


def _direction(event: Event) -> str | None:
    if event.name.startswith(BACKWARD_PREFIX):
        return "B"
    if event.name.startswith(COMMUNICATION_PREFIXES):
        return "comm"
    if event.category == "cpu_op" and "Sequence number" in event.args:
        return "F"
    return None


def _last_run(ops: list[Event], before: float) -> list[Event]:
    """Of the forward ops with one sequence number, the last one before the backward (and the ops that
    contain it): autograd reuses a number for ops that made no node (a micro-batch split at the step's start, a
    detach after the forward), and those belong to other actions."""
    earlier = [op for op in ops if op.start < before]
    if not earlier:
        return []
    last = max(earlier, key=lambda op: op.start)
    return [op for op in earlier if op.start <= last.start and op.end >= last.end]


def inferred_rank_step(trace: RankTrace, rank: int, window: tuple[float, float]) -> RankStep:
    """One rank's F and B actions from its autograd events (see the module docstring): each burst of backward
    functions between two communication ops is one B; its forward is the ops with the same sequence numbers."""
    low, high = window
    events = sorted((e for e in trace.events if low <= e.start <= high), key=lambda e: (e.start, -e.duration))
    backward_bursts: list[list[Event]] = []
    forward_ops: dict[int, list[Event]] = {}
    previous, backward_until = None, -float("inf")
    for event in events:
        direction = _direction(event)
        if direction == "F" and event.start < backward_until:
            continue  # an op inside a backward function (its own work, not a forward)
        if direction == "B":
            backward_until = max(backward_until, event.end) if previous == "B" else event.end
            if previous != "B":
                backward_bursts.append([])
            backward_bursts[-1].append(event)
        elif direction == "F":
            forward_ops.setdefault(int(event.args["Sequence number"]), []).append(event)
        if direction is not None:
            previous = direction
    actions = []
    for microbatch, burst in enumerate(backward_bursts):
        numbers = {int(e.args["Sequence number"]) for e in burst if "Sequence number" in e.args}
        forwards = [op for number in numbers for op in _last_run(forward_ops.get(number, []), burst[0].start)]
        if forwards:
            start, end = min(op.start for op in forwards), max(op.end for op in forwards)
            actions.append(TimedAction(Action(rank, Kind.F, microbatch), start, start, end, inferred=True))
        start, end = burst[0].start, max(e.end for e in burst)
        actions.append(TimedAction(Action(rank, Kind.B, microbatch), start, start, end, inferred=True))
    actions.sort(key=lambda action: action.start)
    return RankStep(rank, tuple(actions), receives=_receives(events, actions, rank))


def _receives(events: list[Event], actions: list[TimedAction], rank: int) -> tuple[Hand, ...]:
    """Each action's input, where one arrived between the previous action's end and its start: the last
    ``gloo:recv``/``nccl:recv`` that ended there (a forward's activation, a backward's gradient)."""
    receives = [e for e in events if e.name in RECEIVES]
    found, previous_end = [], -float("inf")
    for action in actions:
        arrived = [e for e in receives if previous_end <= e.end <= action.start + ARRIVAL_SLACK_US]
        if arrived and isinstance(action.slot, Action):
            last = max(arrived, key=lambda e: e.end)
            direction = "F" if action.slot.kind is Kind.F else "B"
            found.append(Hand(action.slot.stage, direction, action.slot.microbatch, last.start, last.end))
        previous_end = action.end
    return tuple(found)

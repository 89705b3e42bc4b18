"""Communication inside a labelled action's span is waiting, not compute (issue 46, case 6).

PyTorch's ``ScheduleGPipe`` labels each action ``Forward i``/``Backward i`` around the whole of
``forward_one_chunk`` and the blocking point-to-point it does itself: the receive of its input (already read as
a wait, [Note: compute and waiting] in ``engine.traces.actions``) and, after the work, the send of its output —
``c10d::send`` and gloo's ``gloo:send`` run on the span's own thread until the data has left. Read as compute,
that send made a 2-rank GPipe stage's forward three times its unlabelled reading. So an action computes until
the first blocking send or receive that starts on its thread after its compute began, and that send, once a
separate event, is the hand-off the clocks pair with its receive (``engine.traces.clocks``).
"""

from __future__ import annotations

from dataclasses import replace

from ..ir import Action, Kind
from .names import Label
from .reading import Event
from .timed import TimedAction

BLOCKING = ("c10d::send", "c10d::recv_", "c10d::recv", "gloo:send", "gloo:recv", "nccl:send", "nccl:recv")
"""Point-to-point ops that block the thread that called them until their data has left or arrived."""
SENDS = ("c10d::send", "gloo:send", "nccl:send")


def _first_blocking(span: Event, after: float, inside: list[Event], names=BLOCKING) -> Event | None:
    """The first blocking op on ``span``'s thread that starts inside it, at or after ``after`` (µs)."""
    found = [e for e in inside if e.name in names and e.thread == span.thread and after <= e.start <= span.end]
    return min(found, key=lambda e: e.start, default=None)


def trimmed(actions: list[TimedAction], spans: list[Event], inside: list[Event]) -> list[TimedAction]:
    """Each action (the i-th from the i-th span) ended where its span's first blocking op after its compute
    began starts: the time after it is the hand-off's, not the stage's."""
    ended = []
    for action, span in zip(actions, spans, strict=True):
        op = _first_blocking(span, action.compute_start, inside)
        ended.append(action if op is None else replace(action, end=max(op.start, action.compute_start)))
    return ended


def sends_inside(
    computed: list[tuple[Event, Label]], actions: list[TimedAction], inside: list[Event]
) -> list[tuple[int, str, int, float, float]]:
    """The hand-offs that GPipe's stageless labels send from inside themselves: the first send op after each
    action's compute began, as the output of the rank's own stage (a forward's activation, a backward's
    gradient), as (stage, direction, micro-batch, start, end). Runtime labels (``PP:0F3``) send in separate
    ``SEND_F``/``SEND_B`` actions and have none."""
    found = []
    for (span, label), action in zip(computed, actions, strict=True):
        slot = action.slot
        if not label.stageless or not isinstance(slot, Action):
            continue
        op = _first_blocking(span, action.compute_start, inside, SENDS)
        if op is not None:
            direction = "F" if slot.kind is Kind.F else "B"
            found.append((slot.stage, direction, slot.microbatch, op.start, op.end))
    return found

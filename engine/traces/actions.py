"""One rank's step, from its kept trace events: each pipeline action with its compute time and the wait before
it, the hand-offs it sent and received.

[Note: compute and waiting] A PyTorch action span includes the time it blocked for its input: in
``_PipelineScheduleRuntime`` a ``RECV_F``/``RECV_B`` action only posts the receive (``gloo:recv`` then lasts
until the data arrives) and the compute action that needs it waits inside its own span; GPipe's ``Forward i``
posts and waits for its receive inside the span (and sends its output inside it too: ``engine.traces.blocking``
ends its compute there). So an action computes from the later of its span's start and
its input's arrival (the end of the matching ``gloo:recv``/``nccl:recv``) to its span's end, and the part before
is a wait for that input. On GPU traces an action's time is its kernels' on the compute stream (the CPU runs
ahead), and NCCL kernels are the transfers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import Action, Kind, Overlap
from .blocking import sends_inside, trimmed
from .names import Label, read_label
from .reading import Event, RankTrace
from .timed import TimedAction

RECEIVES = ("gloo:recv", "nccl:recv")
SENDS = ("gloo:send", "nccl:send")
NCCL_KERNEL = ("ncclDevKernel", "ncclKernel")
MIN_WAIT_US = 1.0
"""A gap shorter than this (µs) between a span's start and its work is the timer's, not a wait."""
EDGE_US = 0.01
"""Kineto pads a GPU annotation by a nanosecond each side: a kernel that ends this close to it is inside."""


@dataclass(frozen=True)
class Hand:
    """A hand-off seen on this rank: a send it made or a receive that completed."""

    stage: int
    direction: str
    """"F" (an activation forward) or "B" (a gradient backward)."""
    microbatch: int
    start: float
    end: float


@dataclass(frozen=True)
class RankStep:
    """One rank's actions in the chosen step, in the order it ran them."""

    rank: int
    actions: tuple[TimedAction, ...]
    sends: tuple[Hand, ...] = ()
    receives: tuple[Hand, ...] = ()
    sharding: int = 0
    """FSDP actions seen (UNSHARD, RESHARD, REDUCE_GRAD): counted, not drawn."""
    notes: tuple[str, ...] = field(default=())


def rank_step(
    trace: RankTrace, rank: int, window: tuple[float, float], pattern=None, num_stages: int | None = None
) -> RankStep:
    """The actions of ``trace`` inside ``window`` (µs), with compute and waiting split
    ([Note: compute and waiting]). ``num_stages`` (all ranks' labels together) lets a trace read with a user's
    pattern, which labels no hand-off, take its hand-offs from the send and receive ops (``_handoffs_by_order``)."""
    low, high = window
    inside = [event for event in trace.events if low <= event.start <= high]
    cpu_spans = [e for e in inside if e.category != "gpu_user_annotation"]
    gpu_labels = _gpu_copies(trace, cpu_spans, low)
    spans = gpu_labels if gpu_labels else cpu_spans
    if gpu_labels:  # the GPU runs behind the CPU: its work for this step can end after the CPU's step span
        inside = [
            event for event in trace.events if event.start >= low and event.start <= max(high, gpu_labels[-1].end)
        ]
    computed: list[tuple[Event, Label]] = []
    transfer_actions: list[tuple[Event, tuple[int, str, int]]] = []
    sharding = 0
    for event in spans:
        label = read_label(event.name, pattern)
        if label.compute is not None:
            computed.append((event, label))
        elif label.transfer is not None:
            transfer_actions.append((event, label.transfer))
        elif label.sharding is not None:
            sharding += 1
    receives = _completed_receives(inside, transfer_actions, computed, rank)
    sends_by_order: tuple[Hand, ...] = ()
    if pattern is not None and not transfer_actions and num_stages is not None:
        receives, sends_by_order = _handoffs_by_order(inside, computed, num_stages)
    actions = [_timed(event, label, rank, receives) for event, label in computed]
    inner_sends = [Hand(*found) for found in sends_inside(computed, actions, inside)]
    if gpu_labels:
        actions = _timed_by_kernels(actions, inside)
    else:  # a send or receive inside a span is a wait ([Note: compute and waiting]); the kernels say it on GPUs
        actions = trimmed(actions, [event for event, _ in computed], inside)
    sends = sends_by_order or tuple(
        Hand(stage, kind[-1], microbatch, event.start, event.end)
        for event, (stage, kind, microbatch) in transfer_actions
        if kind.startswith("SEND")
    ) + tuple(inner_sends)
    return RankStep(
        rank,
        tuple(sorted(actions, key=lambda a: a.start)),
        sends=sends,
        receives=tuple(hand for hand, _ in receives),
        sharding=sharding,
    )


def _gpu_copies(trace: RankTrace, cpu_spans: list[Event], low: float) -> list[Event]:
    """The GPU-timeline copies (``gpu_user_annotation``) of this step's CPU labels: for each CPU label, the
    first copy of that name at or after the step's start."""
    wanted = {e.name for e in cpu_spans if e.name.startswith("PP:") or e.name.startswith(("Forward ", "Backward "))}
    copies: dict[str, Event] = {}
    for event in trace.events:
        if event.category == "gpu_user_annotation" and event.start >= low and event.name in wanted:
            copies.setdefault(event.name, event)
    return sorted(copies.values(), key=lambda event: event.start)


def _handoffs_by_order(inside, computed, num_stages: int) -> tuple[list[tuple[Hand, float]], tuple[Hand, ...]]:
    """Hand-offs of a trace whose compute a user's pattern names and whose hand-offs nothing names: a pipeline
    runtime receives, and sends, in the order its compute needs them, so the k-th receive op (``gloo:recv``,
    ``nccl:recv``, by start) carries the input of the k-th action that needs one from another rank — a forward
    whose previous stage, or a backward whose next stage, is not on this rank — and the k-th send the output of
    the k-th action whose consumer is elsewhere. Surplus ops at the step's start are not the pipeline's (PyTorch's
    first step exchanges shapes before its first action): the last ones are paired. Nothing is paired when there
    are fewer ops than actions that need them (the hand-offs then stay unread, as when no op is named)."""
    mine = {label.compute.stage for _, label in computed if isinstance(label.compute, Action)}
    ordered = sorted(
        ((event, label.compute) for event, label in computed if isinstance(label.compute, Action)),
        key=lambda item: item[0].start,
    )

    def remote(stage: int) -> bool:
        return 0 <= stage < num_stages and stage not in mine

    needing = [(e, a) for e, a in ordered if remote(a.stage - 1 if a.kind is Kind.F else a.stage + 1) and a.kind
               is not Kind.W]  # fmt: skip
    feeding = [(e, a) for e, a in ordered if remote(a.stage + 1 if a.kind is Kind.F else a.stage - 1) and a.kind
               is not Kind.W]  # fmt: skip
    received = sorted((e for e in inside if e.name in RECEIVES), key=lambda e: e.start)
    sent = sorted((e for e in inside if e.name in SENDS), key=lambda e: e.start)
    received, sent = received[len(received) - len(needing) :], sent[len(sent) - len(feeding) :]
    receives: list[tuple[Hand, float]] = []
    if len(received) == len(needing):
        for data, (_, action) in zip(received, needing, strict=True):
            direction = "F" if action.kind is Kind.F else "B"
            receives.append((Hand(action.stage, direction, action.microbatch, data.start, data.end), data.end))
    sends: tuple[Hand, ...] = ()
    if len(sent) == len(feeding):
        sends = tuple(
            Hand(action.stage, "F" if action.kind is Kind.F else "B", action.microbatch, data.start, data.end)
            for data, (_, action) in zip(sent, feeding, strict=True)
        )
    return receives, sends


def _completed_receives(inside, transfer_actions, computed, rank: int) -> list[tuple[Hand, float]]:
    """Each posted receive and when its data arrived: a RECV action's ``gloo:recv`` (the one it started), or
    for GPipe the receive started inside a compute span (``Forward i`` receives its activation, ``Backward i``
    its gradient, inside itself). Returns (hand, arrival)."""
    data = [event for event in inside if event.name in RECEIVES]
    found: list[tuple[Hand, float]] = []
    for event, (stage, kind, microbatch) in transfer_actions:
        if not kind.startswith("RECV"):
            continue
        started = [d for d in data if event.start <= d.start <= event.end]
        arrival = max((d.end for d in started), default=event.end)
        found.append((Hand(stage, kind[-1], microbatch, event.start, arrival), arrival))
    for event, label in computed:
        action = label.compute
        if not label.stageless or not isinstance(action, Action):
            continue
        started = [d for d in data if event.start <= d.start <= event.end]
        if started:
            arrival = max(d.end for d in started)
            direction = "F" if action.kind is Kind.F else "B"
            found.append((Hand(rank, direction, action.microbatch, event.start, arrival), arrival))
    return found


def _timed(event: Event, label: Label, rank: int, receives: list[tuple[Hand, float]]) -> TimedAction:
    slot = label.compute
    assert slot is not None
    if label.stageless and isinstance(slot, Action):  # GPipe's "Forward i": the rank's one stage
        slot = Action(rank, slot.kind, slot.microbatch)
    arrival = event.start
    for action in slot.actions if isinstance(slot, Overlap) else (slot,):
        direction = "F" if action.kind is Kind.F else "B"
        for hand, arrived in receives:
            if (hand.stage, hand.direction, hand.microbatch) == (action.stage, direction, action.microbatch):
                arrival = max(arrival, arrived)
    compute_start = min(max(event.start, arrival), event.end)
    if compute_start - event.start < MIN_WAIT_US:  # timer resolution, not a wait
        compute_start = event.start
    return TimedAction(slot, event.start, compute_start, event.end)


def _timed_by_kernels(actions: list[TimedAction], inside: list[Event]) -> list[TimedAction]:
    """GPU traces: each action's compute is its kernels' (not NCCL's) inside its GPU annotation."""
    kernels = [e for e in inside if e.category == "kernel" and not e.name.startswith(NCCL_KERNEL)]
    timed = []
    for action in actions:
        mine = [k for k in kernels if action.start <= k.start and k.end <= action.end + EDGE_US]
        if mine:
            start, end = min(k.start for k in mine), max(k.end for k in mine)
            start = action.start if start - action.start < MIN_WAIT_US else start
            timed.append(TimedAction(action.slot, action.start, start, max(end, start)))
        else:
            timed.append(action)
    return timed

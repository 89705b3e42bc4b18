"""Actions read from autograd events, for schedules that label none (PyTorch's ``Schedule1F1B``).

Each forward op autograd records carries a "Sequence number"; the backward the autograd engine runs for it
(``autograd::engine::evaluate_function: AddmmBackward0``) carries the same number. One rank of a one-stage-per-
rank schedule runs bursts of forward ops and bursts of backward functions, separated by its sends and receives
(``c10d::send``, ``c10d::recv_``): each burst is one action, F or B. Such schedules run each rank's forwards in
micro-batch order and its backwards in micro-batch order too (1F1B, GPipe), so the k-th forward burst is F of
micro-batch k and the k-th backward burst B of micro-batch k; the stage is the rank. Every action read so is
marked ``inferred``. On CPU traces an action reaches from its input's arrival to its output's send, as a
labelled span does (``_to_the_hand_offs``), so one trace reads alike with and without labels.
"""

from __future__ import annotations

from ..ir import Action, Kind
from .actions import NCCL_KERNEL, RECEIVES, Hand, RankStep
from .reading import Event, RankTrace, keeps
from .timed import TimedAction

BACKWARD_PREFIX = "autograd::engine::evaluate_function"
LAUNCHES = (
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "hipLaunchKernel",
    "hipExtLaunchKernel", "hipModuleLaunchKernel", "hipExtModuleLaunchKernel",
)  # fmt: skip
"""The runtime calls that launch a kernel: Kineto gives each the ``correlation`` its kernel carries."""
COMMUNICATION_PREFIXES = ("c10d::", "gloo:", "nccl:")
SEND_OPS = ("c10d::send", "gloo:send", "nccl:send")
"""A point-to-point send: the c10d op on the calling thread, and its backend's span (gloo's on a worker thread)."""
ARRIVAL_SLACK_US = 50.0
"""A receive that ends this soon after an action's first op still fed it (the op may start as it returns)."""


def keeps_autograd(event: dict) -> bool:
    """What inference needs besides the usual: every op autograd recorded (those with a sequence number)."""
    if keeps(event):
        return True
    args = event.get("args")
    if event.get("ph") != "X" or not isinstance(args, dict):
        return False
    return "Sequence number" in args or (event.get("name") in LAUNCHES and "correlation" in args)


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
    sends = _sends(events, actions)  # on the CPU ops' times, as the send ops are: before any GPU re-timing
    notes: tuple[str, ...] = ()
    if not trace.has_gpu:  # the CPU's own work around the ops is the stage's
        actions = _to_the_hand_offs(actions, events)
    else:  # each action's time is its kernels', found through its ops' launches
        actions, on_cpu = _on_the_gpu(actions, backward_bursts, forward_ops, trace.events)
        if on_cpu:
            notes = (f"rank {rank}: {on_cpu} of {len(actions)} inferred actions launched no kernel we could match; "
                     "they keep their CPU time",)  # fmt: skip
    actions.sort(key=lambda action: action.start)
    return RankStep(rank, tuple(actions), sends=sends, receives=_receives(events, actions, rank), notes=notes)


def _on_the_gpu(
    actions: list[TimedAction], bursts, forward_ops, every: tuple[Event, ...]
) -> tuple[list[TimedAction], int]:
    """GPU traces: each inferred action timed by the kernels its CPU ops launched — a launch (``cudaLaunchKernel``)
    inside one of the action's ops, on the op's thread, carries the ``correlation`` id of its kernel. An action
    whose ops launched nothing keeps its CPU time: their number is returned with the actions."""
    launches: dict[object, list[Event]] = {}
    kernels: dict[int, Event] = {}
    for event in every:
        if event.name in LAUNCHES and _whole(event.args.get("correlation")):
            launches.setdefault(event.thread, []).append(event)
        elif event.category == "kernel" and not event.name.startswith(NCCL_KERNEL):
            if _whole(event.args.get("correlation")):
                kernels[event.args["correlation"]] = event
    ops_of = _ops_of_actions(actions, bursts, forward_ops)
    timed, on_cpu = [], 0
    for action in actions:
        mine = [
            kernels[launch.args["correlation"]]
            for op in ops_of.get(id(action), [])
            for launch in launches.get(op.thread, [])
            if op.start <= launch.start <= op.end and launch.args["correlation"] in kernels
        ]
        if not mine:
            timed.append(action)
            on_cpu += 1
            continue
        start, end = min(k.start for k in mine), max(k.end for k in mine)
        timed.append(TimedAction(action.slot, start, start, end, inferred=True))
    return timed, on_cpu


def _ops_of_actions(actions, bursts, forward_ops) -> dict[int, list[Event]]:
    """Each inferred action's CPU ops (by the action's id): its backward burst, or its forward's ops."""
    found: dict[int, list[Event]] = {}
    for action in actions:
        slot = action.slot
        if not isinstance(slot, Action) or slot.microbatch >= len(bursts):
            continue
        burst = bursts[slot.microbatch]
        if slot.kind is Kind.B:
            found[id(action)] = burst
        else:
            numbers = {int(e.args["Sequence number"]) for e in burst if "Sequence number" in e.args}
            found[id(action)] = [op for n in numbers for op in _last_run(forward_ops.get(n, []), burst[0].start)]
    return found


def _to_the_hand_offs(actions: list[TimedAction], events: list[Event]) -> list[TimedAction]:
    """Each CPU action widened to the hand-offs around it: from its input's arrival (the end of the receive that
    fed it) and to its output's send (the start of the first send after it), where no other communication op
    lies between. The runtime's own work there (unpacking the input, detaching and packing the output) is the
    stage's, as a labelled span counts it (``engine.traces.blocking`` ends that span at the send): read without
    it, a GPipe trace's unlabelled bubble was 0.12 above its labelled one."""
    talk = [e for e in events if e.name.startswith(COMMUNICATION_PREFIXES)]
    ordered = sorted(actions, key=lambda action: action.start)
    widened: list[TimedAction] = []
    for index, action in enumerate(ordered):
        before = widened[-1].end if widened else -float("inf")
        after = ordered[index + 1].start if index + 1 < len(ordered) else float("inf")
        start, end = action.start, action.end
        arrivals = [e.end for e in talk if e.name in RECEIVES and before <= e.end <= start]
        if arrivals and not any(max(arrivals) < e.start < start for e in talk):
            start = max(arrivals)
        departures = [e.start for e in talk if e.name in SEND_OPS and end <= e.start <= after]
        if departures and not any(end <= e.start < min(departures) for e in talk):
            end = min(departures)
        widened.append(TimedAction(action.slot, start, start, end, inferred=True))
    return widened


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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


def _sends(events: list[Event], actions: list[TimedAction]) -> tuple[Hand, ...]:
    """Each action's output, where one left between its end and the next action's start: the first send op
    there (a forward's activation to the next stage, a backward's gradient to the previous one). Its start is the
    earliest the data can have left, which is what the clocks need (``engine.traces.clocks``: a receive cannot
    end before its send began). Sends before the first action are not an action's (PyTorch's first step
    exchanges shapes there)."""
    sends = [e for e in events if e.name in SEND_OPS]
    ordered = sorted(actions, key=lambda action: action.start)
    found = []
    for action, after in zip(ordered, ordered[1:] + [None], strict=True):
        until = float("inf") if after is None else after.start
        left = [e for e in sends if action.end <= e.start <= until]
        if left and isinstance(action.slot, Action):
            first = min(left, key=lambda e: e.start)
            direction = "F" if action.slot.kind is Kind.F else "B"
            found.append(Hand(action.slot.stage, direction, action.slot.microbatch, first.start, first.end))
    return tuple(found)

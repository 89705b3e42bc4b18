"""Whether a job whose traces label no pipeline action is a pipeline at all.

Reading actions from autograd events (``engine.traces.inferred``) finds bursts of forward ops and of backward
functions in any training job: a single-GPU step or a data-parallel one has them too (DDP's gradient buckets read
as five micro-batches, with a 0.4 % "bubble"). What only a pipeline has is stages on different ranks that hand
activations forward and gradients back: point-to-point sends and receives between ranks, in both directions. So
before inferring, each rank of the step must both send and receive; a job without that is refused with what it
looks like instead (its collectives counted, and placed: inside the forward is tensor parallelism), once the
actions are inferred the hand-offs must flow as a pipeline's (``engine.traces.flow``, which weighs them against
the collectives), and an inferred order that breaks a pipeline's own rules is refused too.

What counts, per rank and step: the ``c10d::send``/``c10d::recv_`` ops, else the backend's ``gloo:``/``nccl:``
send and receive spans, else NCCL's ``SendRecv`` kernels (GPU traces); collectives the same way (``c10d::
allreduce_``, ``gloo:all_reduce``, ``nccl:all_reduce``, NCCL's ``AllReduce`` kernels…), each family counted once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..ir import Action, Kind
from .actions import RankStep
from .reading import RankTrace, TraceError

_SEND = re.compile(r"(c10d::send|gloo:send|nccl:send)$")
_RECEIVE = re.compile(r"(c10d::recv_?|c10d::recv_any_source_|gloo:recv|nccl:recv)$")
_SENDRECV_KERNEL = re.compile(r"nccl(Dev)?Kernel_SendRecv")
_COLLECTIVE = re.compile(
    r"(?:c10d::|gloo:|nccl:|nccl(?:Dev)?Kernel_)_?(all_?reduce|all_?gather(?:_into_tensor)?|reduce_?scatter"
    r"(?:_tensor)?|broadcast|all_?to_?all|barrier)",
    re.IGNORECASE,
)
_BACKWARD = "autograd::engine::evaluate_function"
_FAMILIES = ("c10d::", "gloo:", "nccl:", "kernel")
"""Where a communication is recorded, from the op down to the GPU: one family's count stands for the rank."""


@dataclass(frozen=True)
class Communication:
    """One rank's communication in one step."""

    sends: int = 0
    receives: int = 0
    collectives: dict[str, int] = field(default_factory=dict)
    """By kind ("all-reduce", "all-gather", …), counted in the most detailed family the trace has."""

    def describe(self) -> str:
        words = [f"{count} {kind}" for kind, count in sorted(self.collectives.items(), key=lambda item: -item[1])]
        return ", ".join(words) if words else "no collective"


def communication(trace: RankTrace, window: tuple[float, float]) -> Communication:
    """What ``trace`` communicated inside ``window`` (µs)."""
    low, high = window
    by_family: dict[str, dict[str, int]] = {family: {} for family in _FAMILIES}
    for event in trace.events:
        if not low <= event.start <= high:
            continue
        family = (
            "kernel" if event.category == "kernel" else next((f for f in _FAMILIES if event.name.startswith(f)), None)
        )
        if family is None:
            continue
        counts = by_family[family]
        if _SEND.match(event.name) or (family == "kernel" and _SENDRECV_KERNEL.match(event.name)):
            counts["send"] = counts.get("send", 0) + 1
        if _RECEIVE.match(event.name):
            counts["receive"] = counts.get("receive", 0) + 1
        elif (found := _COLLECTIVE.match(event.name)) is not None:
            kind = _kind(found.group(1))
            counts[kind] = counts.get(kind, 0) + 1
    family = next((f for f in _FAMILIES if by_family[f]), None)
    if family is None:
        return Communication()
    counts = dict(by_family[family])
    sends, receives = counts.pop("send", 0), counts.pop("receive", 0)
    if family == "kernel":  # a SendRecv kernel is either: it moves data one way or the other
        receives = sends
    return Communication(sends, receives, counts)


def _kind(name: str) -> str:
    plain = name.lower().replace("_", "")
    for prefix, kind in (("allreduce", "all-reduce"), ("allgather", "all-gather"), ("reducescatter",
                         "reduce-scatter"), ("broadcast", "broadcast"), ("alltoall", "all-to-all")):  # fmt: skip
        if plain.startswith(prefix):
            return kind
    return "barrier"


def refuse_unless_pipeline(
    by_rank: dict[int, RankTrace], windows: dict[int, tuple], step: int | None
) -> dict[int, Communication]:
    """TraceError, saying what the job looks like, when its unlabelled traces show no pipeline: one rank only, a
    rank that neither sends nor receives in the step, or one that only sends or only receives. Returns what each
    rank communicated (weighed again once the actions are inferred: ``engine.traces.flow``)."""
    where = f"ProfilerStep#{step}" if step is not None else "the trace"
    seen = {rank: communication(trace, windows[rank]) for rank, trace in sorted(by_rank.items())}
    first = next(iter(by_rank.values()))
    if len(by_rank) == 1:
        rank, talk = next(iter(seen.items()))
        raise TraceError(
            f"{first.name}: one rank's trace and no pipeline labels ({where}: {talk.sends} send(s), "
            f"{talk.receives} receive(s), {talk.describe()}): a pipeline runs its stages on several ranks, so give "
            "every rank's trace; a single-device job has no pipeline bubble to read"
        )
    summary = "; ".join(f"rank {rank}: {talk.describe()}" for rank, talk in list(seen.items())[:4])
    silent = [rank for rank, talk in seen.items() if talk.sends + talk.receives == 0]
    if silent:
        kind = _collective_job(by_rank, windows, seen)
        raise TraceError(
            f"no send or receive between ranks in {where} on rank(s) {few(silent)} ({summary}): this looks like "
            f"{kind}, which has no pipeline bubble to read; a pipeline's traces label their actions (PP:0F3) or "
            "show each stage handing activations forward and gradients back"
        )
    refuse_one_way(seen, where)
    return seen


def _collective_job(by_rank, windows, seen: dict[int, Communication]) -> str:
    """What a job with collectives and no hand-offs is, by where its collectives run: inside the forward (before
    the step's first backward function) a tensor-parallel layer all-reduces its output (or, sequence parallel,
    reduce-scatters it); FSDP only all-gathers its parameters there; data parallelism all-reduces in the
    backward."""
    early: dict[str, int] = {}
    for rank, trace in by_rank.items():
        low, high = windows[rank]
        backwards = [e.start for e in trace.events if low <= e.start <= high and e.name.startswith(_BACKWARD)]
        for kind, count in communication(trace, (low, min(backwards, default=high))).collectives.items():
            early[kind] = early.get(kind, 0) + count
    if early.get("all-reduce") or early.get("reduce-scatter"):
        found = ", ".join(f"{count} {kind}" for kind, count in sorted(early.items()))
        return (f"a tensor-parallel job (its layers' outputs combined inside each forward: {found} before the "
                "first backward, over all ranks; no hand-offs between stages)")  # fmt: skip
    if early.get("all-gather"):
        return "a sharded data-parallel job (FSDP: parameters all-gathered before each forward, no hand-offs)"
    if any("all-reduce" in talk.collectives for talk in seen.values()):
        return "a data-parallel job (its gradients all-reduced, no hand-offs between stages)"
    return "not a pipeline"


def refuse_one_way(seen: dict[int, Communication], where: str) -> None:
    """TraceError when a rank only sends or only receives: every stage of a training pipeline does both (the
    first sends activations and receives gradients, the last the reverse), so such a rank's hand-offs move
    something else (a loss sent to be logged)."""
    one_way = {rank: talk for rank, talk in seen.items() if not (talk.sends and talk.receives)}
    if one_way:
        said = "; ".join(f"rank {rank}: {t.sends} send(s), {t.receives} receive(s), {t.describe()}" for rank, t in
                         list(seen.items())[:4])  # fmt: skip
        raise TraceError(
            f"rank(s) {few(sorted(one_way))} only send or only receive in {where} ({said}), where every stage of a "
            f"pipeline both sends and receives (activations one way, gradients the other): this looks like "
            f"{data_parallel_kind(seen)}, which has no pipeline bubble to read"
        )


def data_parallel_kind(seen: dict[int, Communication]) -> str:
    """What a job whose few hand-offs carry no pipeline is, beside its all-reduces: data parallelism that sends
    a value (the loss, to be logged) as often as its busiest sender does."""
    most = max(talk.sends for talk in seen.values())
    often = "once a step" if most == 1 else f"{most} times a step"
    reduced = any("all-reduce" in talk.collectives for talk in seen.values())
    return f"a data-parallel job that sends the loss {often}" if reduced else "not a pipeline"


def outweighing(seen: dict[int, Communication]) -> str | None:
    """The first rank whose collectives outnumber its sends and receives more than twice over, said in words;
    None when none does. Only where the hand-offs show no pipeline's flow (``engine.traces.flow``): a stage of a
    tensor- or FSDP-parallel pipeline all-reduces or gathers per layer, far more often than it hands off."""
    for rank, talk in seen.items():
        hands = talk.sends + talk.receives
        if sum(talk.collectives.values()) > 2 * hands:
            return f"rank {rank}'s collectives ({talk.describe()}) outweigh its {hands} sends and receives"
    return None


SEVERAL_STAGES = (
    "a schedule that runs several stages on each rank (interleaved, a V) looks like this without labels: the lab "
    "infers one stage per rank only, and its actions' labels name the stages (PyTorch's multi-stage schedules write "
    "them in the profiler, PP:0F3; --pattern reads another framework's)"
)
"""What an unlabelled interleaved or V trace is told: why its order cannot be inferred, and what would read it."""


def refuse_broken_order(steps: dict[int, RankStep]) -> None:
    """TraceError when an inferred order breaks what a one-stage-per-rank pipeline does: its forwards and its
    backwards each in micro-batch order, each micro-batch's forward before its backward, and the same number of
    micro-batches on every rank."""
    counts = {rank: sum(isinstance(a.slot, Action) and a.slot.kind is Kind.F for a in step.actions) for rank, step
              in steps.items()}  # fmt: skip
    if len(set(counts.values())) > 1:
        found = ", ".join(f"rank {rank}: {count}" for rank, count in sorted(counts.items()))
        raise TraceError(
            f"the inferred forwards differ between ranks ({found}); a pipeline runs every micro-batch on every "
            "stage: label the actions, or these traces are not one pipeline's"
        )
    for rank, step in sorted(steps.items()):
        for kind in (Kind.F, Kind.B):
            mine = sorted((a for a in step.actions if isinstance(a.slot, Action) and a.slot.kind is kind),
                          key=lambda a: a.start)  # fmt: skip
            order = [a.slot.microbatch for a in mine if isinstance(a.slot, Action)]
            if order != sorted(order):
                raise TraceError(
                    f"rank {rank}: the inferred {kind.name} actions are not in micro-batch order, which a pipeline "
                    f"without labels (1F1B, GPipe) always runs: these traces are not one such pipeline's; "
                    f"{SEVERAL_STAGES}"
                )
        ends = {a.slot.microbatch: a.end for a in step.actions if isinstance(a.slot, Action) and a.slot.kind is Kind.F}
        for action in step.actions:
            if isinstance(action.slot, Action) and action.slot.kind is Kind.B:
                if action.start < ends.get(action.slot.microbatch, action.start):
                    raise TraceError(
                        f"rank {rank}: the inferred backward of micro-batch {action.slot.microbatch} starts before its "
                        "forward ends: these traces are not one pipeline's"
                    )


def few(numbers: list[int], shown: int = 4) -> str:
    """At most ``shown`` numbers and a count of the rest: "0, 1, 2, 3 and 124 more"."""
    head = ", ".join(map(str, numbers[:shown]))
    return head if len(numbers) <= shown else f"{head} and {len(numbers) - shown:,} more"

"""One rank's overlapped chunks: a profile like DeepSeek's of DualPipe, read for what it is — each component's
kernel time, the communication kernels' time and the share of it that ran under compute — not refused, and not
read as a pipeline.

DeepSeek published a PyTorch-profiler trace of one H800 rank running one overlapped pair of a forward and a
backward chunk of DeepSeek-V3, 4 MoE layers each (deepseek-ai/profile-data ``train.json``; EP64, TP1, 4K
sequence length, "the PP communication is not included during profiling", its README). Its code labels each
component of each pass with ``record_function``: ``attn(F)``, ``dispatch(F)``, ``mlp(F)``, ``combine(F)``, the
same for the backward for inputs (B) and ``attn(W)``, ``mlp(W)`` for the weights — the four components DualPipe
rearranges in a chunk pair (DeepSeek-V3 report §3.2.1, Figure 4: attention, all-to-all dispatch, MLP,
all-to-all combine).

What such a trace holds, and how it is read:

* ``user_annotation`` spans named ``component(P)``, P one of F, B, I, W (``CHUNK_LABEL``), on CPU threads;
* kernel launches (``cudaLaunchKernel``, ``cuLaunchKernel``… in ``cuda_runtime``/``cuda_driver``) on those
  threads, each with the ``correlation`` id its kernel carries (Kineto's ``ac2g`` flow events join the same
  pairs by the same id: the correlation is on both ends already);
* the kernels on their streams, DeepEP's all-to-all on a stream of its own.

Each kernel belongs to the label open, innermost, on the thread that launched it. A thread with no label open
borrows the innermost one open on another thread of its process: PyTorch's autograd engine launches a backward's
kernels from its own thread for the device while the thread that opened ``attn(B)`` waits in ``backward()``
(DeepSeek's ``attn(B)`` launches nothing from its own thread). Kernels launched under no label, or whose launch
the trace lacks, still count in the totals and are shown apart (``outside``). Which kernels communicate, and the
overlap arithmetic: ``engine.traces.overlap``.

Such a trace is recognised when exactly one file is given and it labels chunks so and no pipeline action (no
``PP:`` label, no ``Forward i``). No pipeline bubble is claimed for it: a bubble is the time a pipeline's ranks
wait for one another, and this is one rank whose trace holds no pipeline send or receive.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

from ..ir import Kind
from .evidence import communication
from .names import read_label
from .overlap import common, is_communication, merged, total
from .profiled_steps import steps_to_read
from .reading import Event, KeptBudget, RankTrace, TraceError, category_of, keeps, read_rank_trace
from .values import whole

CHUNK_LABEL = re.compile(r"([A-Za-z_][A-Za-z0-9_.-]{0,63})\(([FBIW])\)")
"""A component and its pass: ``attn(F)``, ``dispatch(B)``, ``mlp(W)`` (I: a backward for inputs, named so)."""
PASSES = "".join(kind.name for kind in Kind)  # F, B, I, W: the passes in the order a chunk pair runs them
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")
OUTSIDE = "(no chunk label)"
"""The row of kernels launched under no label, or whose launch the trace lacks."""
US_PER_MS = 1000.0


def _labels_chunk(event: dict) -> bool:
    name = event.get("name")
    return (
        event.get("ph") == "X"
        and category_of(event) == "user_annotation"
        and isinstance(name, str)
        and CHUNK_LABEL.fullmatch(name) is not None
    )


def _is_launch(event: dict) -> bool:
    name, args = event.get("name"), event.get("args")
    return (
        event.get("ph") == "X"
        and category_of(event) in LAUNCH_CATEGORIES
        and isinstance(name, str)
        and "Launch" in name
        and isinstance(args, dict)
        and whole(args.get("correlation"))
    )


def keeps_chunk_labels(event: dict) -> bool:
    """What the pipeline view keeps, and the chunk labels: enough to tell such a trace from a pipeline rank's."""
    return keeps(event) or _labels_chunk(event)


def keeps_chunks(event: dict) -> bool:
    """What reading the chunks needs besides: the kernel launches (read again only for a trace of chunks)."""
    return keeps_chunk_labels(event) or _is_launch(event)


def chunk_trace(traces: list[RankTrace]) -> RankTrace | None:
    """The one file given, when it labels chunks (``component(P)``) and no pipeline action; else None."""
    if len(traces) != 1:
        return None
    events = traces[0].events
    labelled = any(e.category == "user_annotation" and CHUNK_LABEL.fullmatch(e.name) for e in events)
    return traces[0] if labelled and not any(read_label(e.name).compute is not None for e in events) else None


@dataclass(frozen=True)
class ComponentTime:
    """One label's kernels (all its spans together), ms."""

    label: str
    """``attn(F)``, or ``OUTSIDE``."""
    spans: int
    """How many times the label was opened."""
    kernels: int
    kernel_ms: float
    """The sum of its kernels' durations (every kernel in one row, so the rows add up to the GPU's kernel time)."""
    communication_kernel_ms: float
    compute_kernel_ms: float
    hidden_ms: float
    """Its communication kernels' union intersected with the union of every compute kernel (``overlap``)."""

    def as_dict(self) -> dict:
        found = CHUNK_LABEL.fullmatch(self.label)
        return {
            "label": self.label,
            "component": found.group(1) if found else None,
            "pass": found.group(2) if found else None,
            **{key: value for key, value in self.__dict__.items() if key != "label"},
        }


@dataclass(frozen=True)
class OverlappedChunks:
    """One rank's overlapped chunks, measured from its kernels (ms)."""

    file: str
    rank: int | None
    world_size: int | None
    backend: str | None
    step: int | None
    """The ``ProfilerStep#N`` read; None: the whole trace."""
    communication_ms: float
    """The union of the communication kernels' intervals (``overlap``)."""
    compute_ms: float
    """The union of every other kernel's intervals."""
    hidden_ms: float
    """Communication time during which a compute kernel ran: the two unions' intersection."""
    gpu_busy_ms: float
    """The union of every kernel's intervals."""
    gpu_span_ms: float
    """From the first kernel's start to the last one's end."""
    communication_kernels: int
    compute_kernels: int
    components: tuple[ComponentTime, ...]
    """One per label, in pass order (F, B, I, W), each pass's components in the order they first ran."""
    outside: ComponentTime | None
    bubble: str
    """Why no pipeline bubble is claimed, in one line."""
    notes: tuple[str, ...] = ()

    @property
    def hidden_fraction(self) -> float | None:
        """The share of the communication time hidden under compute (None when nothing communicated)."""
        return self.hidden_ms / self.communication_ms if self.communication_ms > 0 else None

    @property
    def exposed_ms(self) -> float:
        return self.communication_ms - self.hidden_ms

    def describe(self) -> str:
        """One line: what the file is and what was read of it."""
        said = [] if self.rank is None else [f"rank {self.rank}" + ("" if self.world_size is None else
                                                                      f" of {self.world_size}")]  # fmt: skip
        said += [self.backend] if self.backend else []
        where = "the whole trace" if self.step is None else f"ProfilerStep#{self.step}"
        labels = sum(component.spans for component in self.components)
        kernels = self.communication_kernels + self.compute_kernels
        return (
            f"{self.file}: one rank's overlapped chunks ({', '.join(said) or 'no rank said'}), {where}: {labels} "
            f"chunk labels of {len(self.components)} components, {kernels:,} kernels"
        )

    def summary(self) -> dict:
        return {
            "kind": "overlapped_chunks",
            "files": [self.file],
            "backend": self.backend,
            "rank": self.rank,
            "world_size": self.world_size,
            "profiler_step": self.step,
            "time_unit": "ms",
            "bubble_fraction": None,
            "bubble": self.bubble,
            "overlap": {
                "communication_ms": self.communication_ms,
                "compute_ms": self.compute_ms,
                "hidden_ms": self.hidden_ms,
                "hidden_fraction": self.hidden_fraction,
                "exposed_communication_ms": self.exposed_ms,
                "gpu_busy_ms": self.gpu_busy_ms,
                "gpu_span_ms": self.gpu_span_ms,
                "communication_kernels": self.communication_kernels,
                "compute_kernels": self.compute_kernels,
                "components": [component.as_dict() for component in self.components],
                "outside_chunks": None if self.outside is None else self.outside.as_dict(),
            },
            "notes": list(self.notes),
        }


def read_chunks(
    trace: RankTrace, budget: KeptBudget, *, step: int | None, rank: int | None, unused: tuple[str, ...] = ()
) -> OverlappedChunks:
    """The chunks of ``trace`` (``chunk_trace``'s): its file read again with the launches, each kernel given to
    its label, then measured (TraceError in one line when it cannot be). ``step``: the ``ProfilerStep#N`` to
    read (None: the whole trace); ``rank``: the user's, else the trace's; ``unused``: the pipeline-only settings
    given, said to be unused."""
    full = read_rank_trace(trace.path, name=trace.name, keep=keeps_chunks, budget=budget)
    step, (low, high) = _window(full, step)
    labels = [e for e in full.events if e.category == "user_annotation" and CHUNK_LABEL.fullmatch(e.name)]
    launches: dict[int | None, Event] = {}
    for event in full.events:
        if event.category in LAUNCH_CATEGORIES and "Launch" in event.name and _correlation(event) is not None:
            launches.setdefault(_correlation(event), event)
    every = [e for e in full.events if e.category == "kernel"]
    if not every:
        named = sorted({e.name for e in labels})
        raise TraceError(
            f"{trace.name}: labels chunks ({', '.join(named[:4])}{' …' if len(named) > 4 else ''}) but holds no GPU "
            "kernel: the overlap of communication and compute is read from kernels (ProfilerActivity.CUDA)"
        )
    launch_of = {id(k): launches.get(_correlation(k)) for k in every}
    kernels = [k for k in every if low <= _when(k, launch_of[id(k)]) <= high]
    if not kernels:
        raise TraceError(f"{trace.name}: no kernel was launched in ProfilerStep#{step}")
    labels = [e for e in labels if low <= e.start <= high]
    owners, borrowed = _owners(labels, [launch_of[id(k)] for k in kernels])
    label_of = {id(k): _label(owners, launch_of[id(k)]) for k in kernels}
    talks = {id(k): is_communication(k.name) for k in kernels}
    compute_union = _by_device(k for k in kernels if not talks[id(k)])
    communication_union = _by_device(k for k in kernels if talks[id(k)])
    first: dict[str, float] = {}
    for label in sorted(labels, key=lambda e: e.start):
        first.setdefault(label.name, label.start)
    mine: dict[str, list[Event]] = {name: [] for name in (*first, OUTSIDE)}
    for kernel in kernels:
        mine[label_of[id(kernel)]].append(kernel)
    spans = Counter(label.name for label in labels)
    order = sorted(first, key=lambda name: (PASSES.index(name[-2]), first[name]))
    rows = {name: _row(name, mine[name], talks, spans[name], compute_union) for name in (*order, OUTSIDE)}
    outside = rows.pop(OUTSIDE)
    devices = len(compute_union.keys() | communication_union.keys())
    return OverlappedChunks(
        file=trace.name,
        rank=full.rank if rank is None else rank,
        world_size=full.world_size,
        backend=full.backend,
        step=step,
        communication_ms=sum(total(u) for u in communication_union.values()) / US_PER_MS,
        compute_ms=sum(total(u) for u in compute_union.values()) / US_PER_MS,
        hidden_ms=sum(common(u, compute_union.get(d, [])) for d, u in communication_union.items()) / US_PER_MS,
        gpu_busy_ms=sum(total(u) for u in _by_device(kernels).values()) / US_PER_MS,
        gpu_span_ms=(max(k.end for k in kernels) - min(k.start for k in kernels)) / US_PER_MS,
        communication_kernels=sum(talks.values()),
        compute_kernels=len(kernels) - sum(talks.values()),
        components=tuple(rows.values()),
        outside=outside if outside.kernels else None,
        bubble=_bubble(full, (low, high)),
        notes=_notes(full, borrowed, outside if outside.kernels else None, unused, devices),
    )


def _window(trace: RankTrace, wanted: int | None) -> tuple[int | None, tuple[float, float]]:
    """The whole trace, or the ``ProfilerStep#N`` asked for (its launches' kernels and its labels)."""
    if wanted is None:
        return None, (-float("inf"), float("inf"))
    step, windows = steps_to_read({0: trace}, wanted)[0]
    return step, windows[0]


def _correlation(event: Event) -> int | None:
    """The id Kineto gives a launch and its kernel (None unless a whole number: ``True`` is no id 1)."""
    found = event.args.get("correlation")
    return found if whole(found) else None


def _when(kernel: Event, launch: Event | None) -> float:
    """When a kernel was asked for: its launch's time (the CPU's clock, where the labels and steps are)."""
    return kernel.start if launch is None else launch.start


def _owners(labels: list[Event], launches: list[Event | None]) -> tuple[dict[int, Event], int]:
    """Each launch's label (by the launch's id): the innermost open on its thread, else on its process; and how
    many were borrowed so from another thread."""
    mine = list({id(launch): launch for launch in launches if launch is not None}.values())
    on_thread, on_process = _grouped(labels, _thread), _grouped(labels, _process)
    owners: dict[int, Event] = {}
    for thread, here in _grouped(mine, _thread).items():
        owners.update(_innermost(on_thread.get(thread, []), here))
    alone = [launch for launch in mine if id(launch) not in owners]
    borrowed: dict[int, Event] = {}
    for process, here in _grouped(alone, _process).items():
        borrowed.update(_innermost(on_process.get(process, []), here))
    return owners | borrowed, len(borrowed)


def _thread(event: Event) -> Hashable:
    return (event.process, event.thread)


def _process(event: Event) -> Hashable:
    return event.process


def _grouped(events: list[Event], key: Callable[[Event], Hashable]) -> dict[Hashable, list[Event]]:
    found: dict[Hashable, list[Event]] = {}
    for event in events:
        found.setdefault(key(event), []).append(event)
    return found


def _innermost(labels: list[Event], launches: list[Event]) -> dict[int, Event]:
    """For each launch (by id), the label open at its start that began last, in one sweep: labels pushed as they
    begin, popped from the top once ended — a label left below the top that has ended is popped when it
    surfaces, and one that began later than the top and is open would be above it."""
    ordered = sorted(labels, key=lambda e: (e.start, -e.duration))
    found: dict[int, Event] = {}
    stack: list[Event] = []
    next_label = 0
    for launch in sorted(launches, key=lambda e: e.start):
        while next_label < len(ordered) and ordered[next_label].start <= launch.start:
            stack.append(ordered[next_label])
            next_label += 1
        while stack and stack[-1].end < launch.start:
            stack.pop()
        if stack:
            found[id(launch)] = stack[-1]
    return found


def _label(owners: dict[int, Event], launch: Event | None) -> str:
    owner = None if launch is None else owners.get(id(launch))
    return OUTSIDE if owner is None else owner.name


def _by_device(kernels: Iterable[Event]) -> dict[int | str, list[tuple[float, float]]]:
    """Each device's (Kineto's GPU pid) kernels, as the union of their intervals (µs)."""
    intervals: dict[int | str, list[tuple[float, float]]] = {}
    for kernel in kernels:
        intervals.setdefault(kernel.process, []).append((kernel.start, kernel.end))
    return {device: merged(found) for device, found in intervals.items()}


def _row(name: str, kernels: list[Event], talks: dict[int, bool], spans: int, compute_union: dict) -> ComponentTime:
    talking = [k for k in kernels if talks[id(k)]]
    hidden = sum(common(union, compute_union.get(device, [])) for device, union in _by_device(talking).items())
    return ComponentTime(
        label=name,
        spans=spans,
        kernels=len(kernels),
        kernel_ms=sum(k.duration for k in kernels) / US_PER_MS,
        communication_kernel_ms=sum(k.duration for k in talking) / US_PER_MS,
        compute_kernel_ms=sum(k.duration for k in kernels if not talks[id(k)]) / US_PER_MS,
        hidden_ms=hidden / US_PER_MS,
    )


def _bubble(trace: RankTrace, window: tuple[float, float]) -> str:
    talk = communication(trace, window)
    return (
        f"no pipeline bubble: one rank's trace, with {talk.sends} pipeline send(s) and {talk.receives} receive(s) in "
        "it; a bubble is the time a pipeline's ranks wait for one another, which only every rank's traces show"
    )


def _notes(
    trace: RankTrace, borrowed: int, outside: ComponentTime | None, unused: tuple[str, ...], devices: int
) -> tuple[str, ...]:
    notes = [
        "communication: DeepEP's all-to-all kernels (dispatch, combine and their notify kernels) and NCCL's, by "
        "the kernel's own name; every other kernel computes. Each time is the union of its kernels' intervals on "
        "the GPU; hidden: the communication time during which compute kernels ran"
    ]
    if borrowed:
        notes.append(
            f"{borrowed:,} kernel launch(es) came from a thread with no label open (PyTorch's autograd thread runs "
            "a backward's launches): each belongs to the label open on another thread of the process then"
        )
    if outside is not None:
        notes.append(
            f"{outside.kernels:,} kernel(s), {outside.kernel_ms:.3f} ms, launched under no chunk label (or their "
            "launch is not in the trace): in the totals, shown apart"
        )
    copies = trace.counts.get("gpu_memcpy", 0) + trace.counts.get("gpu_memset", 0)
    if copies:
        notes.append(f"{copies:,} GPU memory copies and sets are not kernels: left out")
    if devices > 1:
        notes.append(f"kernels on {devices} devices: each device's overlap measured on its own, then added")
    if unused:
        notes.append(f"{' and '.join(unused)} not used: one rank's chunks have no pipeline order, and one clock")
    return tuple(notes)

"""Reading one rank's profiler trace, streaming: the events the pipeline view needs, and the header.

A real job's ``torch.profiler`` (Kineto) trace is one Chrome-trace JSON object per rank, often gzipped and
hundreds of MB: ``{"schemaVersion": 1, "deviceProperties": [...], "distributedInfo": {"backend": "nccl",
"rank": 0, "world_size": 8}, "baseTimeNanoseconds": ..., "traceEvents": [...], "traceName": ...}``, where each
event's ``ts`` and ``dur`` are microseconds from ``baseTimeNanoseconds``.

[Note: streaming JSON] The events are read with ``ijson`` (its C backend, yajl2_c): ``ijson.items`` walks the
``traceEvents`` array and builds one small dict per event, which is kept only when the pipeline view needs it
(pipeline actions, steps, communication, GPU kernels) — memory stays flat whatever the file's size (11 MB for a
100 MB trace, measured by ``benchmarks/traces.py``), where ``json`` or ``orjson`` build the whole document
(about 1 GB for 100 MB). The header's few keys are read from the first and last bytes of the same pass.
"""

from __future__ import annotations

import gzip
import io
import re
import stat
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import ijson

from ..codecs import escaped
from .pg_config import group_names, process_groups
from .shape import ShapeError, TextShape
from .values import header_keys, is_number, magnitude, shown, type_name, whole

MAX_TRACE_BYTES = 2 * 1024**3
"""The largest trace file (as stored, compressed or not) the lab reads: 2 GiB."""
MAX_KEPT_BYTES = 256 * 1024**2
"""What the kept events of all ranks together may take in memory, estimated (``event_bytes``): 256 MiB, about
630,000 events without arguments. A budget in bytes across every file, not a count per rank: a count per rank
lets tiny events pile up on every rank at once (5 million per rank take 3.4 GB and about a minute to read)."""
MAX_TEXT_BYTES = 4 * 1024**3
"""The most decompressed text one file may hold (a gzip "bomb" is refused when it passes this, not read on)."""
MAX_DURATION_US = 3600e6
"""An event (a step, an action) longer than an hour is not a pipeline step's."""
MAX_TIME_US = 1e17
"""Timestamps are µs since the trace's base time or since 1970 (1.7e15 in 2024); beyond this is no time."""
MAX_FIELD_CHARACTERS = 100
"""The most of a trace's text field (``distributedInfo.backend``) the lab keeps to show."""
HEADER_WINDOW = 256 * 1024
"""How much of the text's start and end is searched for the header's keys."""
GZIP_MAGIC = b"\x1f\x8b"


class TraceError(ValueError):
    """A trace the lab cannot read, in one line that names the file and says what was found."""


@dataclass(frozen=True)
class Event:
    """One kept trace event (a complete "X" span), times in µs as the file has them."""

    name: str
    category: str
    start: float
    duration: float
    thread: int | str
    """Kineto's tid: a CPU thread, or on GPU tracks the stream ("stream 7")."""
    process: int | str = 0
    """Kineto's pid (the lab's own traces: the rank)."""
    args: dict = field(default_factory=dict, compare=False)

    @property
    def end(self) -> float:
        return self.start + self.duration


@dataclass(frozen=True)
class RankTrace:
    """What one rank's file holds for the pipeline view."""

    path: str
    """Where the file is (read again for the autograd events when the trace has no labels)."""
    name: str
    """The file as the user named it: what every message says (an upload's own name, never a server's folder),
    every control character in it escaped (``codecs.escaped``)."""
    rank: int | None
    """From ``distributedInfo``; None when the trace does not say (then the file name, or the user, decides)."""
    world_size: int | None
    backend: str | None
    """``distributedInfo.backend`` ("nccl"), escaped and at most ``MAX_FIELD_CHARACTERS`` long: it is shown."""
    base_ns: int
    """``baseTimeNanoseconds``: event times are µs after it (0 when the trace has none)."""
    events: tuple[Event, ...]
    """The kept events, in file order."""
    counts: dict[str, int]
    """How many events of each category the file has (kept or not): what a refusal says was found."""
    has_gpu: bool
    """Kineto recorded GPU activity (kernels): the timeline must come from the GPU tracks."""
    groups: tuple[tuple[int, ...], ...] = ()
    """The ranks of each process group ``distributedInfo.pg_config`` lists (a pipeline group among them)."""
    group_names: tuple[tuple[tuple[int, ...], str], ...] = ()
    """Each listed group's ranks and its description and name ("mesh_dp 1"): what the group is for
    (``engine.traces.groups``)."""


KEEP_NAMES = re.compile(
    r"PP:|Forward \d|Backward \d|ProfilerStep#|gloo:|c10d::|nccl:|record_param_comms|"
    r"autograd::engine::evaluate_function|Optimizer\.step|ncclDevKernel|ncclKernel"
)
KEEP_CATEGORIES = ("kernel", "gpu_user_annotation", "gpu_memcpy", "F", "B", "I", "W")
OLD_CATEGORIES = {"Kernel": "kernel", "Memcpy": "gpu_memcpy", "Memset": "gpu_memset", "Runtime": "cuda_runtime",
                  "Operator": "cpu_op", "Trace": "trace"}  # fmt: skip
"""Older Kineto (PyTorch 1.8–1.10) wrote these category names; read as today's."""


def category_of(event: dict) -> str:
    """The event's category as today's Kineto names it ("" when it has none or it is not text)."""
    category = event.get("cat", "")
    return OLD_CATEGORIES.get(category, category) if category.__class__ is str else ""


"""GPU work, and the lab's own traces' actions (``engine.chrome_trace`` files them under their kind)."""


def keeps(event: dict) -> bool:
    """Whether the pipeline view needs this event: a complete span that is a pipeline action, a step, a
    communication op, a backward the autograd engine ran, or GPU work."""
    if event.get("ph") != "X":
        return False
    name = event.get("name")
    return category_of(event) in KEEP_CATEGORIES or (isinstance(name, str) and KEEP_NAMES.match(name) is not None)


class KeptBudget:
    """The memory the kept events of every file read so far take, estimated, against ``MAX_KEPT_BYTES``."""

    def __init__(self, limit: int = MAX_KEPT_BYTES) -> None:
        self.limit, self.used = limit, 0

    def take(self, event: Event, name: str) -> None:
        self.used += event_bytes(event)
        if self.used > self.limit:
            raise TraceError(
                f"{name}: the events the pipeline view keeps need more than {self.limit // 2**20} MiB in all the "
                f"files read so far (estimated {event_bytes(event)} bytes each); the lab reads traces of a few "
                "profiler steps (schedule=torch.profiler.schedule(wait=1, warmup=1, active=2))"
            )


def event_bytes(event: Event) -> int:
    """A kept event's memory, estimated: measured 677 bytes for a 6-character name and 3 arguments (CPython 3.11:
    the object, its two floats, its strings and its argument dict)."""
    return 420 + len(event.name) + len(event.category) + 85 * len(event.args)


class _TooLarge(Exception):
    """Raised from inside the JSON reader's read when the decompressed text passes ``MAX_TEXT_BYTES``."""


class _CountingReader(io.RawIOBase):
    """The decompressed text, counted as it is read (for the progress bar), keeping its first and last
    ``HEADER_WINDOW`` bytes (where Kineto writes the header)."""

    def __init__(self, raw: BinaryIO, stored: BinaryIO, progress: Callable[[int], None] | None) -> None:
        self.raw, self.stored, self.progress = raw, stored, progress
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.shape = TextShape()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.raw.read(len(buffer))
        while data and not data.strip() and self.shape.string_since is None:  # whitespace between values: skipped
            self._count(data)  # here at the speed of decompression, not at the parser's
            self.shape.gap()
            data = self.raw.read(len(buffer))
        self._count(data)
        self.shape.feed(data)  # ShapeError before the parser builds too deep a value or too long a string
        size = len(data)
        buffer[:size] = data
        if len(self.head) < HEADER_WINDOW:
            self.head += data[: HEADER_WINDOW - len(self.head)]
        self.tail = (self.tail + data)[-HEADER_WINDOW:]
        if self.progress is not None:
            self.progress(self.stored.tell())
        return size

    def _count(self, data: bytes) -> None:
        self.total += len(data)
        if self.total > MAX_TEXT_BYTES:
            raise _TooLarge


def read_rank_trace(
    path: str | Path,
    *,
    name: str | None = None,
    progress: Callable[[int], None] | None = None,
    keep: Callable[[dict], bool] = keeps,
    budget: KeptBudget | None = None,
) -> RankTrace:
    """Stream one rank's trace (``.json`` or ``.json.gz``); TraceError in one line for what cannot be read, naming
    the file as ``name`` (default: ``path`` as given), escaped (``codecs.escaped``: this is where a file's name
    enters every message of the reading). ``budget``: shared by every file of one job."""
    path = Path(path)
    name = escaped(str(path) if name is None else name)
    _check_regular_file(path, name)
    budget = budget or KeptBudget()
    used = budget.used
    try:
        events, counts, has_gpu, header = _read(path, name, progress, keep, budget, ijson)
    except _IntegerOverflow:  # Kineto writes ids past int64 ("Comms Id"): the pure-Python parser reads them
        budget.used = used
        events, counts, has_gpu, header = _read(path, name, progress, keep, budget, ijson.get_backend("python"))
    info = header.get("distributedInfo")
    if info is not None and not isinstance(info, dict):
        raise TraceError(f'{name}: distributedInfo is {type_name(info)}, not an object like {{"rank": 0, …}}')
    info = info or {}
    backend = info.get("backend")
    base = header.get("baseTimeNanoseconds") or 0
    if not whole(base) or not 0 <= base < 2**63:
        raise TraceError(f"{name}: baseTimeNanoseconds is {shown(base)}, not a whole number of nanoseconds")
    return RankTrace(
        path=str(path),
        name=name,
        rank=_whole_or_none(info.get("rank")),
        world_size=_whole_or_none(info.get("world_size")),
        backend=_field_text(backend) if isinstance(backend, str) else None,
        base_ns=base,
        events=events,
        counts=counts,
        has_gpu=has_gpu,
        groups=process_groups(info.get("pg_config")),
        group_names=group_names(info.get("pg_config")),
    )


def _read(path: Path, name: str, progress, keep, budget: KeptBudget, parser) -> tuple:
    """One pass over the file with ``parser`` (an ijson backend): the kept events, the counts, whether it has GPU
    kernels, and the header."""
    try:
        stored = open(path, "rb")  # noqa: SIM115 - closed below, after the header is read
    except OSError as error:
        raise TraceError(f"{name}: cannot be read ({error.strerror or type(error).__name__})") from None
    with stored:
        magic = stored.read(2)
        stored.seek(0)
        raw: BinaryIO = gzip.GzipFile(fileobj=stored) if magic == GZIP_MAGIC else stored  # type: ignore[assignment]
        reader = _CountingReader(raw, stored, progress)
        found = _kept_events(name, io.BufferedReader(reader, 1 << 20), keep, budget, parser)
        return (*found, header_keys(bytes(reader.head), bytes(reader.tail)))


class _IntegerOverflow(Exception):
    """The C parser met an integer beyond 64 bits (valid JSON; Kineto writes such ids)."""


def _check_regular_file(path: Path, name: str) -> None:
    """A FIFO would hang the reader, a directory or a device is no trace: refused before anything opens it."""
    try:
        mode = path.stat().st_mode
    except OSError as error:
        raise TraceError(f"{name}: cannot be read ({error.strerror or type(error).__name__})") from None
    if not stat.S_ISREG(mode):
        kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
                 (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"))  # fmt: skip
        kind = next((words for test, words in kinds if test(mode)), "not a regular file")
        raise TraceError(f"{name}: is {kind}, not a trace file")
    size = path.stat().st_size
    if size > MAX_TRACE_BYTES:
        raise TraceError(
            f"{name}: {size / 2**30:.1f} GiB; the lab reads traces of at most {MAX_TRACE_BYTES // 2**30} GiB"
        )


def _kept_events(
    name: str, text: BinaryIO, keep: Callable[[dict], bool], budget: KeptBudget, parser=ijson
) -> tuple[tuple[Event, ...], dict, bool]:
    kept: list[Event] = []
    counts: dict[str, int] = {}
    try:
        for number, raw in enumerate(parser.items(text, "traceEvents.item", use_float=True), 1):
            if raw.__class__ is not dict:
                continue
            category = category_of(raw)
            counts[category] = counts.get(category, 0) + 1
            if keep(raw):
                event = _event(raw, name, number, category)
                budget.take(event, name)
                kept.append(event)
        has_gpu = "kernel" in counts
    except (ijson.JSONError, ijson.IncompleteJSONError) as error:
        if "integer overflow" in str(error):
            raise _IntegerOverflow from None
        raise TraceError(f"{name}: not a complete JSON trace ({_first_line(error)})") from None
    except ShapeError as error:
        raise TraceError(f"{name}: {error}") from None
    except _TooLarge:
        raise TraceError(
            f"{name}: decompresses to more than {MAX_TEXT_BYTES // 2**30} GiB of text; the lab reads up to that"
        ) from None
    except (OSError, EOFError, zlib.error) as error:  # a truncated or damaged gzip
        raise TraceError(f"{name}: the compressed file is damaged or cut short ({_first_line(error)})") from None
    if not counts:
        raise TraceError(f"{name}: no traceEvents found; is this a torch.profiler (Chrome trace) file?")
    return tuple(kept), counts, has_gpu


def _event(raw: dict, name: str, number: int, category: str) -> Event:
    """One kept event, each field checked for its type and range (TraceError naming the event otherwise).
    Hundreds of thousands pass here: the usual event (float times, whole ids, an argument object) is checked
    without building anything, and the message's text is made only for an event that fails."""
    label = raw.get("name", "")
    start, duration = raw.get("ts", 0.0), raw.get("dur", 0.0)
    thread, process = raw.get("tid", 0), raw.get("pid", 0)
    args = raw.get("args", {})
    usual = (
        label.__class__ is str
        and start.__class__ is float
        and duration.__class__ is float
        and -MAX_TIME_US <= start <= MAX_TIME_US
        and 0 <= duration <= MAX_DURATION_US
        and thread.__class__ is int
        and process.__class__ is int
        and args.__class__ is dict
    )
    if not usual:
        _check_event(raw, name, number)
    return Event(label, category, float(start), float(duration), thread, process, args)


def _check_event(raw: dict, name: str, number: int) -> None:
    """The full check of an event that is not the usual one: TraceError saying which field is wrong, and how."""
    label = raw.get("name", "")
    where = f"{name}: event {number:,}" + (f" ({shown(label)})" if isinstance(label, str) else "")
    if not isinstance(label, str):
        raise TraceError(f"{where}: its name is {type_name(label)}, not text")
    start, duration = raw.get("ts", 0.0), raw.get("dur", 0.0)
    for field_name, value in (("ts", start), ("dur", duration)):
        if not is_number(value):
            raise TraceError(f'{where}: "{field_name}" is {shown(value)}, not a number of microseconds')
    if not abs(start) <= MAX_TIME_US:  # int against float compares exactly, whatever the int's size
        raise TraceError(f'{where}: "ts" is {magnitude(start)} µs, beyond any clock (at most {MAX_TIME_US:g})')
    if not 0 <= duration <= MAX_DURATION_US:
        raise TraceError(
            f'{where}: "dur" is {magnitude(duration)} µs; an event lasts from 0 to an hour ({MAX_DURATION_US:g} µs)'
        )
    thread, process = raw.get("tid", 0), raw.get("pid", 0)
    for field_name, value in (("tid", thread), ("pid", process)):
        if not (whole(value) or (isinstance(value, str) and len(value) <= 200)):
            raise TraceError(f'{where}: "{field_name}" is {shown(value)}, not a number or a short name')
    args = raw.get("args", {})
    if not isinstance(args, dict):
        raise TraceError(f'{where}: "args" is {type_name(args)}, not an object')


def _field_text(value: str) -> str:
    """A trace's text field as the lab shows it: escaped, and cut to ``MAX_FIELD_CHARACTERS`` with "…"."""
    value = escaped(value)
    return value if len(value) <= MAX_FIELD_CHARACTERS else value[:MAX_FIELD_CHARACTERS] + "…"


def _whole_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:200] if text else type(error).__name__

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
import json
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import ijson

MAX_TRACE_BYTES = 2 * 1024**3
"""The largest trace file (as stored, compressed or not) the lab reads: 2 GiB."""
MAX_KEPT_EVENTS = 5_000_000
"""Events kept from one rank (the pipeline's own are a small share of a trace)."""
MAX_TEXT_BYTES = 16 * 1024**3
"""The most decompressed text one file may hold (a gzip "bomb" is refused when it passes this, not read on)."""
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
    """The file, as the user named it."""
    rank: int | None
    """From ``distributedInfo``; None when the trace does not say (then the file name, or the user, decides)."""
    world_size: int | None
    backend: str | None
    base_ns: int
    """``baseTimeNanoseconds``: event times are µs after it (0 when the trace has none)."""
    events: tuple[Event, ...]
    """The kept events, in file order."""
    counts: dict[str, int]
    """How many events of each category the file has (kept or not): what a refusal says was found."""
    has_gpu: bool
    """Kineto recorded GPU activity (kernels): the timeline must come from the GPU tracks."""


KEEP_NAMES = re.compile(
    r"PP:|Forward \d|Backward \d|ProfilerStep#|gloo:|c10d::|nccl:|record_param_comms|"
    r"autograd::engine::evaluate_function|Optimizer\.step|ncclDevKernel|ncclKernel"
)
KEEP_CATEGORIES = ("kernel", "gpu_user_annotation", "gpu_memcpy", "F", "B", "I", "W")
"""GPU work, and the lab's own traces' actions (``Timeline.to_chrome_trace`` files them under their kind)."""


def keeps(event: dict) -> bool:
    """Whether the pipeline view needs this event: a complete span that is a pipeline action, a step, a
    communication op, a backward the autograd engine ran, or GPU work."""
    if event.get("ph") != "X":
        return False
    return event.get("cat") in KEEP_CATEGORIES or bool(KEEP_NAMES.match(str(event.get("name", ""))))


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

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.raw.read(len(buffer))
        size = len(data)
        self.total += size
        if self.total > MAX_TEXT_BYTES:
            raise _TooLarge
        buffer[:size] = data
        if len(self.head) < HEADER_WINDOW:
            self.head += data[: HEADER_WINDOW - len(self.head)]
        self.tail = (self.tail + data)[-HEADER_WINDOW:]
        if self.progress is not None:
            self.progress(self.stored.tell())
        return size


def read_rank_trace(
    path: str | Path, *, progress: Callable[[int], None] | None = None, keep: Callable[[dict], bool] = keeps
) -> RankTrace:
    """Stream one rank's trace (``.json`` or ``.json.gz``); TraceError in one line for what cannot be read."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as error:
        raise TraceError(f"{path}: cannot be read ({error.strerror or error})") from None
    if size > MAX_TRACE_BYTES:
        raise TraceError(
            f"{path}: {size / 2**30:.1f} GiB; the lab reads traces of at most {MAX_TRACE_BYTES // 2**30} GiB"
        )
    with open(path, "rb") as stored:
        magic = stored.read(2)
        stored.seek(0)
        raw: BinaryIO = gzip.GzipFile(fileobj=stored) if magic == GZIP_MAGIC else stored  # type: ignore[assignment]
        reader = _CountingReader(raw, stored, progress)
        events, counts, has_gpu = _kept_events(path, io.BufferedReader(reader, 1 << 20), keep)
        header = _header(path, bytes(reader.head), bytes(reader.tail))
    info = header.get("distributedInfo") or {}
    return RankTrace(
        path=str(path),
        rank=_whole_or_none(info.get("rank")),
        world_size=_whole_or_none(info.get("world_size")),
        backend=info.get("backend"),
        base_ns=int(header.get("baseTimeNanoseconds") or 0),
        events=events,
        counts=counts,
        has_gpu=has_gpu,
    )


def _kept_events(path: Path, text: BinaryIO, keep: Callable[[dict], bool]) -> tuple[tuple[Event, ...], dict, bool]:
    kept: list[Event] = []
    counts: dict[str, int] = {}
    has_gpu = False
    try:
        for raw in ijson.items(text, "traceEvents.item", use_float=True):
            if not isinstance(raw, dict):
                continue
            category = str(raw.get("cat", ""))
            counts[category] = counts.get(category, 0) + 1
            has_gpu = has_gpu or category == "kernel"
            if keep(raw):
                kept.append(_event(raw))
                if len(kept) > MAX_KEPT_EVENTS:
                    raise TraceError(f"{path}: more than {MAX_KEPT_EVENTS:,} pipeline events in one rank's trace")
    except (ijson.JSONError, ijson.IncompleteJSONError) as error:
        raise TraceError(f"{path}: not a complete JSON trace ({_first_line(error)})") from None
    except _TooLarge:
        raise TraceError(
            f"{path}: decompresses to more than {MAX_TEXT_BYTES // 2**30} GiB of text; the lab reads up to that"
        ) from None
    except (OSError, EOFError, zlib.error) as error:  # a truncated or damaged gzip
        raise TraceError(f"{path}: the compressed file is damaged or cut short ({_first_line(error)})") from None
    if not counts:
        raise TraceError(f"{path}: no traceEvents found; is this a torch.profiler (Chrome trace) file?")
    return tuple(kept), counts, has_gpu


def _event(raw: dict) -> Event:
    args = raw.get("args")
    return Event(
        name=str(raw.get("name", "")),
        category=str(raw.get("cat", "")),
        start=float(raw.get("ts", 0.0)),
        duration=float(raw.get("dur", 0.0)),
        thread=raw.get("tid", 0),
        process=raw.get("pid", 0),
        args=args if isinstance(args, dict) else {},
    )


HEADER_KEYS = ("distributedInfo", "baseTimeNanoseconds")


def _header(path: Path, head: bytes, tail: bytes) -> dict[str, Any]:
    """The header keys found in the text's first or last bytes (Kineto writes them around ``traceEvents``)."""
    found: dict[str, Any] = {}
    decoder = json.JSONDecoder()
    for window in (head, tail):
        text = window.decode("utf-8", errors="replace")
        for key in HEADER_KEYS:
            if key in found:
                continue
            match = re.search(rf'"{key}"\s*:\s*', text)
            if match is None:
                continue
            try:
                found[key] = decoder.raw_decode(text, match.end())[0]
            except json.JSONDecodeError:
                continue
    return found


def _whole_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:200] if text else type(error).__name__

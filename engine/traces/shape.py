"""The shape of a trace's raw text, checked before the JSON parser builds anything: how deep its brackets nest,
how long its strings run and how long its numbers are.

A parser builds what it reads: ``[[[[…]]]]`` 40,000 levels deep (a 160-byte gzip) costs the streaming parser
3.9 GB, since each level's path is a string as long as the depth (quadratic), and a 1 GiB name is built whole
before anything can look at its length; and one number token parses in time that grows with the square of its
length (a 20 MB number, a 20 KB gzip, kept the parser busy for 31–50 s before it gave up on it). A Kineto
trace is 4–5 levels deep, its longest strings are kernel names and Python stacks of a few KiB and its longest
numbers ids and timestamps of about 20 characters, so ``MAX_DEPTH``, ``MAX_STRING_BYTES`` and
``MAX_NUMBER_CHARACTERS`` refuse nothing real.

``TextShape.feed`` reads each chunk as the parser will, in constant memory and with numpy's speed: the quotes
that open and close strings (a quote after an odd run of backslashes is escaped), so brackets inside strings do
not count; then the running depth, and the length of every string, carried across chunks. Numbers: a run of
the bytes a JSON number is made of (``0-9 + - . e E``) outside strings, found with ``bytes.translate`` and
``bytes.find`` (about a millisecond a MiB), its length carried across chunks too.
"""

from __future__ import annotations

import json
import re

import numpy as np

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects the lab reads (a Kineto trace: 4–5)."""
MAX_STRING_BYTES = 64 * 1024
"""Longest string (a name, a key, an argument) the lab reads (Kineto's longest: stacks of a few KiB)."""
MAX_NUMBER_CHARACTERS = 64
"""Longest number token the lab reads: a timestamp in ns since 1970 has 19 digits, a float's repr at most 24
characters; a longer one is no time, id or duration (and an integer beyond a float, ``1`` and 400 digits,
could not be read as one)."""

_NUMBER_BYTE = bytes(1 if chr(code) in "0123456789+-.eE" else 0 for code in range(256))
"""``bytes.translate``'s table: 1 for a byte a JSON number is made of, 0 for any other."""
_LONG_NUMBER = b"\x01" * (MAX_NUMBER_CHARACTERS + 1)
_KEY_BEFORE = re.compile(rb'"((?:[^"\\]|\\.){1,200})"\s*:\s*\Z')
"""The object key a value follows (``"ts": ``), looked for in the bytes before a number that is too long."""
_CONTEXT_BYTES = 300

_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_IS_QUOTE, _IS_OPEN, _IS_CLOSE = 1, 2, 3
_MARK = np.zeros(256, np.uint8)
"""What each byte is to the shape: a quote, an opening bracket, a closing one, or nothing (0)."""
_MARK[_QUOTE] = _IS_QUOTE
_MARK[[ord("["), ord("{")]] = _IS_OPEN
_MARK[[ord("]"), ord("}")]] = _IS_CLOSE


class ShapeError(Exception):
    """The text nests deeper or holds a longer string than the lab reads: the message says which, and where."""


class TextShape:
    """The state carried from one chunk to the next: the depth, whether a string is open (and since which
    byte), and how many backslashes end the text so far."""

    def __init__(self) -> None:
        self.depth = 0
        self.deepest = 0
        self.offset = 0
        """Bytes fed so far."""
        self.string_since: int | None = None
        """Offset of the open string's first byte, or None outside strings."""
        self.trailing_backslashes = 0
        self.number_run = 0
        """Length of the number (outside a string) the text fed so far ends with."""
        self.number_context = b""
        """The bytes before that number (where its key is)."""
        self.recent = b""
        """The last bytes fed (the start of a key before a number the next chunk begins with)."""

    def gap(self) -> None:
        """Text left out between two chunks (whitespace the reader skipped): a number does not go on across it."""
        self.number_run, self.number_context = 0, b""

    def feed(self, chunk: bytes) -> None:
        """Check the next chunk (ShapeError past a bound)."""
        if not chunk:
            return
        data = np.frombuffer(chunk, np.uint8)
        # comparisons, not a table lookup: numpy compares a MiB in tens of µs and indexes it in milliseconds
        marked = (data == _QUOTE) | (data == 91) | (data == 93) | (data == 123) | (data == 125)  # " [ ] { }
        positions = np.flatnonzero(marked)
        kinds = _MARK[data[positions]]
        if self.trailing_backslashes or b"\\" in chunk:  # drop the escaped quotes (rare in a real trace)
            which = np.flatnonzero(kinds == _IS_QUOTE)
            keep = np.ones(len(positions), bool)
            keep[which[self._escaped(data, positions[which])]] = False
            positions, kinds = positions[keep], kinds[keep]
        is_quote = kinds == _IS_QUOTE
        inside_at_start = self.string_since is not None
        # inside a string before each mark: the parity of the quotes before it (and of the carried state)
        quotes_before = np.cumsum(is_quote) - is_quote + inside_at_start
        outside = (quotes_before & 1) == 0
        self._check_strings(positions[is_quote], inside_at_start, len(data))
        steps = np.where(outside & ~is_quote, np.where(kinds == _IS_OPEN, 1, -1), 0)
        self._check_depth(positions, steps)
        self._check_numbers(chunk, positions[is_quote], inside_at_start)
        self.offset += len(data)
        self.trailing_backslashes = self._backslashes_at_end(data)

    def _escaped(self, data: np.ndarray, quotes: np.ndarray) -> np.ndarray:
        """Which quotes follow an odd run of backslashes (a run may go on from the previous chunk): each quote's
        run counted back one byte at a time while any run goes on (runs are a byte or two in real traces)."""
        run = np.zeros(len(quotes), np.int64)
        going = np.ones(len(quotes), bool)
        back = 1
        while going.any():
            if back > 64:  # a long run of backslashes: count every run at once instead
                return self._escaped_long_runs(data, quotes)
            at = quotes - back
            going &= at >= 0
            going[going] = data[at[going]] == _BACKSLASH
            run += going
            back += 1
        reaches_start = run == quotes  # every byte before the quote is a backslash: the run began earlier
        run = run + np.where(reaches_start, self.trailing_backslashes, 0)
        return (run & 1) == 1

    def _escaped_long_runs(self, data: np.ndarray, quotes: np.ndarray) -> np.ndarray:
        is_backslash = data == _BACKSLASH
        last_other = np.maximum.accumulate(np.where(is_backslash, -1, np.arange(len(data))))
        before = np.maximum(quotes - 1, 0)
        run = np.where(quotes > 0, quotes - 1 - last_other[before], 0)
        reaches_start = (quotes == 0) | (last_other[before] == -1)
        run = run + np.where(reaches_start, self.trailing_backslashes, 0)
        return (run & 1) == 1

    def _check_strings(self, quotes: np.ndarray, inside_at_start: bool, size: int) -> None:
        """Each string's length, from its opening quote to its closing one (or to this chunk's end)."""
        bounds = self.offset + quotes
        if inside_at_start:
            bounds = np.concatenate((np.array([self.string_since], np.int64), bounds))
        opened, closed = bounds[0::2], bounds[1::2]
        if len(closed) and (longest := int((closed - opened[: len(closed)]).max())) > MAX_STRING_BYTES + 1:
            raise ShapeError(
                f"a string of {longest - 1:,} bytes; the lab reads strings of up to {MAX_STRING_BYTES // 1024} KiB "
                "(a trace's names and arguments are far shorter)"
            )
        self.string_since = int(opened[-1]) if len(opened) > len(closed) else None
        if self.string_since is not None and self.offset + size - self.string_since > MAX_STRING_BYTES + 1:
            raise ShapeError(
                f"a string longer than {MAX_STRING_BYTES // 1024} KiB (still open at byte "
                f"{self.offset + size:,}); the lab reads strings of up to {MAX_STRING_BYTES // 1024} KiB"
            )

    def _check_numbers(self, chunk: bytes, quotes: np.ndarray, inside_at_start: bool) -> None:
        """Every run of number bytes outside strings at most ``MAX_NUMBER_CHARACTERS`` long, the one the chunk
        starts with counted on from the previous chunk's end. ``quotes``: the chunk's unescaped quotes. (A run
        never spans a quote, so it is all inside a string or all outside.)"""
        kinds = chunk.translate(_NUMBER_BYTE)
        previous = self.recent

        def outside(at: int) -> bool:  # the parity of the quotes before ``at``, and of the carried state
            return (int(np.searchsorted(quotes, at)) + inside_at_start) % 2 == 0

        def before(at: int) -> bytes:  # the text before ``at``, where a number's key is
            return (previous + chunk[max(0, at - _CONTEXT_BYTES) : at])[-_CONTEXT_BYTES:]

        first_other = kinds.find(b"\x00")
        leading = len(kinds) if first_other < 0 else first_other
        if self.number_run and leading and self.number_run + leading > MAX_NUMBER_CHARACTERS:
            goes_on = leading == len(kinds)  # (a carried run is outside a string, and so is its rest)
            self._too_long(self.number_run + leading, self.offset - self.number_run, self.number_context, goes_on)
        at = kinds.find(_LONG_NUMBER)
        while at >= 0:
            end = kinds.find(b"\x00", at)
            if outside(at):
                self._too_long((len(kinds) if end < 0 else end) - at, self.offset + at, before(at), end < 0)
            at = -1 if end < 0 else kinds.find(_LONG_NUMBER, end)
        last_other = kinds.rfind(b"\x00")
        trailing = len(kinds) - 1 - last_other
        if trailing == 0 or not outside(len(kinds) - trailing):
            self.number_run, self.number_context = 0, b""
        elif last_other < 0 and self.number_run:  # the whole chunk is one number, going on from the previous one's
            self.number_run += trailing
        else:
            self.number_run, self.number_context = trailing, before(len(kinds) - trailing)
        self.recent = (previous + chunk[-_CONTEXT_BYTES:])[-_CONTEXT_BYTES:]

    def _too_long(self, length: int, at: int, before: bytes, goes_on: bool) -> None:
        key = _KEY_BEFORE.search(before)
        field = ""
        if key is not None:
            words = key.group(1).decode("utf-8", errors="replace")
            field = f" (the value of {json.dumps(words[:60] + ('…' if len(words) > 60 else ''))})"
        size = f"more than {length:,}" if goes_on else f"{length:,}"
        raise ShapeError(
            f"a number of {size} characters at byte {at:,}{field}; the lab reads numbers of up to "
            f"{MAX_NUMBER_CHARACTERS} characters (a timestamp or an id has about 20)"
        )

    def _check_depth(self, positions: np.ndarray, steps: np.ndarray) -> None:
        if not steps.any():
            return
        depth = np.cumsum(steps) + self.depth
        deepest = int(depth.max())
        if deepest > MAX_DEPTH:
            at = self.offset + int(positions[np.argmax(depth > MAX_DEPTH)])
            raise ShapeError(
                f"arrays and objects nested more than {MAX_DEPTH} deep (at byte {at:,}); a profiler trace nests "
                "4 or 5 deep"
            )
        self.deepest = max(self.deepest, deepest)
        self.depth = int(depth[-1])

    def _backslashes_at_end(self, data: np.ndarray) -> int:
        others = np.flatnonzero(data != _BACKSLASH)
        if len(others) == 0:
            return self.trailing_backslashes + len(data)
        return len(data) - 1 - int(others[-1])

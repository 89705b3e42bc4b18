"""What the command line writes to the terminal, and how it stays one line: JSON with finite, rounded floats;
an error with long values quoted short; stdout watched, so a full disk is told from a library's OSError; stderr
that may be gone after SIGHUP. ``engine.cli`` dispatches; this module only writes.

[Note: nothing acts on the terminal] Text from outside (file names, a trace's fields, values typed) is escaped
where a message quotes it (``codecs.escaped``, ``files.quoted``/``shown``), so the message itself, which the app
shows too, carries the escaped form. What reaches the terminal passes ``escaped`` once more: an error line
(``bounded``), a line on stderr (``say``) and everything written to stdout (``WatchedOutput``), so a control
character or a bidi override a module forgot to quote still shows as its escape; only the engine's own line
breaks (a grid, a table) and tabs stay."""

from __future__ import annotations

import json
import math
import os
import sys

from .chrome_trace import chrome_trace
from .codecs import CONTROL_CHARACTERS, escaped
from .files import QUOTE_LIMIT, check_output, output_file, quoted

JSON_DIGITS = 12
"""Significant digits of the floats --json prints: sums of durations leave crumbs like 22.000000000000007."""


class UsageError(Exception):
    """A bad command line; printed as one line, exit 2."""


def rounded(value):
    """``value`` with every float cut to ``JSON_DIGITS`` significant digits (lists and dicts walked)."""
    if isinstance(value, float):
        return float(f"{value:.{JSON_DIGITS}g}") if math.isfinite(value) else value
    if isinstance(value, dict):
        return {key: rounded(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [rounded(item) for item in value]
    return value


NOT_FINITE_KEY = "not_finite"
"""The field of a --json object that names each value written as null because it was not a finite number."""


def finite_only(value, where: str = "", found: dict[str, str] | None = None):
    """``value`` with every infinite or NaN float replaced by None (JSON's null: strict JSON has no Infinity or
    NaN, and a reader's parser rejects them), each one's place ("lower_bounds.cp-sat", "peak_memory[3]") and
    what it was ("inf", "-inf", "nan") recorded in ``found``."""
    if found is None:
        found = {}
    if isinstance(value, float) and not math.isfinite(value):
        found[where or "(the value)"] = repr(value)
        return None
    if isinstance(value, dict):
        return {key: finite_only(item, f"{where}.{key}" if where else str(key), found) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_only(item, f"{where}[{index}]", found) for index, item in enumerate(value)]
    return value


def json_text(summary: dict) -> str:
    """One line of strict JSON: floats cut to ``JSON_DIGITS`` digits; a value that is not finite is written as
    null, and the object's ``not_finite`` field says which and what it was (an unproven bound, a sum that
    overflowed), so a reader never meets ``Infinity`` or ``NaN`` and never loses the fact."""
    found: dict[str, str] = {}
    clean = finite_only(rounded(summary), found=found)
    if found:
        clean[NOT_FINITE_KEY] = found
    return json.dumps(clean, allow_nan=False)


def print_json(summary: dict) -> None:
    print(json_text(summary))


LONGEST_ERROR_LINE = 1000
"""A one-line error longer than this (a long value echoed by a module that does not quote) keeps its start
and its end around "…"; a ScheduleError's grid has several lines and prints whole."""


def bounded(message: str, argv: list[str]) -> str:
    """``message`` with every long command-line value in it quoted short (``quoted``), every control character
    but its own line breaks escaped ([Note: nothing acts on the terminal]), and, if it is one line, at most
    ``LONGEST_ERROR_LINE`` characters."""
    values = {value.partition("=")[2] if value.startswith("--") else value for value in argv}
    for value in sorted((v for v in values if len(v) > QUOTE_LIMIT), key=len, reverse=True):
        message = message.replace(repr(value), quoted(value)).replace(value, quoted(value))
    # a value typed with a line break in it (argparse echoes unknown arguments as typed) is one line too
    for value in sorted((v for v in {*argv, *values} if CONTROL_CHARACTERS.search(v)), key=len, reverse=True):
        message = message.replace(value, escaped(value))
    message = escaped(message, keep="\n")
    if "\n" not in message and len(message) > LONGEST_ERROR_LINE:
        head, tail = LONGEST_ERROR_LINE // 2, LONGEST_ERROR_LINE // 4
        message = f"{message[:head]} … {message[-tail:]} ({len(message):,} characters)"
    return message


def silence_stdout() -> None:
    """Point stdout at /dev/null, so what is left in its buffer does not fail again at exit (the recipe of
    Python's signal documentation for BrokenPipeError)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


class WatchedOutput:
    """``sys.stdout`` while a command runs: remembers a write that failed, so ``main`` can tell a full disk
    under ``> file`` from an OSError of a library; what is written shows every control character but a line break
    or a tab as its escape ([Note: nothing acts on the terminal])."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.failure: OSError | None = None

    def write(self, text: str) -> int:
        try:
            self.stream.write(escaped(text, keep="\n\t"))
            return len(text)  # what the caller gave, as io's write reports it
        except OSError as error:
            self.failure = error
            raise

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError as error:
            self.failure = error
            raise

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


def say(line: str) -> None:
    """One line on stderr (every control character in it escaped), unless stderr is gone (a closed terminal
    after SIGHUP)."""
    try:
        print(escaped(line), file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def check_trace_output(path: str | None, inputs: tuple[str, ...] = ()) -> None:
    """Fail before the work, not after it, when the trace asked for (``--trace``) cannot be written."""
    if path is not None:  # given, even as '': an empty name is refused, not taken as "no trace"
        check_output(path, inputs=inputs, what="trace")


def write_trace(timeline, path: str, inputs: tuple[str, ...] = ()) -> None:
    """``timeline`` as a Chrome/Perfetto trace at ``path`` (written whole or not at all, never over an input)."""
    with output_file(path, inputs=inputs, what="trace") as handle:
        json.dump(chrome_trace(timeline), handle)

"""Values read from a trace's text as the reader checks and shows them: numbers of any size (never converted
where a float would overflow), short one-line quotations for messages, and the header's few keys found around
``traceEvents``."""

from __future__ import annotations

import json
import math
import re
from typing import Any


def is_number(value: Any) -> bool:
    """A finite number: an integer of any size (never converted to a float here), or a finite float."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def magnitude(value: int | float) -> str:
    """A number as a message shows it (``:g``), an integer beyond a float's range included."""
    try:
        return f"{value:g}"
    except OverflowError:  # an int past 1.8e308: its order of magnitude, from its bits (``str`` of it may fail)
        return f"about 1e+{int(abs(int(value)).bit_length() * math.log10(2))}"


def whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def type_name(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "text", bool: "true/false", type(None): "null"}
    return names.get(type(value), "a number")


def shown(value: Any) -> str:
    """A value as a message shows it: short, never more than a line, and ASCII (``json.dumps`` escapes every
    control character and everything past ASCII)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**60:
        return magnitude(value)  # never ``str`` of a huge int (Python refuses past 4,300 digits)
    text = json.dumps(value) if isinstance(value, str | int | float | bool | type(None)) else type_name(value)
    return text if len(text) <= 60 else text[:40] + "…" + text[-10:]


HEADER_KEYS = ("distributedInfo", "baseTimeNanoseconds")


def header_keys(head: bytes, tail: bytes) -> dict[str, Any]:
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
            except (ValueError, RecursionError):  # JSONDecodeError, or an int past Python's digits limit
                continue
    return found

"""Reading values out of an address bar (pure: no Streamlit here), and showing a visitor's text safely.

A bad value never stops a page: each reader returns the default and adds a line to ``problems`` saying what
was wrong and what is used instead. Every value that came from a visitor is quoted with ``shown`` before it
goes into a message, because Streamlit renders warnings as Markdown: a link, an image, bold or ``$math$``
typed into a URL must come out as plain text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

SHOWN_CHARACTERS = 80
"""The most of a visitor's value a message quotes."""


def shown(value: object, limit: int = SHOWN_CHARACTERS) -> str:
    """``value`` as a Markdown code span, cut to ``limit`` characters with "…": nothing in it is rendered.

    CommonMark: a code span opened by n backticks ends at the next run of exactly n, so the fence is one
    longer than the longest run inside; a space pads a value that starts or ends with a backtick."""
    text = str(value)
    if len(text) > limit:
        text = text[:limit] + "…"
    text = text.replace("\n", " ").replace("\r", " ")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


MARKDOWN_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
"""Every ASCII punctuation character: CommonMark lets any of them be backslash-escaped to stand for itself."""
AUTOLINK_STARTS = re.compile(r"(://|www\.|@)", re.IGNORECASE)


def plain(text: object, limit: int = 600) -> str:
    """``text`` (a message that may quote a visitor's value) as Markdown that renders exactly that text: every
    punctuation character backslash-escaped (no link, image, emphasis, heading or ``$math$``), and a zero-width
    space in "://", "www." and "@", which GitHub-flavoured Markdown would otherwise turn into a link. Cut to
    ``limit`` characters with "…"."""
    value = str(text)
    if len(value) > limit:
        value = value[:limit] + "…"
    value = AUTOLINK_STARTS.sub(lambda match: match.group(1)[0] + "\u200b" + match.group(1)[1:], value)
    return MARKDOWN_PUNCTUATION.sub(r"\\\1", value).replace("\n", "  \n")


def whole(query: Mapping[str, str], key: str, low: int, high: int, default: int, problems: list[str]) -> int:
    text = query.get(key)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        problems.append(f"{key}={shown(text)}: expected a whole number from {low} to {high}; using {default}")
        return default
    return value


def choice(query: Mapping[str, str], key: str, options: tuple, default, problems: list[str]):
    """One of ``options`` (compared as text), or the default."""
    text = query.get(key)
    if text is None:
        return default
    for option in options:
        if text == str(option):
            return option
    problems.append(f"{key}={shown(text)}: expected one of {', '.join(map(str, options))}; using {default}")
    return default


def number(query: Mapping[str, str], key: str, high: float, default: float, problems: list[str]) -> float:
    text = query.get(key)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= high:
        problems.append(f"{key}={shown(text)}: expected a number from 0 to {high:g}; using {default:g}")
        return default
    return value


def flag(query: Mapping[str, str], key: str, default: bool, problems: list[str]) -> bool:
    text = query.get(key)
    if text is None:
        return default
    if text in ("0", "1", "true", "false"):
        return text in ("1", "true")
    problems.append(f"{key}={shown(text)}: expected 0 or 1; using {int(default)}")
    return default


def numbers(text: str) -> tuple[float, ...]:
    """Comma-separated numbers; ValueError when any part is not one."""
    return tuple(float(part) for part in text.split(","))


def written(value: float) -> str:
    """A number as the address bar writes it: 1, 0.5, 2.25."""
    return f"{value:g}"

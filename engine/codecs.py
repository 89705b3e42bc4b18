"""Text ⇄ value for one setting, with its bounds (the codecs a declaration in ``engine.options`` names), the
one number parser of the URL, the widgets' text and the command line, the one way text from outside enters a
message or the terminal (``escaped``: control characters and bidi overrides shown as escapes), and the two ways a
visitor's text is shown safely in Markdown.

A codec reads a value from text (``read``: ValueError saying what is expected), checks a value a widget holds
(``check``), writes a value back as a link does (``write``), and says what it accepts (``expected``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

ASCII_WHOLE = re.compile(r"[+-]?[0-9]+")
"""A whole number in ASCII digits only: ``int()`` would read "٣" (Arabic-Indic three) as 3."""
ASCII_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
"""A decimal number in ASCII (no "inf", "nan", underscores or non-ASCII digits, which ``float()`` accepts)."""


def read_whole(text: str) -> int:
    """An ASCII whole number (ValueError otherwise): the one integer parser of the URL, widgets' text and CLI."""
    text = text.strip()
    if len(text) > 40 or not ASCII_WHOLE.fullmatch(text):
        raise ValueError(f"{text!r} is not a whole number")
    return int(text)


def read_number(text: str) -> float:
    """A finite ASCII decimal number (ValueError otherwise): the one real-number parser."""
    text = text.strip()
    if len(text) > 40 or not ASCII_NUMBER.fullmatch(text):
        raise ValueError(f"{text!r} is not a number")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is too large")
    return value


CONTROL_CHARACTERS = re.compile(
    r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
"""What a terminal or a page acts on instead of showing: C0 controls (ESC starts a screen clear, a colour or a
window title; BEL, CR, LF), DEL, C1 controls (CSI U+009B is ESC [ on some terminals), the line and paragraph
separators, the bidirectional marks, embeddings, overrides and isolates ("Trojan Source": U+202E shows the rest
of a line backwards), and lone surrogates (a file name that is not UTF-8, which ``print`` cannot even encode)."""


def escaped(text: object, keep: str = "") -> str:
    """``text`` with every ``CONTROL_CHARACTERS`` character (but those in ``keep``) written as its Python escape
    (``\\x1b``, ``\\n``, ``\\u202e``), so it shows as what it is and stays on one line: the one way text from
    outside (a file name, a trace's fields, a value typed) enters a message or a line on the terminal. Nothing
    else changes: it is idempotent, and text without such characters comes back as it was."""
    value = str(text)
    if CONTROL_CHARACTERS.search(value) is None:  # the usual case: nothing to build
        return value
    return CONTROL_CHARACTERS.sub(lambda found: found[0] if found[0] in keep else _escape(found[0]), value)


def _escape(char: str) -> str:
    code = ord(char)
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char)
    if named is not None:
        return named
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


SHOWN_CHARACTERS = 80
"""The most of a visitor's value a message quotes."""


SHORT_CODE = re.compile(r":(?=[A-Za-z0-9_+\-/]+:)")
"""A colon that opens an emoji or icon short code (``:skull:``, ``:material/home:``), which Streamlit's Markdown
turns into a picture even when both colons are backslash-escaped."""


def code_span(value: object, limit: int = SHOWN_CHARACTERS) -> str:
    """``value`` as a Markdown code span, cut to ``limit`` characters with "…": nothing in it is rendered (the
    app shows problem lines as Markdown), a control character shows as its escape (``escaped``), and a short code
    is broken by a zero-width space after its colon.

    CommonMark: a code span opened by n backticks ends at the next run of exactly n, so the fence is one
    longer than the longest run inside; a space pads a value that starts or ends with a backtick."""
    text = str(value)
    if len(text) > limit:
        text = text[:limit] + "…"
    text = escaped(text)  # a line break or a control character shows as its escape, never acts
    text = SHORT_CODE.sub(":\u200b", text)  # Streamlit draws :material/…: as an icon even inside a code span
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
    space in "://", "www." and "@", which GitHub-flavoured Markdown would otherwise turn into a link, and after a
    colon that opens a short code (``:skull:`` would be drawn as 💀); every
    control character but a line break shown as its escape (``escaped``). Cut to ``limit`` characters with "…"."""
    value = str(text)
    if len(value) > limit:
        value = value[:limit] + "…"
    value = escaped(value, keep="\n")  # the message's own line breaks stay; every other control shows escaped
    value = AUTOLINK_STARTS.sub(lambda match: match.group(1)[0] + "\u200b" + match.group(1)[1:], value)
    value = SHORT_CODE.sub(":\u200b", value)  # a zero-width space after the colon: no short code is complete
    return MARKDOWN_PUNCTUATION.sub(r"\\\1", value).replace("\n", "  \n")


def written(value: float) -> str:
    """A number as the address bar writes it: 1, 0.5, 2.25."""
    return f"{value:g}"


# -- codecs: text ⇄ value, and the value's bounds -------------------------------------------------------------
@dataclass(frozen=True)
class Whole:
    low: int
    high: int

    def read(self, text: str) -> int:
        try:
            value = read_whole(text)
        except ValueError:
            raise ValueError(self.expected()) from None
        return self.check(value)

    def check(self, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not self.low <= value <= self.high:
            raise ValueError(self.expected())
        return value

    def write(self, value: int) -> str:
        return str(value)

    def expected(self) -> str:
        return f"expected a whole number from {self.low} to {self.high}"


@dataclass(frozen=True)
class Number:
    low: float
    high: float

    def read(self, text: str) -> float:
        try:
            value = read_number(text)
        except ValueError:
            raise ValueError(self.expected()) from None
        return self.check(value)

    def check(self, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(self.expected())
        if not self.low <= value <= self.high:
            raise ValueError(self.expected())
        return float(value)

    def write(self, value: float) -> str:
        return written(value)

    def expected(self) -> str:
        return f"expected a number from {self.low:g} to {self.high:g}"


@dataclass(frozen=True)
class Choice:
    options: tuple
    titles: Mapping | None = None
    """How a menu shows each option (None: the option itself)."""
    texts: tuple[str, ...] | None = None
    """How a link writes each option, when not ``str(option)`` (a toggle's False/True as "delay"/"shared")."""

    def _texts(self) -> tuple[str, ...]:
        return self.texts if self.texts is not None else tuple(map(str, self.options))

    def read(self, text: str) -> Any:
        for option, written_as in zip(self.options, self._texts(), strict=True):
            if text == written_as:
                return option
        raise ValueError(self.expected())

    def check(self, value: Any) -> Any:
        if value not in self.options:
            raise ValueError(self.expected())
        return value

    def write(self, value: Any) -> str:
        return self._texts()[self.options.index(value)]

    def expected(self) -> str:
        return f"expected one of {', '.join(self._texts())}"

    def title(self, value: Any) -> str:
        return str(self.titles.get(value, value) if self.titles else value)


@dataclass(frozen=True)
class Flag:
    def read(self, text: str) -> bool:
        if text in ("0", "1", "true", "false"):
            return text in ("1", "true")
        raise ValueError(self.expected())

    def check(self, value: Any) -> bool:
        if not isinstance(value, bool):
            raise ValueError(self.expected())
        return value

    def write(self, value: bool) -> str:
        return str(int(value))

    def expected(self) -> str:
        return "expected 0 or 1"


@dataclass(frozen=True)
class Text:
    """A value with a grammar of its own (costs, a layer split): ``parse`` raises ValueError in words."""

    parse: Callable[[str], Any]
    format: Callable[[Any], str]
    grammar: str
    """What the text looks like, for messages: "layers per stage like 3,4,4,3"."""

    def read(self, text: str) -> Any:
        try:
            return self.parse(text)
        except ValueError as error:
            raise ValueError(f"{error} (expected {self.grammar})") from None

    def check(self, value: Any) -> Any:
        return value

    def write(self, value: Any) -> str:
        return self.format(value)

    def expected(self) -> str:
        return f"expected {self.grammar}"


Codec = Whole | Number | Choice | Flag | Text

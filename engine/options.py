"""Settings declared once: a setting's URL key, codec, bounds, widget, label and help live in one ``Option``,
attached to the dataclass field that holds it, and everything else is derived from that declaration — the
address bar's codec (``Declared.from_query`` / ``to_query``), the widget keys and values (``widget_values`` /
``from_widgets``), the bound checks, and the command line's flags (``add_flags``, with the field's default).
torchtitan builds its command line from its config dataclasses the same way; here the URL and the widgets come
from it too (DESIGN.md habit 18). Pure: no Streamlit, no argparse state; the app draws the widgets from
``Option.widget``.

A setting is one field::

    num_ranks: int = declared(4, RANKS.narrowed(high=32))

A bad value never raises out of a reader: ``from_query`` names it in a problem line (the value quoted as a
Markdown code span, since the app renders warnings as Markdown) and keeps the default. On the command line a
bad value is argparse's one line: the flag, what it accepts, and what was given.

What a command takes that is not a setting (``--json``, an output file, the files to read) is declared once for
every command in ``EXTRAS``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, Self

from .codecs import (
    Choice,
    Codec,
    Flag,
    Number,
    Text,
    Whole,
    code_span,
    plain,
    read_number,
    read_whole,
    written,
)
from .files import shown

WIDGETS = ("slider", "number", "select", "radio", "select_slider", "toggle", "text", "none")
"""How the app may draw a setting ("none": the page draws it its own way)."""

__all__ = [
    "EXTRAS", "Amount", "Choice", "Codec", "Declared", "Extra", "Flag", "Number", "Option", "Text", "Whole",
    "add_extras", "add_flags", "amount", "choose", "code_span", "declared", "given_flags", "plain", "read_number",
    "read_whole", "real", "toggle", "verbatim", "whole", "written",
]  # fmt: skip


@dataclass(frozen=True)
class Option:
    """Everything about one setting but its value: the one declaration the URL, widget and CLI derive from."""

    key: str
    """URL key; the CLI flag is ``--key`` (underscores as dashes) unless ``flag`` says otherwise."""
    codec: Codec
    label: str
    """The widget's label."""
    help: str = ""
    """The widget's tooltip and the CLI flag's help."""
    widget: str = "number"
    """How the app draws it: one of ``WIDGETS`` ("none": the page draws it its own way)."""
    step: float | None = None
    """A number box's or slider's step."""
    flag: str | None = None
    """The CLI flag when it differs from ``--key``."""
    metavar: str | None = None
    """The flag's placeholder in ``--help`` when its name says too little of the value's form (``S0,S1,...``);
    None: the flag's name in capitals."""

    def __post_init__(self) -> None:
        assert self.widget in WIDGETS, f"{self.key}: widget {self.widget!r} is not one of {WIDGETS}"

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.key.replace("_", "-")

    def narrowed(self, **bounds: Any) -> Option:
        """The same setting with tighter bounds (the public app draws fewer ranks than the engine simulates)."""
        return replace(self, codec=replace(self.codec, **bounds))

    def read(self, text: str) -> Any:
        return self.codec.read(text)


# -- the common shapes of a declaration, one line each ---------------------------------------------------------
def choose(key: str, choices: Any, label: str, help: str = "", *, titles: Mapping | None = None, widget="select"):
    """One of ``choices`` (a menu by default; "radio" or "select_slider" for a few)."""
    return Option(key, Choice(tuple(choices), titles), label, help, widget=widget)


def toggle(key: str, label: str, help: str = "") -> Option:
    return Option(key, Flag(), label, help, widget="toggle")


def whole(key: str, low: int, high: int, label: str, help: str = "", *, widget: str = "number") -> Option:
    return Option(key, Whole(low, high), label, help, widget=widget, step=1 if widget == "number" else None)


def real(key: str, low: float, high: float, label: str, help: str = "", *, widget="number", step=None) -> Option:
    return Option(key, Number(low, high), label, help, widget=widget, step=step)


def amount(key: str, label: str, help: str = "", *, above: bool = False) -> Option:
    """A finite number ≥ 0 (> 0 with ``above``) with no upper bound of its own (``Amount``)."""
    return Option(key, Amount(above=above), label, help)


def verbatim(key: str, label: str, help: str = "", *, metavar: str | None = None) -> Option:
    """Text the command reads itself, with its own grammar and messages, once every flag is in (costs, a partition,
    a list of ranks): a flag takes it as typed."""
    return Option(key, Text(str, str, help or label), label, help, widget="text", metavar=metavar)


@dataclass(frozen=True)
class Amount(Number):
    """A finite number ≥ ``low`` (> ``low`` when ``above``) with no upper bound of its own: a command's transfer
    time or timeout, whose size the arithmetic that uses it checks (an overflow is refused there, with its
    numbers)."""

    low: float = 0.0
    high: float = math.inf
    above: bool = False

    def check(self, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(self.expected())
        if value < self.low or (self.above and value == self.low):
            raise ValueError(self.expected())
        return float(value)

    def expected(self) -> str:
        return f"expected a finite number {'>' if self.above else '≥'} {self.low:g}"


def declared(default: Any, option: Option) -> Any:
    """A dataclass field holding one setting: its default and its declaration."""
    if isinstance(default, (list, dict, set)):
        raise TypeError("a setting's default must be immutable")
    return field(default=default, metadata={"option": option})


# -- what a settings class derives from its declarations ------------------------------------------------------
class Declared:
    """Mixin for a frozen dataclass whose fields are declared with ``declared``: the URL codec, the widget
    binding's keys and values, and the bound checks, all from the declarations (in field order)."""

    PREFIX: ClassVar[str] = ""
    """The page's widget-key prefix (``pg``, ``sr``, ``pl``…); a class shared by pages takes one per call."""

    # a subclass may adjust what its declarations cannot say alone (which keys a link carries, cross-field
    # rules); each hook has a plain default
    def omitted_keys(self) -> set[str]:
        """Fields this value does not write to a link (say, a custom GPU's numbers while a preset is chosen)."""
        return set()

    @classmethod
    def options(cls) -> tuple[tuple[str, Option], ...]:
        return tuple((f.name, f.metadata["option"]) for f in fields(cls) if "option" in f.metadata)  # type: ignore[arg-type]

    @classmethod
    def option(cls, name: str) -> Option:
        return dict(cls.options())[name]

    @classmethod
    def default(cls, name: str) -> Any:
        """The setting's declared default (a command line's flag shows and takes it)."""
        return next(f.default for f in fields(cls) if f.name == name)  # type: ignore[arg-type]

    @classmethod
    def url_keys(cls) -> tuple[str, ...]:
        return tuple(option.key for _, option in cls.options())

    # -- the address bar -----------------------------------------------------------------------------------
    def to_query(self) -> dict[str, str]:
        omitted = self.omitted_keys()
        return {
            option.key: option.codec.write(getattr(self, name))
            for name, option in self.options()
            if name not in omitted
        }

    @classmethod
    def from_query(cls, query: Mapping[str, str], base: Self | None = None) -> tuple[Self, list[str]]:
        """The settings a link asks for (each key over ``base``), and a line per refused value."""
        settings = base if base is not None else cls()
        problems: list[str] = []
        given: dict[str, Any] = {}
        for name, option in cls.options():
            text = query.get(option.key)
            if text is None:
                continue
            try:
                given[name] = option.read(text)
            except ValueError as error:
                default = option.codec.write(getattr(settings, name)) or "none"
                # a grammar's error may quote the visitor's text: plain text, never markup
                said = plain(error) if isinstance(option.codec, Text) else str(error)
                problems.append(f"{option.key}={code_span(text)}: {said}; using {default}")
        return cls._after_query(replace(settings, **given), query, problems)  # type: ignore[type-var]

    @classmethod
    def _after_query(cls, settings: Self, query: Mapping[str, str], problems: list[str]) -> tuple[Self, list[str]]:
        """Cross-field rules once every key is read (a subclass overrides)."""
        return settings, problems

    # -- the widgets ---------------------------------------------------------------------------------------
    @classmethod
    def widget_key(cls, name: str, prefix: str | None = None) -> str:
        return f"{prefix or cls.PREFIX}_{name}"

    def widget_values(self, prefix: str | None = None) -> dict[str, object]:
        """Each setting as its widget holds it (a ``Text`` setting as its text)."""
        return {
            self.widget_key(name, prefix): option.codec.write(value) if isinstance(option.codec, Text) else value
            for name, option in self.options()
            for value in (getattr(self, name),)
        }

    @classmethod
    def from_widgets(cls, values: Mapping[str, object], prefix: str | None = None) -> tuple[Self, list[str]]:
        """The settings the widgets hold (a setting without a widget keeps its default), and a line per value
        that could not be read (typed text) or falls outside its bounds."""
        settings = cls()
        problems: list[str] = []
        given: dict[str, Any] = {}
        for name, option in cls.options():
            key = cls.widget_key(name, prefix)
            if key not in values:
                continue
            value = values[key]
            try:
                given[name] = option.read(str(value)) if isinstance(option.codec, Text) else option.codec.check(value)
            except ValueError as error:
                default = option.codec.write(getattr(settings, name)) or "none"
                said = plain(error) if isinstance(option.codec, Text) else str(error)  # may quote the typed text
                problems.append(f"{option.label}: {said}; using {default}")
        return replace(settings, **given), problems  # type: ignore[type-var]


# -- the command line --------------------------------------------------------------------------------------
def add_flags(
    parser: argparse.ArgumentParser | Any,
    settings: type[Declared],
    names: Sequence[str] | None = None,
    *,
    required: Collection[str] = (),
    given_only: bool = False,
    negated: bool = False,
) -> None:
    """One flag per named setting of ``settings`` (every one when ``names`` is None), typed, bounded and described
    by its declaration, its value stored under the setting's field name.

    A flag defaults to its setting's declared default, which its help states; with ``given_only`` it defaults to
    None, so that the command can tell a given flag from one left out (``plan`` starts from a preset). A
    ``required`` setting must be given. With ``negated`` each flag is ``--no-…`` and switches its setting off."""
    for name in [name for name, _ in settings.options()] if names is None else names:
        option = settings.option(name)
        default = None if given_only or name in required else settings.default(name)
        flag, arguments = _flag(option, name, default, required=name in required, negated=negated)
        parser.add_argument(flag, **arguments)


def _flag(option: Option, name: str, default: Any, *, required: bool, negated: bool) -> tuple[str, dict[str, Any]]:
    """A setting's flag and ``add_argument``'s keywords for it."""
    codec, words = option.codec, option.help or option.label
    if negated:
        arguments = {"dest": name, "default": default, "action": "store_false", "help": _escaped(f"without: {words}")}
        return "--no-" + option.cli_flag.removeprefix("--"), arguments
    if default is not None and not required and not isinstance(codec, Flag):
        shown_default = codec.write(default)
        words += f" Default: {shown_default}." if words.endswith(".") else f" (default: {shown_default})"
    arguments = {"dest": name, "default": default, "help": _escaped(words)}
    if required:
        arguments["required"] = True
    if isinstance(codec, Flag):
        arguments["action"] = "store_true"
    elif isinstance(codec, Choice) and all(isinstance(o, str) for o in codec.options):
        arguments["choices"] = list(codec.options)
    else:
        arguments["type"] = _argparse_type(option)
        arguments["metavar"] = option.metavar or option.cli_flag.removeprefix("--").replace("-", "_").upper()
    return option.cli_flag, arguments


def _escaped(help: str) -> str:
    return help.replace("%", "%%")  # argparse formats a help text with %: a literal one is doubled


def _argparse_type(option: Option) -> Callable[[str], Any]:
    """Reads and bounds a flag's text by ``option``'s declaration; argparse puts the flag's name in front."""

    def parse(text: str) -> Any:
        try:
            return option.read(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(f"{error}, got {shown(text)}") from None

    return parse


def given_flags(args: argparse.Namespace, names: Sequence[str]) -> dict[str, Any]:
    """The named settings given on the command line (those not None: ``add_flags(..., given_only=True)``)."""
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}


@dataclass(frozen=True)
class Extra:
    """A command-line argument that is not a setting: what to print, where to write it, which files to read."""

    help: str
    metavar: str | None = None
    """The value's placeholder in ``--help``; None: a switch, which takes no value."""
    positional: bool = False
    """One value or more, given without a flag (the trace command's files)."""


EXTRAS = {
    "json": Extra("print one JSON object"),
    "grid": Extra("print the rank × step grid"),
    "compare": Extra("add a table of every schedule family, simulated with the same costs"),
    "quiet": Extra("no progress bar"),
    "trace": Extra("write the timeline as a Chrome/Perfetto trace (open it in ui.perfetto.dev)", "FILE"),
    "out": Extra("write the schedule found as PyTorch's per-rank CSV", "FILE.csv"),
    "csv": Extra("write the simulated schedule as PyTorch's per-rank CSV", "FILE"),
    "torchtitan": Extra("write a torchtitan config fragment ('-': print it)", "FILE"),
    "from_csv": Extra(
        "simulate a PyTorch-format per-rank CSV instead of a family (compute-only, or lowered with SEND/RECV actions)",
        "FILE",
    ),
    "keep_best_on_interrupt": Extra(
        "on Ctrl-C, SIGTERM or SIGHUP, still write the best schedule found so far to --out (not proven); without "
        "it an interrupted search writes nothing"
    ),
    "fail_at": Extra(argparse.SUPPRESS, "RANK:ACTION"),  # hidden: the tests make one rank's action fail
    "files": Extra("one trace per rank (rank*.json or .json.gz)", "TRACE", positional=True),
}
"""Every argument of the commands that is not a setting, declared once: a command names the ones it takes
(``add_extras``), each with the same flag, placeholder and help wherever it appears."""


def add_extras(parser: argparse.ArgumentParser | Any, names: Sequence[str]) -> None:
    """The named arguments of ``EXTRAS``, in that order: ``--name`` (underscores as dashes), stored as ``name``."""
    for name in names:
        extra = EXTRAS[name]
        arguments: dict[str, Any] = {"help": extra.help}
        if extra.positional:
            arguments["nargs"] = "+"
        else:
            arguments["dest"] = name
        if extra.metavar is None:
            arguments["action"] = "store_true"
        else:
            arguments["metavar"] = extra.metavar
        parser.add_argument(name if extra.positional else "--" + name.replace("_", "-"), **arguments)

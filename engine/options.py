"""Settings declared once: a setting's URL key, codec, bounds, widget, label and help live in one ``Option``,
attached to the dataclass field that holds it, and everything else is derived from that declaration — the
address bar's codec (``Declared.from_query`` / ``to_query``), the widget keys and values (``widget_values`` /
``from_widgets``), the bound checks, and the command line's flag (``add_flags``). torchtitan builds its command
line from its config dataclasses the same way; here the URL and the widgets come from it too (DESIGN.md habit
18). Pure: no Streamlit, no argparse state; the app draws the widgets from ``Option.widget``.

A setting is one field::

    num_ranks: int = declared(4, RANKS.narrowed(high=32))

A bad value never raises out of a reader: ``from_query`` names it in a problem line (the value quoted as a
Markdown code span, since the app renders warnings as Markdown) and keeps the default.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping, Sequence
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
from .files import quoted, shown

WIDGETS = ("slider", "number", "select", "radio", "select_slider", "toggle", "text", "none")
"""How the app may draw a setting ("none": the page draws it its own way)."""

__all__ = [
    "Choice", "Codec", "Declared", "Flag", "Number", "Option", "Text", "Whole", "add_flags", "choose", "code_span",
    "declared", "given_flags", "number_flag", "option_type", "plain", "read_number", "read_whole", "real", "toggle",
    "whole", "whole_flag", "written",
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
def add_flags(parser: argparse.ArgumentParser | Any, settings: type[Declared], names: Sequence[str]) -> None:
    """Add one flag per named setting, typed and bounded by its declaration; each defaults to None (not given),
    so the command can tell a given flag from a default."""
    for name in names:
        option = settings.option(name)
        codec = option.codec
        kwargs: dict[str, Any] = {"dest": name, "default": None, "help": option.help or option.label}
        if isinstance(codec, Flag):
            parser.add_argument(option.cli_flag, action="store_true", **kwargs)
            continue
        if isinstance(codec, Choice) and all(isinstance(o, str) for o in codec.options):
            kwargs["choices"] = list(codec.options)
        else:
            kwargs["type"] = _argparse_type(option)
        parser.add_argument(option.cli_flag, **kwargs)


def option_type(option: Option) -> Callable[[str], Any]:
    """An argparse type that reads and bounds a flag's text by ``option``'s declaration."""
    return _argparse_type(option)


def _argparse_type(option: Option) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            return option.read(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(f"{error}, got {shown(text)}") from None

    return parse


def whole_flag(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an ASCII whole number in [low, high] (the one integer parser, ``read_whole``)."""

    def parse(text: str) -> int:
        try:
            value = read_whole(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a whole number from {low} to {high}, got {quoted(text)}"
            ) from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected a whole number from {low} to {high}, got {shown(text)}")
        return value

    return parse


def number_flag(*, positive: bool) -> Callable[[str], float]:
    """An argparse type: a finite ASCII number ≥ 0 (> 0 with ``positive``), read by ``read_number``."""

    def parse(text: str) -> float:
        accepted = "a finite number > 0" if positive else "a finite number ≥ 0"
        try:
            value = read_number(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {accepted}, got {shown(text)}") from None
        if value < 0 or (positive and value == 0):
            raise argparse.ArgumentTypeError(f"expected {accepted}, got {shown(text)}")
        return value

    return parse


def given_flags(args: argparse.Namespace, settings: type[Declared], names: Sequence[str]) -> dict[str, Any]:
    """The named settings given on the command line (those not None)."""
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}


def asdict_shallow(value: Any) -> dict[str, Any]:
    return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}

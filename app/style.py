"""Colours, shades and sizes the charts share: one colour per kind, a shade per chunk, text that stays
readable on every fill, and the larger fonts and rows of projector mode."""

from __future__ import annotations

from dataclasses import dataclass

KIND_COLOURS = {"F": "#4C78A8", "B": "#F58518", "I": "#54A24B", "W": "#B279A2"}
IDLE_FILL = "rgba(150,150,150,0.30)"
IDLE_HATCH = "rgba(105,105,105,0.85)"
RECOMPUTE_HATCH = "rgba(20,20,20,0.55)"
TRANSFER_COLOUR = "#6F6F6F"
VEIL = "rgba(127,127,127,0.55)"
"""Laid over the part of the timeline that has not happened yet while the animation plays."""
CURSOR = "#D62728"
RANK_COLOURS = ("#222222", "#E45756", "#17BECF", "#9D755D", "#BCBD22", "#FF7F0E", "#7F7F7F", "#8C564B")
"""Memory lines, one per rank: apart from the action colours (blue, orange-ish B aside, green, purple) and
readable on light and dark backgrounds."""
LIGHTEST = 0.6
"""The last chunk's colour is this far from the kind's colour towards white."""


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    value = hex_colour.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


def chunk_shade(kind: str, chunk: int, num_chunks: int) -> str:
    """The kind's colour for chunk ``chunk`` of ``num_chunks``: chunk 0 full, later chunks evenly lighter,
    so every chunk has its own shade."""
    mix = 0.0 if num_chunks <= 1 else LIGHTEST * chunk / (num_chunks - 1)
    red, green, blue = (round(c + (255 - c) * mix) for c in _rgb(KIND_COLOURS[kind]))
    return f"#{red:02X}{green:02X}{blue:02X}"


def _luminance(hex_colour: str) -> float:
    """WCAG relative luminance."""

    def channel(c: int) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    red, green, blue = (channel(c) for c in _rgb(hex_colour))
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def text_colour(fill: str) -> str:
    """Black or white, whichever contrasts more with ``fill`` (WCAG contrast ratio)."""
    light = _luminance(fill)
    on_black = (light + 0.05) / 0.05
    on_white = 1.05 / (light + 0.05)
    return "#111111" if on_black >= on_white else "#FFFFFF"


def contrast(fill: str, text: str) -> float:
    high, low = sorted((_luminance(fill), _luminance(text)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@dataclass(frozen=True)
class Sizes:
    """Fonts and rows, normal or for a projector."""

    font: int
    title: int
    row: int
    """Pixels per rank row when they fit."""
    max_gantt: int
    """The tallest the Gantt gets (so 32 ranks fit the screen)."""
    memory: int

    def gantt_height(self, num_rows: int) -> int:
        return max(200, min(self.max_gantt, 70 + self.row * num_rows))


NORMAL = Sizes(font=13, title=16, row=42, max_gantt=560, memory=200)
PROJECTOR = Sizes(font=20, title=24, row=64, max_gantt=700, memory=240)


def sizes(projector: bool) -> Sizes:
    return PROJECTOR if projector else NORMAL

"""What a visitor chose on the Your run page (pure: no Streamlit here): which example run (when no files are
uploaded), which profiler step, and the schedule the order is checked against — each declared once
(``engine.options``).

    /your-run?example=scheduleinterleaved1f1b-4ranks&expect=interleaved-1f1b
"""

from __future__ import annotations

from dataclasses import dataclass

from engine import FAMILIES
from engine.options import Declared, Option, Text, choose, declared, read_number, read_whole, whole, written
from engine.traces import ImportOptions
from engine.traces.examples import DEFAULT_EXAMPLE, example_runs
from engine.traces.names import compile_pattern

NOT_CHECKED = "none"
MEDIAN_STEP = -1
"""The step setting's value for "every step, the median shown"."""


def _offsets(text: str) -> tuple[tuple[int, float], ...]:
    """ "1:0.25,2:-0.5" → ((1, 0.25), (2, -0.5)): a clock offset in ms per rank."""
    if not text.strip():
        return ()
    pairs = []
    for part in text.split(","):
        rank, _, value = part.partition(":")
        pairs.append((read_whole(rank), read_number(value)))
    return tuple(pairs)


def _pattern(text: str) -> str:
    if text.strip():
        compile_pattern(text)  # ValueError with the reason
    return text


OFFSETS = Text(
    _offsets, lambda pairs: ",".join(f"{rank}:{written(ms)}" for rank, ms in pairs), "RANK:MS pairs like 1:0.25"
)
PATTERN = Text(_pattern, str, "a regex with (?P<stage>…), (?P<kind>…) and (?P<microbatch>…)")


@dataclass(frozen=True)
class YourRunSettings(Declared):
    PREFIX = "yr"

    example: str = declared(
        DEFAULT_EXAMPLE,
        choose(
            "example", tuple(example_runs()), "Example run", "used when no traces are uploaded", titles=example_runs()
        ),  # fmt: skip
    )
    step: int = declared(
        MEDIAN_STEP,
        whole(
            "step",
            MEDIAN_STEP,
            10**6,
            "Profiler step (−1: the median of every step)",
            "ProfilerStep#N to read; −1 reads them all and shows the median",
        ),
    )
    expect: str = declared(
        NOT_CHECKED,
        choose(
            "expect",
            (NOT_CHECKED, *FAMILIES),
            "Check the order against",
            "a family's generator",
            titles={NOT_CHECKED: "no check", **{name: f.title for name, f in FAMILIES.items()}},
        ),  # fmt: skip
    )

    pattern: str = declared(
        "", Option("pattern", PATTERN, "Action names (other frameworks)", "empty: PyTorch's PP: labels", widget="text")
    )
    offsets: tuple[tuple[int, float], ...] = declared(
        (),
        Option("offsets", OFFSETS, "Clock offsets, ms (several hosts)", "empty: estimated when needed", widget="text"),
    )

    def omitted_keys(self) -> set[str]:
        return {name for name in ("pattern", "offsets") if not getattr(self, name)}

    def import_options(self) -> ImportOptions:
        return ImportOptions(
            step=None if self.step == MEDIAN_STEP else self.step,
            expected=None if self.expect == NOT_CHECKED else self.expect,
            pattern=self.pattern or None,
            offsets_ms=dict(self.offsets) if self.offsets else None,
        )


YOUR_RUN_KEYS = YourRunSettings.url_keys()

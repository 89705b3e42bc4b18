"""What a visitor chose on the Compare page: two to four schedules under the same sizes and costs (pure: no
Streamlit here)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from app.frame.lab_settings import LAB_KEYS, LabSettings
from engine import FAMILIES
from engine.costs import Durations
from engine.options import code_span

COMPARE_DEFAULT = ("1f1b", "interleaved-1f1b", "zb-v")
"""What Compare opens on: three generations of schedule, and no pair a lesson question asks about (GPipe against
1F1B, 1F1B against ZB-H1: tests/app/lessons/test_lessons.py)."""
TABLE_2_LAB = LabSettings(
    num_ranks=8,
    num_microbatches=20,
    durations=Durations({"F": 1.0, "B": 2.0, "I": 1.0, "W": 1.0, "F&B": 2.5}),
    expert_comm=0.5,
)
"""The inputs of DeepSeek's comparison as the Compare page's link sets them: DeepSeek's figure's sizes (8 ranks, 20
micro-batches), F = I = W with an overlapped pair that saves half a forward, and an all-to-all of half a forward
in every F and backward — the lab's choices of costs, so that every column of Table 2 shows a difference."""
COMPARE_KEYS = ("schedules",) + tuple(key for key in LAB_KEYS if key != "schedule")


@dataclass(frozen=True)
class CompareSettings:
    """Two to four schedules under the same sizes and costs (B = I + W for those without a split backward)."""

    schedules: tuple[str, ...] = COMPARE_DEFAULT
    """Family names (URL ``schedules``)."""
    lab: LabSettings = field(default_factory=LabSettings)
    """The sizes and costs every schedule shares; its ``family`` is not used."""

    @property
    def overlaps(self) -> bool:
        """Whether any chosen family takes an F&B cost (then the page asks for it and the URL carries it)."""
        return any(FAMILIES[name].overlaps_forward_backward for name in self.schedules)

    @property
    def takes_chunks(self) -> bool:
        return any(FAMILIES[name].takes_chunks for name in self.schedules)

    def settings_for(self, family: str) -> LabSettings:
        """One schedule's settings: this family, the shared sizes, and B = I + W."""
        given = dict(self.lab.durations)
        given["B"] = given["I"] + given["W"]
        return replace(self.lab, family=family, durations=Durations(given))

    def check(self) -> None:
        if not 2 <= len(self.schedules) <= 4:
            raise ValueError(f"choose 2 to 4 schedules to compare (chosen: {len(self.schedules)})")

    def to_query(self) -> dict[str, str]:
        query = {"schedules": ",".join(self.schedules), **self.lab.to_query()}
        del query["schedule"]
        query["costs"] = self.lab.costs_text(split=True, overlapped=self.overlaps)
        return query

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> tuple[CompareSettings, list[str]]:
        lab, problems = LabSettings.from_query({k: v for k, v in query.items() if k != "schedule"})
        schedules, more = cls.schedules_from_query(query)
        return cls(schedules, lab), problems + more

    @staticmethod
    def schedules_from_query(query: Mapping[str, str]) -> tuple[tuple[str, ...], list[str]]:
        """The URL's ``schedules``: 2 to 4 known families, or the defaults and a line saying why."""
        problems: list[str] = []
        text = query.get("schedules", ",".join(COMPARE_DEFAULT))
        names = tuple(name.strip() for name in text.split(",") if name.strip())
        unknown = [name for name in names if name not in FAMILIES]
        unique = tuple(dict.fromkeys(name for name in names if name in FAMILIES))
        if unknown:
            problems.append(f"schedules: {code_span(', '.join(unknown))} not known; choose from {', '.join(FAMILIES)}")
        if not 2 <= len(unique) <= 4:
            problems.append(
                f"schedules: compare 2 to 4 different schedules (got {len(unique)}); using {', '.join(COMPARE_DEFAULT)}"
            )
            unique = COMPARE_DEFAULT
        return unique, problems

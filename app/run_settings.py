"""What a visitor chose on the Real run page, in one typed object (pure: no Streamlit here): its fields under
the engine's names, its URL codec, its widget keys and defaults, its limits and its conversion to the
engine's ``RunConfig`` — and the hand-off of a schedule from the editor, which is this class's business too.

    /real-run?schedule=zb-h1&ranks=4&microbatches=8&model=gpt&layers=8&hidden=128&recompute=0&backend=emulated&repeats=3&estimator=min
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, fields, replace

from engine import FAMILIES
from engine.model_config import MODEL_DEFAULTS, MODEL_KINDS, ModelConfig
from engine.runtime import BACKENDS, RunConfig
from engine.runtime.interference import ESTIMATORS

from . import limits
from .codec import choice, flag, shown, whole

RUN_KEYS = (
    "schedule",
    "ranks",
    "microbatches",
    "chunks",
    "model",
    "layers",
    "hidden",
    "recompute",
    "backend",
    "repeats",
    "estimator",
)
SAMPLES_PER_MICROBATCH = {"mlp": 16, "gpt": 4}
"""Samples in one micro-batch: the batch is this × m, so it splits evenly for every m."""
ESTIMATOR_TITLES = {"min": "fastest repeat", "median": "median repeat"}
"""The estimators (``engine.runtime.interference.ESTIMATORS``) in a few words, for the radio and the table."""
PREFIX = "rr"


@dataclass(frozen=True)
class RunSettings:
    """One real run: a schedule (a family, or a CSV sent from the editor) on a toy model."""

    family: str = "zb-h1"
    """Schedule family (URL ``schedule``)."""
    num_ranks: int = 4
    """p (URL ``ranks``)."""
    num_microbatches: int = 8
    """m (URL ``microbatches``), one of ``limits.REAL_RUN_MICROBATCHES``."""
    num_chunks: int = 2
    """v for the families that take chunks (URL ``chunks``)."""
    model: str = "mlp"
    """"mlp" or "gpt" (URL ``model``)."""
    layers: int = MODEL_DEFAULTS["mlp"]["layers"]
    """Blocks (URL ``layers``)."""
    hidden: int = MODEL_DEFAULTS["mlp"]["hidden"]
    """Hidden width, one of ``limits.REAL_RUN_HIDDEN`` (URL ``hidden``)."""
    recompute: bool = False
    """URL ``recompute``."""
    backend: str = "emulated"
    """"emulated" or "distributed" (URL ``backend``)."""
    repeats: int = 3
    """Measured steps after one warm-up step (URL ``repeats``)."""
    estimator: str = "min"
    """Each action's cost from its repeats: "min" (the fastest) or "median" (URL ``estimator``)."""
    schedule_csv: str | None = None
    """A schedule sent from the editor, run instead of the family (never in the URL: it can be large)."""

    def to_run_config(self) -> RunConfig:
        """The engine's experiment; ValueError in the page's words (blocks, hidden width) when it cannot run."""
        model = ModelConfig(
            kind=self.model,
            layers=self.layers,
            hidden=self.hidden,
            batch=SAMPLES_PER_MICROBATCH[self.model] * self.num_microbatches,
        )
        common = dict(
            model=model,
            recompute=self.recompute,
            backend=self.backend,
            repeats=self.repeats,
            estimator=self.estimator,
        )
        if self.schedule_csv is not None:
            return RunConfig.from_csv(self.schedule_csv, **common)
        return RunConfig(
            family=self.family,
            num_ranks=self.num_ranks,
            num_microbatches=self.num_microbatches,
            num_chunks=self.num_chunks if FAMILIES[self.family].takes_chunks else None,
            **common,  # type: ignore[arg-type]
        )

    def with_model(self, model: str) -> RunSettings:
        """Another model starts from its own default width (the MLP's 512 would make the GPT needlessly big)."""
        return replace(self, model=model, hidden=MODEL_DEFAULTS[model]["hidden"])

    # -- the address bar -----------------------------------------------------------------------------------
    def to_query(self) -> dict[str, str]:
        return {
            "schedule": self.family,
            "ranks": str(self.num_ranks),
            "microbatches": str(self.num_microbatches),
            "chunks": str(self.num_chunks),
            "model": self.model,
            "layers": str(self.layers),
            "hidden": str(self.hidden),
            "recompute": str(int(self.recompute)),
            "backend": self.backend,
            "repeats": str(self.repeats),
            "estimator": self.estimator,
        }

    @classmethod
    def from_query(cls, query: Mapping[str, str], base: RunSettings | None = None) -> tuple[RunSettings, list[str]]:
        base = base or cls()
        problems: list[str] = []
        family = query.get("schedule", base.family)
        if family not in FAMILIES:
            problems.append(
                f"schedule={shown(family)}: not a schedule; choose one of {', '.join(FAMILIES)}; using {base.family}"
            )
            family = base.family
        model = choice(query, "model", MODEL_KINDS, base.model, problems)
        settings = replace(
            base if model == base.model else base.with_model(model),
            family=family,
            num_ranks=whole(query, "ranks", 1, limits.REAL_RUN_MAX_RANKS, base.num_ranks, problems),
            num_microbatches=choice(
                query, "microbatches", limits.REAL_RUN_MICROBATCHES, base.num_microbatches, problems
            ),
            num_chunks=whole(query, "chunks", limits.MIN_CHUNKS, limits.REAL_RUN_MAX_CHUNKS, base.num_chunks, problems),
            recompute=flag(query, "recompute", base.recompute, problems),
            backend=choice(query, "backend", BACKENDS, base.backend, problems),
            repeats=whole(query, "repeats", 1, limits.REAL_RUN_MAX_REPEATS, base.repeats, problems),
            estimator=choice(query, "estimator", tuple(ESTIMATORS), base.estimator, problems),
        )
        settings = replace(
            settings,
            layers=whole(query, "layers", 1, limits.REAL_RUN_MAX_LAYERS, settings.layers, problems),
            hidden=choice(query, "hidden", limits.REAL_RUN_HIDDEN, settings.hidden, problems),
        )
        return settings, problems

    # -- the widgets ---------------------------------------------------------------------------------------
    @staticmethod
    def widget_key(name: str) -> str:
        return f"{PREFIX}_{name}"

    def widget_values(self) -> dict[str, object]:
        return {self.widget_key(f.name): getattr(self, f.name) for f in fields(self) if f.name != "schedule_csv"}

    @classmethod
    def from_widgets(cls, values: Mapping[str, object], schedule_csv: str | None = None) -> RunSettings:
        given = {f.name: values[cls.widget_key(f.name)] for f in fields(cls) if cls.widget_key(f.name) in values}
        return cls(**given, schedule_csv=schedule_csv)  # type: ignore[arg-type]  # widgets hold the fields' types

    # -- the editor's hand-off -----------------------------------------------------------------------------
    HANDOFF = f"{PREFIX}_schedule_csv"
    """Where, in one visitor's session, the editor leaves a schedule for the Real run page."""

    @classmethod
    def send_schedule(cls, session: MutableMapping, csv: str) -> None:
        """The editor's "Run it for real": the Real run page runs this CSV next."""
        session[cls.HANDOFF] = csv

    @classmethod
    def received_schedule(cls, session: Mapping) -> str | None:
        return session.get(cls.HANDOFF)

    @classmethod
    def forget_schedule(cls, session: MutableMapping) -> None:
        session.pop(cls.HANDOFF, None)

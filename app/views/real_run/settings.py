"""What a visitor chose on the Real run page, in one typed object (pure: no Streamlit here): its fields under
the engine's names, its URL codec, its widget keys and defaults, its limits and its conversion to the
engine's ``RunConfig`` — and the hand-off of a schedule from the editor, which is this class's business too.

    /real-run?schedule=zb-h1&ranks=4&microbatches=8&model=gpt&layers=8&hidden=128&recompute=0&backend=emulated&repeats=3&estimator=min
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, replace

from app.frame import limits
from engine import FAMILIES
from engine.model_config import MODEL_DEFAULTS, MODEL_KINDS, MODEL_TITLES, ModelConfig
from engine.options import Declared, choose, declared, toggle, whole
from engine.runtime import BACKENDS, RunConfig
from engine.runtime.interference import ESTIMATORS

SAMPLES_PER_MICROBATCH = {"mlp": 16, "gpt": 4}
"""Samples in one micro-batch: the batch is this × m, so it splits evenly for every m."""
ESTIMATOR_TITLES = {"min": "fastest repeat", "median": "median repeat"}
"""The estimators (``engine.runtime.interference.ESTIMATORS``) in a few words, for the radio and the table."""
PREFIX = "rr"
BACKEND_HELP = (
    "emulated: one process; each action's measured CPU time placed on virtual device clocks. distributed: one "
    "process per rank (torch.distributed), wall clock."
)
WARMUP_HELP = (
    "Steps run first and not measured: the first step pays for allocations and first-use costs that later steps do not."
)
REPEATS_HELP = "After one warm-up step; the spread over them is drawn as whiskers."
ESTIMATOR_HELP = (
    "Other work on this machine can only slow an action down, so its fastest repeat is the least disturbed "
    "estimate; the median is the typical one."
)


@dataclass(frozen=True)
class RealRunSettings(Declared):
    """One real run: a schedule (a family, or a CSV sent from the editor) on a toy model."""

    PREFIX = PREFIX

    family: str = declared("zb-h1", limits.FAMILY)
    num_ranks: int = declared(4, limits.RANKS.narrowed(high=limits.REAL_RUN_MAX_RANKS))
    num_microbatches: int = declared(
        8, choose("microbatches", limits.REAL_RUN_MICROBATCHES, "Micro-batches, m", widget="select_slider")
    )
    num_chunks: int = declared(2, limits.CHUNKS.narrowed(high=limits.REAL_RUN_MAX_CHUNKS))
    model: str = declared("mlp", choose("model", MODEL_KINDS, "Model", titles=MODEL_TITLES, widget="radio"))
    layers: int = declared(
        MODEL_DEFAULTS["mlp"]["layers"], whole("layers", 1, limits.REAL_RUN_MAX_LAYERS, "Blocks", widget="slider")
    )
    hidden: int = declared(
        MODEL_DEFAULTS["mlp"]["hidden"],
        choose("hidden", limits.REAL_RUN_HIDDEN, "Hidden width", widget="select_slider"),
    )
    recompute: bool = declared(False, toggle("recompute", "Recompute activations"))
    backend: str = declared("emulated", choose("backend", BACKENDS, "Backend", BACKEND_HELP, widget="radio"))
    repeats: int = declared(
        3, whole("repeats", 1, limits.REAL_RUN_MAX_REPEATS, "Measured steps", REPEATS_HELP, widget="slider")
    )
    warmup_steps: int = declared(1, whole("warmup", 0, 3, "Warm-up steps", WARMUP_HELP, widget="slider"))
    estimator: str = declared(
        "min",
        choose("estimator", ESTIMATORS, "Each action's cost", ESTIMATOR_HELP, titles=ESTIMATOR_TITLES, widget="radio"),
    )
    schedule_csv: str | None = None
    SCHEDULE = ("family", "num_ranks", "num_microbatches", "num_chunks")
    """The settings that describe the schedule (hidden when the editor sends one)."""
    """A schedule sent from the editor, run instead of the family (never in the URL: it can be large)."""

    @classmethod
    def _after_query(cls, settings, query, problems):
        """A link that names another model and no width takes that model's own width."""
        if "model" in query and "hidden" not in query:
            settings = replace(settings, hidden=MODEL_DEFAULTS[settings.model]["hidden"])
        return settings, problems

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
            warmup_steps=self.warmup_steps,
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

    def with_model(self, model: str) -> RealRunSettings:
        """Another model starts from its own default width (the MLP's 512 would make the GPT needlessly big)."""
        return replace(self, model=model, hidden=MODEL_DEFAULTS[model]["hidden"])

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


RUN_KEYS = RealRunSettings.url_keys()

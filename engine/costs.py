"""The cost model: how long each kind of action takes, and what it does to activation memory.

Costs are data keyed by kind ([Note: cost kinds]): ``COST_KINDS`` lists every duration a cost model holds, and
every generic reader (the simulator's per-kind durations, the text grammar, per-stage tables, the cost levels
of the idle attribution, the runtime's measured costs) iterates it. A new kind of work is one entry here, and
its default rule in ``resolved``.

    >>> Costs.parse("F=1,I=1,W=1").durations["B"]
    2.0
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .ir import Kind


@dataclass(frozen=True)
class CostKind:
    """One duration a cost model holds. [Note: cost kinds] Each has a key (its text in "F=1,B=2,F&B=2.5"), the
    kind of action it times (None for the overlapped F&B pair, which times a slot of two actions), and the words
    a cost input shows. The default rules that fill the keys not given are ``resolved``'s."""

    key: str
    """Its text in "F=1,B=2" and its key in ``Costs.durations``."""
    kind: Kind | None
    """The kind of action it times; None: one overlapped F&B pair (a slot holding two actions)."""
    words: str
    """What it is, in words ("cost forward must be …")."""
    label: str
    """A cost input's label ("F forward")."""
    help: str | None = None
    """A cost input's help text, where one helps."""


ZERO_BUBBLE_NAMES_I_B = "The Zero Bubble paper calls this pass B."
PAIR_HELP = "One forward and one backward run together (DualPipeV); F + B means no gain."
COST_KINDS: tuple[CostKind, ...] = (
    CostKind("F", Kind.F, "forward", "F forward"),
    CostKind("B", Kind.B, "backward", "B full backward"),
    CostKind("I", Kind.I, "input-gradient backward", "I input-gradient backward", help=ZERO_BUBBLE_NAMES_I_B),
    CostKind("W", Kind.W, "weight-gradient backward", "W weight-gradient backward"),
    CostKind("F&B", None, "overlapped pair", "F&B overlapped pair", help=PAIR_HELP),
)
"""Every duration, in the order the text form writes them."""
COST_KEYS: tuple[str, ...] = tuple(cost.key for cost in COST_KINDS)
COST_OF_KIND: dict[Kind, CostKind] = {cost.kind: cost for cost in COST_KINDS if cost.kind is not None}
"""The cost that times each kind of action."""
PAIR_KEY = "F&B"
"""The key of the one cost without a kind: an overlapped F&B pair (one slot, two actions)."""
DEFAULT_FORWARD = 1.0
"""F when it is not given: the time unit."""
PER_STAGE_SEPARATOR = ":"
"""Between the values of one kind per stage: "F=1:2:1:1"."""

assert set(COST_OF_KIND) == set(Kind) and PAIR_KEY in COST_KEYS and len(set(COST_KEYS)) == len(COST_KEYS)


class Durations(Mapping[str, float]):
    """Read-only durations keyed by ``COST_KEYS`` (all present once resolved), in that order. Hashable, so a
    ``Costs`` holding it stays a hashable value."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, float]) -> None:
        self._values = {key: values[key] for key in COST_KEYS if key in values}
        unknown = set(values) - set(self._values)
        if unknown:
            raise ValueError(f"unknown cost kinds {sorted(unknown)}: the kinds are {', '.join(COST_KEYS)}")

    def __getitem__(self, key: str) -> float:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __hash__(self) -> int:
        return hash(tuple(self._values.items()))

    def __repr__(self) -> str:
        return f"Durations({self._values!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Durations, (self._values,))


def _check_number(label: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"cost {label} must be a finite number ≥ 0, got {value!r}")


def _words(key: str) -> str:
    return next(cost.words for cost in COST_KINDS if cost.key == key)


def resolved(given: Mapping[str, float | None], *, measured: bool = False) -> Durations:
    """Every duration, from those given (None: not given), by the default rules (the one home of these rules):

    * F = 1 (the time unit);
    * B = I + W when both are given, else 2·F;
    * I = W = B/2 when neither is given; one of them given: the other is B minus it;
    * F&B = F + B (overlapping gains nothing).

    ``measured``: a row of measured means (``Costs.stage_costs``), where a stage runs B or I and W, not both, and
    a kind it did not run is 0, so B need not equal I + W. Otherwise B must equal I + W.
    ValueError with the arithmetic for a number that is not a duration or durations that do not add up."""
    durations = Durations({key: value for key, value in given.items() if value is not None})  # refuses unknown keys
    for key, value in durations.items():
        _check_number(_words(key), value)
    f = float(durations.get("F", DEFAULT_FORWARD))
    b, i, w = (None if key not in durations else float(durations[key]) for key in ("B", "I", "W"))
    if b is None:
        if i is not None and w is not None:
            b = i + w
        elif i is not None or w is not None:
            raise ValueError("give both I and W, or B (I and W then default to B/2 each)")
        else:
            b = 2.0 * f
    if i is None and w is None:
        i = w = b / 2
    elif i is None:
        assert w is not None
        i = b - w
    elif w is None:
        w = b - i
    if not measured:
        _check_split(b, i, w)
    pair = float(durations[PAIR_KEY]) if PAIR_KEY in durations else f + b
    values = {"F": f, "B": b, "I": i, "W": w, PAIR_KEY: pair}
    for key, value in values.items():
        if not math.isfinite(value):
            raise ValueError(
                f"cost {key} works out to {value:g} from F={f:g}: durations must be finite; use smaller numbers"
            )
    return Durations(values)


def _check_split(b: float, i: float, w: float) -> None:
    if not math.isclose(i + w, b, rel_tol=1e-9, abs_tol=1e-12) or i < 0 or w < 0:
        raise ValueError(f"B must equal I + W: B={b:g}, I={i:g}, W={w:g}, I+W={i + w:g}")


def _check_resolved(label: str, durations: object) -> None:
    if not isinstance(durations, Durations) or tuple(durations) != COST_KEYS:
        raise ValueError(f"{label} must hold every cost kind ({', '.join(COST_KEYS)}): build it with Costs.of")
    for key, value in durations.items():
        _check_number(_words(key), value)


@dataclass(frozen=True)
class Costs:
    """Durations are for one micro-batch through one rank's share of the model (1/p of the layers).

    A schedule with v stages per rank runs each stage at 1/v of these, so every schedule trains the same
    model and comparisons are fair. Units are arbitrary ("time units"); the emulated runtime fills them
    with measured milliseconds. Build one with ``Costs.of`` (the default rules fill the kinds not given) or
    ``Costs.parse``; ``Costs()`` is F = 1, B = 2."""

    durations: Durations = field(default_factory=lambda: resolved({}))
    """The duration of each kind, keyed by ``COST_KEYS``, all present (``resolved``): F forward, B full backward,
    I input-gradient backward, W weight-gradient backward (B = I + W), F&B one overlapped pair (DualPipeV)."""
    comm: float = 0.0
    """Time from the end of an action to the arrival of its output on another rank (same rank: 0)."""
    hop_comm: tuple[float, ...] | None = None
    """Optional transfer time per hop, by r: between rank r and rank r + 1 (mod p), both ways — a real cluster's
    NVLink inside a node and network between nodes. None: ``comm`` for every hop. Not with ``shared_links``."""
    shared_links: bool = False
    """A transfer occupies its link for ``comm``: one at a time per direction between two ranks, first come first
    served (``engine.links``). False: a pure delay, however many cross at once."""
    stage_scale: tuple[float, ...] | None = None
    """Optional multiplier per stage for imbalanced models; length must equal the number of stages."""
    stage_costs: tuple[Durations, ...] | None = None
    """Optional measured durations per stage, keyed as ``durations`` (``resolved(…, measured=True)``: 0 for a kind
    the stage did not run), used as they are (no 1/v, no recompute extra); the runtime fills this from what it
    measured to predict its own timeline. An overlapped pair takes its two halves' durations plus the mean of its
    two stages' F&B − (F + B) (0 by default)."""
    expert_comm: float = 0.0
    """Communication inside each forward and each backward (B or I; W has none): an expert all-to-all's dispatch
    and combine, as in DeepSeek-V3's MoE layers (report §3.2.1), per micro-batch through one rank's share. A
    lone action waits for it; in an overlapped F&B pair each half's runs under the other half's compute
    (``engine.simulator.expert_overlap``)."""
    recompute: bool = False
    """Activation recomputation: the forward keeps only its input; I or B first re-runs the forward."""
    w_memory_fraction: float = 0.5
    """Fraction of a micro-batch's activations that W still needs after I has run."""
    recompute_memory_fraction: float = 0.1
    """With recomputation, the fraction of the activations a forward keeps (the stage input)."""

    def __post_init__(self) -> None:
        _check_resolved("durations", self.durations)
        _check_split(*(self.durations[key] for key in ("B", "I", "W")))
        _check_number("comm", self.comm)
        _check_number("expert_comm", self.expert_comm)
        for seconds in self.hop_comm or ():
            _check_number("hop_comm", seconds)
        if self.hop_comm is not None and self.shared_links:
            raise ValueError("hop_comm (a time per hop) and shared_links (one comm on every link) do not combine")
        for label in ("w_memory_fraction", "recompute_memory_fraction"):
            value = getattr(self, label)
            if not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise ValueError(f"{label} must be between 0 and 1, got {value!r}")
        if self.stage_costs is not None:
            for row in self.stage_costs:
                _check_resolved("each row of stage_costs", row)
        if self.stage_scale is not None:
            for scale in self.stage_scale:
                _check_number("stage_scale", scale)

    @classmethod
    def of(
        cls,
        given: Mapping[str, float | None] | None = None,
        /,
        *,
        stage_costs: Iterable[Mapping[str, float | None]] | None = None,
        **extra: Any,
    ) -> Costs:
        """Costs from the durations given ({"F": 1, "B": 2}; the rest by ``resolved``'s rules), optionally measured
        ones per stage (each row resolved as measured), and any other field (``comm=0.5``, ``recompute=True``…)."""
        rows = None if stage_costs is None else tuple(resolved(row, measured=True) for row in stage_costs)
        return cls(resolved(given or {}), stage_costs=rows, **extra)

    @classmethod
    def parse(cls, text: str, *, num_stages: int | None = None, where: str = "the schedule", **extra: Any) -> Costs:
        """Read "F=1,B=2" or "F=1,I=1,W=1" (also "F&B=2.5" for the overlapped pair); with ``num_stages``, also one
        value per stage, "F=1:2:1:1,I=1:1:2:1,W=1:1:1:1", which the simulator uses as they are (``stage_costs``:
        the same default rules, but as measured, B need not equal I + W). ``where`` names what has the stages in an
        error ("the search"). The inverse is ``text``."""
        if num_stages is not None and PER_STAGE_SEPARATOR in text:
            return cls.of(stage_costs=_per_stage(text, num_stages, where), **extra)
        values: dict[str, float] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, sep, value = part.partition("=")
            key = key.strip().upper()
            if not sep or key not in COST_KEYS:
                raise ValueError(
                    f"cannot read cost {part!r}: expected KIND=NUMBER with KIND one of {', '.join(COST_KEYS)}"
                )
            if key in values:
                raise ValueError(f"cost {key} is given twice in {text!r}")
            try:
                values[key] = float(value)
            except ValueError:
                raise ValueError(f"cannot read cost {part!r}: {value.strip()!r} is not a number") from None
        return cls.of(values, **extra)

    def text(self, keys: Iterable[str] = COST_KEYS) -> str:
        """The costs as ``parse`` reads them (with ``num_stages`` when they are per stage): "F=1,B=2,I=1,W=1,F&B=3",
        or one value per stage "F=1:2,B=…"; the kinds of ``keys``, in ``COST_KEYS`` order."""
        keys = tuple(keys)
        if self.stage_costs is None:
            return costs_text(self.durations, keys)
        return ",".join(
            f"{key}=" + PER_STAGE_SEPARATOR.join(_number_text(row[key]) for row in self.stage_costs)
            for key in COST_KEYS
            if key in keys
        )

    # -- the durations by name, for formulas that name a pass (closed forms); generic code iterates COST_KINDS --
    @property
    def forward(self) -> float:
        """F."""
        return self.durations["F"]

    @property
    def backward(self) -> float:
        """B = I + W."""
        return self.durations["B"]

    @property
    def backward_input(self) -> float:
        """I."""
        return self.durations["I"]

    @property
    def backward_weight(self) -> float:
        """W."""
        return self.durations["W"]

    @property
    def overlapped(self) -> float:
        """F&B."""
        return self.durations[PAIR_KEY]


def _number_text(value: float) -> str:
    """1, 0.5, 2.25; every digit a number needs to read back the same."""
    short = f"{value:g}"
    return short if float(short) == value else repr(float(value))


def costs_text(durations: Mapping[str, float], keys: Iterable[str] = COST_KEYS) -> str:
    """ "F=1,B=2" from ``durations``, the ``keys`` given (in ``COST_KEYS`` order), as ``Costs.parse`` reads it."""
    wanted = set(keys)
    return ",".join(f"{key}={_number_text(durations[key])}" for key in COST_KEYS if key in wanted)


def _per_stage(text: str, num_stages: int, where: str) -> list[dict[str, float]]:
    """The rows of "F=1:2,I=1:2,W=1:1": one value per stage for each kind given, once each."""
    values: dict[str, list[float]] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, _, written = part.partition("=")
        key = key.strip().upper()
        if key not in COST_KEYS or key in values:
            raise ValueError(
                f"per-stage costs are KIND=N{PER_STAGE_SEPARATOR}N… once each with KIND one of "
                f"{', '.join(COST_KEYS)} (e.g. F=…,I=…,W=…), got {part!r} in {text!r}"
            )
        try:
            values[key] = [float(n) for n in written.split(PER_STAGE_SEPARATOR)]
        except ValueError:
            raise ValueError(f"cannot read {part!r}: values per stage are numbers separated by ':'") from None
    for key, numbers in values.items():
        if len(numbers) != num_stages:
            raise ValueError(f"{key} has {len(numbers)} values per stage, but {where} has {num_stages} stages")
    return [{key: numbers[stage] for key, numbers in values.items()} for stage in range(num_stages)]


UNIT = Costs.of({"F": 1.0, "I": 1.0, "W": 1.0})
"""F = I = W = 1: the Zero Bubble paper's setting for its Table 2 comparison."""


def split_backward(table: Iterable[Mapping[str, float]]) -> tuple[list[float], list[float], list[float]]:
    """Measured F, I and W per stage from rows of F, B, I, W: a stage that ran a full backward (I = W = 0) has it
    split in half between I and W — the one rule the Search and Plan links from a measured run both use."""
    rows = list(table)
    forward = [row["F"] for row in rows]
    inputs = [row["I"] if row["I"] > 0 else row["B"] / 2 for row in rows]
    weights = [row["W"] if row["W"] > 0 else row["B"] / 2 for row in rows]
    return forward, inputs, weights

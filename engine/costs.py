"""The cost model: how long each kind of action takes, and what it does to activation memory."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


def _check_number(label: str, value: float | None, *, allow_none: bool = True) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"cost {label} must be a finite number ≥ 0, got {value!r}")


@dataclass(frozen=True)
class Costs:
    """Durations are for one micro-batch through one rank's share of the model (1/p of the layers).

    A schedule with v stages per rank runs each stage at 1/v of these, so every schedule trains the same
    model and comparisons are fair. Units are arbitrary ("time units"); the emulated runtime fills them
    with measured milliseconds.
    """

    forward: float = 1.0
    """F: forward pass."""
    backward: float = None  # type: ignore[assignment]  # see [Note: resolved costs]
    """B: full backward. Defaults to I + W when those are given, else 2·F."""
    backward_input: float = None  # type: ignore[assignment]
    """I: input-gradient backward. Defaults to B − W if both are given, else B/2."""
    backward_weight: float = None  # type: ignore[assignment]
    """W: weight-gradient backward. Defaults to B − I if both are given, else B/2."""
    overlapped: float = None  # type: ignore[assignment]
    """One overlapped F&B pair (DualPipeV). Defaults to F + B (no gain from overlapping).

    [Note: resolved costs] B, I, W and F&B may be left out (None) when constructing; ``__post_init__`` fills
    in the defaults above, so after construction all four hold floats and every reader uses the same names.
    Their annotations say ``float`` for those readers, hence the ``type: ignore`` on the None defaults."""
    comm: float = 0.0
    """Time from the end of an action to the arrival of its output on another rank (same rank: 0)."""
    shared_links: bool = False
    """A transfer occupies its link for ``comm``: one at a time per direction between two ranks, first come first
    served (``engine.links``). False: a pure delay, however many cross at once."""
    stage_scale: tuple[float, ...] | None = None
    """Optional multiplier per stage for imbalanced models; length must equal the number of stages."""
    stage_costs: tuple[tuple[float, float, float, float], ...] | None = None
    """Optional measured durations (F, B, I, W) per stage, used as they are (no 1/v, no recompute extra);
    the runtime fills this from what it measured to predict its own timeline."""
    recompute: bool = False
    """Activation recomputation: the forward keeps only its input; I or B first re-runs the forward."""
    w_memory_fraction: float = 0.5
    """Fraction of a micro-batch's activations that W still needs after I has run."""
    recompute_memory_fraction: float = 0.1
    """With recomputation, the fraction of the activations a forward keeps (the stage input)."""

    def __post_init__(self) -> None:
        for label in ("forward", "backward", "backward_input", "backward_weight", "overlapped", "comm"):
            _check_number(label, getattr(self, label))
        _check_number("forward", self.forward, allow_none=False)
        _check_number("comm", self.comm, allow_none=False)
        for label in ("w_memory_fraction", "recompute_memory_fraction"):
            value = getattr(self, label)
            if not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise ValueError(f"{label} must be between 0 and 1, got {value!r}")
        if self.stage_costs is not None:
            for row in self.stage_costs:
                if len(row) != 4:
                    raise ValueError(f"stage_costs rows are (F, B, I, W), got {row!r}")
                for value in row:
                    _check_number("stage_costs", value, allow_none=False)
        if self.stage_scale is not None:
            for scale in self.stage_scale:
                _check_number("stage_scale", scale, allow_none=False)
        b, i, w = self.backward, self.backward_input, self.backward_weight
        if b is None:
            if i is not None and w is not None:
                b = i + w
            elif i is not None or w is not None:
                raise ValueError("give both I and W, or B (I and W then default to B/2 each)")
            else:
                b = 2.0 * self.forward
        if i is None and w is None:
            i = w = b / 2
        elif i is None:
            i = b - w
        elif w is None:
            w = b - i
        if not math.isclose(i + w, b, rel_tol=1e-9, abs_tol=1e-12) or i < 0 or w < 0:
            raise ValueError(f"B must equal I + W: B={b:g}, I={i:g}, W={w:g}, I+W={i + w:g}")
        overlapped = self.overlapped if self.overlapped is not None else self.forward + b
        for label, value in (("B", b), ("I", i), ("W", w), ("F&B", overlapped)):
            if not math.isfinite(value):
                raise ValueError(
                    f"cost {label} works out to {value:g} from F={self.forward:g}: durations must be "
                    f"finite; use smaller numbers"
                )
        for name, value in (("backward", b), ("backward_input", i), ("backward_weight", w), ("overlapped", overlapped)):
            object.__setattr__(self, name, float(value))

    @classmethod
    def parse(cls, text: str, **extra: Any) -> Costs:
        """Read "F=1,B=2" or "F=1,I=1,W=1" (also "F&B=2.5" for the overlapped pair)."""
        names = {"F": "forward", "B": "backward", "I": "backward_input", "W": "backward_weight", "F&B": "overlapped"}
        values: dict[str, Any] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, sep, value = part.partition("=")
            key = key.strip().upper()
            if not sep or key not in names:
                raise ValueError(f"cannot read cost {part!r}: expected KIND=NUMBER with KIND one of F, B, I, W, F&B")
            if names[key] in values:
                raise ValueError(f"cost {key} is given twice in {text!r}")
            try:
                values[names[key]] = float(value)
            except ValueError:
                raise ValueError(f"cannot read cost {part!r}: {value.strip()!r} is not a number") from None
        return cls(**values, **extra)


UNIT = Costs(forward=1.0, backward_input=1.0, backward_weight=1.0)
"""F = I = W = 1: the Zero Bubble paper's setting for its Table 2 comparison."""

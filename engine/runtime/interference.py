"""Timings on a crowded host: how each action's cost is estimated from its repeats, and whether the host was too
busy for the run's numbers to be trusted (torch-free: the result and the app read it as plain numbers).

[Note: interference only slows]
Other work on the machine — busy loops, a browser, a video call — cannot make an action run faster than it
can; it can only make it slower: the thread is switched out and finds its caches cold, a sibling
hyper-thread competes for the core, the memory bus is shared. Thread CPU time already leaves out the time
the thread waited for a core, but not those. So over the measured repeats of an action, the fastest is the
least disturbed, and the minimum is the estimator interference can only inflate, never deflate — what
Python's ``timeit`` recommends ("the lowest value gives a lower bound for how fast your machine can run
the given code snippet; higher values are typically caused by other processes interfering"). The median
is kept next to it, and the spread (min and max) says how much the repeats disagreed.

Two signs that the host was busy, either enough for the notice:

* the spread: the typical repeat takes longer than the fastest, summed over all actions
  (Σ median / Σ min − 1: one number, weighted by duration, so the many tiny actions' jitter does not
  dominate); on a quiet machine a few per cent;
* the CPU share: the measured steps' thread CPU time over their wall-clock time. A thread that had a core
  to itself gets nearly all of it; one sharing its core with other work gets what the scheduler leaves it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

ESTIMATORS = {
    "min": "each action's fastest repeat (other work on the machine can only slow an action down)",
    "median": "each action's median repeat",
}
"""How an action's cost is estimated from its measured repeats, in words for the output."""

BUSY_VARIATION = 0.15
"""The notice appears when the typical repeat is this much slower than the fastest (Σ median / Σ min − 1)…"""
BUSY_CPU_SHARE = 0.75
"""… or when the run's thread ran on a CPU for less than this share of the measured steps' wall-clock time."""


def estimate(samples, estimator: str) -> np.ndarray:
    """Per column of ``samples`` (repeats × actions): the fastest repeat ("min") or the median ("median")."""
    samples = np.atleast_2d(np.asarray(samples, dtype=float))
    if estimator == "min":
        return samples.min(axis=0)
    if estimator == "median":
        return np.median(samples, axis=0)
    raise ValueError(f"estimator must be one of {', '.join(ESTIMATORS)}, got {estimator!r}")


@dataclass(frozen=True)
class Interference:
    """How disturbed a run's measurement was, and whether to say so."""

    variation: float
    """Σ median / Σ min − 1 over every action's measured repeats: how much slower the typical repeat was than
    the fastest (0 with one repeat: nothing to compare)."""
    cpu_share: float | None
    """Thread CPU time over wall-clock time of the measured steps (1: the run had a core to itself); None
    where the clock is not the CPU's (a GPU)."""
    repeats: int
    """Measured steps the variation compares."""
    busy: bool
    """The host was too busy to trust the timings: ``variation`` ≥ ``BUSY_VARIATION`` or ``cpu_share`` <
    ``BUSY_CPU_SHARE``."""
    sentence: str
    """What the output says: the notice when ``busy``, else a short statement of the variation."""

    def as_dict(self) -> dict:
        return {
            "variation": self.variation,
            "cpu_share": self.cpu_share,
            "repeats": self.repeats,
            "busy": self.busy,
            "sentence": self.sentence,
        }


def assess(samples, cpu_share: float | None = None) -> Interference:
    """Judge ``samples`` (repeats × actions, ms) and the measured steps' ``cpu_share``; see the module notes."""
    samples = np.atleast_2d(np.asarray(samples, dtype=float))
    repeats = samples.shape[0]
    fastest = float(samples.min(axis=0).sum())
    typical = float(np.median(samples, axis=0).sum())
    variation = typical / fastest - 1.0 if fastest > 0 and repeats > 1 else 0.0
    crowded = cpu_share is not None and cpu_share < BUSY_CPU_SHARE
    busy = variation >= BUSY_VARIATION or crowded
    # the share written down, not rounded up: 74.6 % is "74 %", so the notice never says "75 %" (the rule is < 75 %)
    share = f"; the run had a CPU {math.floor(cpu_share * 100)}% of the time" if cpu_share is not None else ""
    if busy:
        sentence = (
            f"warning: the host was busy: the timings vary by {variation:.0%} between the {repeats} measured "
            f"steps{share}; close other programs or raise --repeats"
        )
    else:
        sentence = f"the timings vary by {variation:.0%} between the {repeats} measured step(s){share}"
    return Interference(variation, cpu_share, repeats, busy, sentence)

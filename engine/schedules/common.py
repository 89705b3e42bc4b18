"""Helpers shared by the schedule generators: argument checks with the arithmetic in the message."""

from __future__ import annotations

from ..ir import Action, Kind

MAX_RANKS = 256
MAX_MICROBATCHES = 16384


def check_sizes(family: str, num_ranks: int, num_microbatches: int) -> None:
    """User errors are ValueError with the numbers in the message (torchtitan's rule)."""
    for label, value, limit in (("ranks", num_ranks, MAX_RANKS), ("microbatches", num_microbatches, MAX_MICROBATCHES)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{family}: {label} must be a whole number, got {value!r}")
        if not 1 <= value <= limit:
            raise ValueError(f"{family}: {label} must be between 1 and {limit}, got {value}")


def check_chunks(family: str, chunks: int, *, minimum: int, maximum: int = 64) -> None:
    if isinstance(chunks, bool) or not isinstance(chunks, int):
        raise ValueError(f"{family}: chunks must be a whole number, got {chunks!r}")
    if not minimum <= chunks <= maximum:
        raise ValueError(f"{family}: chunks (stages per rank) must be between {minimum} and {maximum}, got {chunks}")


def forward(stage: int, microbatch: int) -> Action:
    return Action(stage, Kind.F, microbatch)


def backward(stage: int, microbatch: int) -> Action:
    return Action(stage, Kind.B, microbatch)


def backward_input(stage: int, microbatch: int) -> Action:
    return Action(stage, Kind.I, microbatch)


def backward_weight(stage: int, microbatch: int) -> Action:
    return Action(stage, Kind.W, microbatch)

"""Whether inferred actions hand data on as a pipeline's do (issue 46, cases 2 and 4).

Sends and receives on every rank are not yet a pipeline: a data-parallel job may sum its gradients with a ring
of sends and receives written by hand (each rank sends a chunk to the next rank and receives one from the
previous, 2 × (ranks − 1) times after each backward), or exchange its loss beside its all-reduces. What only a
pipeline does is hand each forward's output on and each backward's gradient back: every stage but the last sends
after its forwards (to the next stage), and every stage but the first after its backwards (to the previous one).
On CPU traces the ops do not say their peer, so the direction is read from what a send follows
(``engine.traces.inferred._sends``): the first rank's forwards must be handed on, the last rank's backwards
handed back. Where they are, the hand-offs carry the step, however many collectives run beside them (a
tensor-parallel stage all-reduces per layer); where they are not, the collectives say what the job is.
"""

from __future__ import annotations

from ..ir import Action, Kind
from .actions import RankStep
from .evidence import SEVERAL_STAGES, Communication, data_parallel_kind, outweighing
from .reading import TraceError


def _handed_on(step: RankStep, kind: Kind) -> tuple[int, int]:
    """How many of the rank's actions of ``kind`` a send followed, and how many it ran."""
    ran = sum(isinstance(a.slot, Action) and a.slot.kind is kind for a in step.actions)
    direction = "F" if kind is Kind.F else "B"
    return sum(hand.direction == direction for hand in step.sends), ran


def refuse_unpipelined_flow(steps: dict[int, RankStep], seen: dict[int, Communication]) -> None:
    """TraceError when the first rank hands on at most half of its forwards, or the last rank hands back at
    most half of its backwards: named as data parallelism sending its loss where collectives outweigh the
    hand-offs, as a ring all-reduce where every rank sends after its backwards instead."""
    first, last = steps[min(steps)], steps[max(steps)]
    forwards, backwards = _handed_on(first, Kind.F), _handed_on(last, Kind.B)
    if 2 * forwards[0] > forwards[1] and 2 * backwards[0] > backwards[1]:
        return
    after_backward = {rank: _handed_on(step, Kind.B) for rank, step in sorted(steps.items())}
    counts = "; ".join(f"rank {rank}: {sent} of {ran}" for rank, (sent, ran) in after_backward.items())
    flow = (
        f"rank {first.rank} sends after {forwards[0]} of its {forwards[1]} inferred forwards and rank {last.rank} "
        f"after {backwards[0]} of its {backwards[1]} backwards, where a pipeline's first stage hands every "
        "forward's output on and its last every gradient back"
    )
    heavy = outweighing(seen)
    if heavy is not None:
        kind = f"{data_parallel_kind(seen)} ({heavy})"
    elif all(2 * sent > ran for sent, ran in after_backward.values()):
        kind = (
            f"a ring all-reduce written with send/receive (the sends follow the backwards on every rank alike: "
            f"{counts}; a data-parallel job summing its gradients rank to rank)"
        )
    else:
        one_stage = f"{flow} (sends after backwards: {counts}): no pipeline of one stage per rank"
        raise TraceError(f"{one_stage}; {SEVERAL_STAGES}")
    raise TraceError(f"{flow}: this looks like {kind}, which has no pipeline bubble to read")

"""A pipeline with a rank left out, whatever ``--ranks`` says (step 4½ of ``engine.traces.imported``).

The files' world size catches a missing rank only while the user lets it: ``--ranks 0,1`` on two ranks of a
three-stage pipeline declares them a group, and the two would read as a complete 2-rank pipeline with a bubble of
its own. But the traces say where each hand-off went: stage s sends its forward output to stage s + 1 and its
gradient back to stage s − 1, and receives from them. A hand-off with a stage that no rank given runs is a
rank missing.

Labelled hand-offs (``PP:1SEND_F0``, a ``RECV`` or a receive inside GPipe's ``Forward i``) say so one by one.
Inferred ones (``engine.traces.inferred``) are only the first send after an action: one could be another's
(a runtime's own exchange), so a stage counts as missing when most of a rank's forwards, or backwards, send to
it; their receives are not counted (PyTorch's first step receives shapes before the first forward).
"""

from __future__ import annotations

from collections import Counter

from ..ir import Action, Kind, Overlap
from .actions import RankStep
from .reading import TraceError


def refuse_missing_neighbours(steps: dict[int, RankStep], inferred: bool, group: list[int] | None) -> None:
    """TraceError naming the first hand-off to or from a stage no rank given runs. ``group``: the job's rank of
    each pipeline rank (a pipeline group of a larger job), what the message calls them."""
    present = set().union(*(_stages(step) for step in steps.values()))
    for rank, step in sorted(steps.items()):
        for stage, direction, target, sending, count in _elsewhere(step, inferred):
            if target in present:
                continue
            job_rank = group[rank] if group is not None else rank
            one_each = all(_stages(other) == {other.rank} for other in steps.values())
            missing = f"rank {target}" if one_each and group is None and target >= 0 else "a rank"
            what = "forward outputs to" if direction == "F" else "gradients back to"
            if not sending:
                what = "forward inputs from" if direction == "F" else "gradients from"
            sign = "+" if (direction == "F") == sending else "−"
            numbered = "" if group is None else " (stages numbered from the lowest rank given)"
            raise TraceError(
                f"rank {job_rank} {'sends' if sending else 'receives'} stage {stage}'s {what} stage {target} "
                f"(= {stage} {sign} 1, {count} time(s)), but no rank given runs stage {target}{numbered}: {missing} "
                "is missing, whatever --ranks says; give every rank of the pipeline"
            )


def _elsewhere(step: RankStep, inferred: bool):
    """(stage, direction, other stage, sent?, count) of each kind of hand-off the rank made: sends and
    receives when labelled; an inferred rank's sends, only where most of its actions of that kind made one."""
    found: Counter[tuple[int, str, int, bool]] = Counter()
    for hand in step.sends:
        found[(hand.stage, hand.direction, hand.stage + 1 if hand.direction == "F" else hand.stage - 1, True)] += 1
    if not inferred:
        for hand in step.receives:
            source = hand.stage - 1 if hand.direction == "F" else hand.stage + 1
            found[(hand.stage, hand.direction, source, False)] += 1
    for (stage, direction, other, sending), count in found.items():
        if not inferred or 2 * count > _actions_of(step, stage, direction):
            yield stage, direction, other, sending, count


def _actions_of(step: RankStep, stage: int, direction: str) -> int:
    kind = Kind.F if direction == "F" else Kind.B
    return sum(isinstance(a.slot, Action) and a.slot.stage == stage and a.slot.kind is kind for a in step.actions)


def _stages(step: RankStep) -> set[int]:
    """The stages the rank computed (both halves of an overlapped pair, DualPipeV's)."""
    slots = [action.slot for action in step.actions]
    return {a.stage for slot in slots for a in (slot.actions if isinstance(slot, Overlap) else (slot,))}

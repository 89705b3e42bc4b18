"""The notes under a real job's step (``engine.traces.imported``): how its actions were read, on which clock
(the offsets per rank, in ms, as the CLI text, ``--json`` and the page show them), and what it cannot show."""

from __future__ import annotations


def step_notes(by_rank, steps, inferred, estimated, applied, given: bool = False) -> tuple[str, ...]:
    """``given``: the applied offsets are the user's (``--offsets``), not an estimate."""
    notes = []
    if inferred:
        notes.append(
            "inferred: these traces label no pipeline action (PyTorch's Schedule1F1B, DeepSpeed and Megatron-Core "
            "write none); each action was read from its autograd events, in micro-batch order, on the evidence of "
            "sends and receives between the ranks"
        )
    if any(t.has_gpu for t in by_rank.values()) and inferred:
        notes.append(
            "GPU trace read without labels: each inferred action is timed by the kernels its autograd ops launched "
            "(matched by their launches' correlation ids), on the GPU's clock"
        )
        notes.extend(note for step in steps.values() for note in step.notes)
    elif any(t.has_gpu for t in by_rank.values()):
        notes.append("GPU trace: each action is timed by its kernels on the compute stream; NCCL kernels are transfers")
    if applied and given:
        said = ", ".join(f"rank {rank} {offset:+.3f} ms" for rank, offset in sorted(applied.items()))
        notes.append(f"clock offsets applied as given: {said}")
    elif applied:
        said = ", ".join(f"rank {rank} {offset:+.3f} ms" for rank, offset in sorted(applied.items()))
        notes.append(f"clock offsets applied (the traces' clocks disagree: a receive ended before its send): {said}")
    elif estimated:
        said = ", ".join(f"rank {rank} {offset:+.3f} ms" for rank, offset in sorted(estimated.items()))
        notes.append(f"clocks agree (one host); offsets estimated from the hand-offs, not applied: {said}")
    sharding = sum(step.sharding for step in steps.values())
    if sharding:
        notes.append(
            f"{sharding} UNSHARD/RESHARD/REDUCE_GRAD actions of the schedule read and not drawn (PyTorch's runtime "
            "lists them for FSDP; without FSDP they do nothing)"
        )
    notes.append("activation memory is not in a profiler trace of this kind: the memory columns are 0")
    return tuple(notes)

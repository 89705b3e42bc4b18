"""PyTorch 2.13's own schedule orders and lowering passes, as references for the parity tests.

``get_schedule_ops`` builds a schedule class's ``pipeline_order`` without a process group; the lowering passes
(``_add_unshard_reshard``, ``_add_reduce_grad``, ``_add_send_recv``) turn a compute-only order into the
"compute_comms" form PyTorch's runtime executes. All are private PyTorch helpers: the tests pin torch 2.13.
"""

from __future__ import annotations

import logging
import warnings

from engine import FAMILIES, Schedule, read_csv


def pytorch_rows(family: str, num_ranks: int, num_microbatches: int, num_chunks: int | None = None) -> list[list]:
    """PyTorch's ``pipeline_order``: one list of ``_Action`` (or None for an idle step) per rank.

    Raises whatever PyTorch raises for sizes it does not accept."""
    from torch.distributed.pipelining import schedules
    from torch.distributed.pipelining._schedule_visualizer import get_schedule_ops

    class_name = FAMILIES[family].pytorch_class  # the family's own claim; the parity tests check it
    assert class_name is not None, f"{family} has no PyTorch class"

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        try:
            return get_schedule_ops(
                getattr(schedules, class_name), num_ranks, num_microbatches, num_stages_per_rank=num_chunks
            )
        finally:
            logging.disable(logging.NOTSET)


def as_csv(rows: list[list]) -> str:
    """PyTorch's CSV text of those rows (``_dump_csv`` writes ``str(action)``, an empty cell for None)."""
    return "\n".join(",".join("" if action is None else str(action) for action in row) for row in rows) + "\n"


def pytorch_schedule(family: str, num_ranks: int, num_microbatches: int, num_chunks: int | None = None) -> Schedule:
    """PyTorch's order read into the lab's IR (its REDUCE_GRAD entries are set aside)."""
    rows = pytorch_rows(family, num_ranks, num_microbatches, num_chunks)
    return read_csv(as_csv(rows), num_microbatches=num_microbatches, name=f"pytorch-{family}").schedule


def lowered_csv(schedule: Schedule) -> str:
    """``schedule`` lowered by PyTorch's own passes to the compute_comms form (SEND/RECV, UNSHARD, …)."""
    from torch.distributed.pipelining import schedules

    actions = {
        rank: [schedules._Action.from_str(str(slot)) for slot in slots] for rank, slots in enumerate(schedule.ranks)
    }
    for rank in actions:
        actions[rank] = schedules._add_unshard_reshard(actions[rank])
        actions[rank] = schedules._add_reduce_grad(actions[rank], schedule.num_microbatches)
    lowered = schedules._add_send_recv(actions, stage_to_rank=schedule.rank_of, num_stages=schedule.num_stages)
    return as_csv([lowered[rank] for rank in range(schedule.num_ranks)])

"""A timeline as a Chrome/Perfetto trace ("Trace Event Format"), the file ui.perfetto.dev opens."""

from __future__ import annotations

import pandas as pd

from .timeline import Timeline


def chrome_trace(timeline: Timeline, time_unit_us: float = 1000.0) -> dict:
    """Chrome/Perfetto trace ("Trace Event Format"): one process per rank with two tracks, compute (every
    action, one complete event each) and communication (every transfer as a send on the producer's rank
    and a receive on the consumer's; measured waits for a receive); a flow arrow ("s" → "f") links each
    producer, through its transfer, to its consumer — so the same picture opens in ui.perfetto.dev.

    ``time_unit_us`` converts the timeline's unit to microseconds (1000: units are milliseconds).
    """
    compute, comm = 0, 1  # thread ids of the two tracks
    events: list[dict] = []
    for rank in range(timeline.num_ranks):
        events += [
            {"name": "process_name", "ph": "M", "pid": rank, "args": {"name": f"rank {rank}"}},
            {"name": "process_sort_index", "ph": "M", "pid": rank, "args": {"sort_index": rank}},
            {"name": "thread_name", "ph": "M", "pid": rank, "tid": compute, "args": {"name": "compute"}},
            {"name": "thread_name", "ph": "M", "pid": rank, "tid": comm, "args": {"name": "communication"}},
        ]
    for row in timeline.frame.itertuples(index=False):
        events.append(
            {
                "name": f"{row.stage}{row.kind}{row.microbatch}",
                "cat": row.kind,
                "ph": "X",
                "pid": int(row.rank),
                "tid": compute,
                "ts": float(row.start) * time_unit_us,
                "dur": float(row.end - row.start) * time_unit_us,
                "args": {
                    "stage": int(row.stage),
                    "microbatch": int(row.microbatch),
                    "kind": row.kind,
                    "overlapped": bool(row.overlapped),
                    "memory_after": float(row.memory_after),
                    "source": row.source,
                },
            }
        )
    columns = timeline.TRANSFER_COLUMNS
    moves = timeline.transfers if timeline.transfers is not None else pd.DataFrame(columns=list(columns))
    for flow, (source, target, depart, arrive, what, consumer, needed, made) in enumerate(
        zip(*(moves[column].tolist() for column in columns), strict=True)
    ):
        label = f"{what} → {consumer}"
        args = {"from_rank": int(source), "to_rank": int(target)}
        for rank, verb in ((int(source), "send"), (int(target), "recv")) if arrive > depart else ():
            events.append(
                {"name": f"{verb} {label}", "cat": "transfer", "ph": "X", "pid": rank, "tid": comm,
                 "ts": depart * time_unit_us, "dur": (arrive - depart) * time_unit_us, "args": args}
            )  # fmt: skip
        # the arrow: from the producer's end, through the transfer, to the consumer's start
        events.append({"name": label, "cat": "hand-off", "ph": "s", "id": flow, "pid": int(source),
                       "tid": compute, "ts": made * time_unit_us - 1e-3})  # fmt: skip
        events.append({"name": label, "cat": "hand-off", "ph": "f", "bp": "e", "id": flow,
                       "pid": int(target), "tid": compute, "ts": needed * time_unit_us})  # fmt: skip
    if timeline.waits is not None:
        for row in timeline.waits.itertuples(index=False):
            events.append(
                {
                    "name": f"wait {row.waiting_for}",
                    "cat": "wait",
                    "ph": "X",
                    "pid": int(row.rank),
                    "tid": comm,
                    "ts": float(row.start) * time_unit_us,
                    "dur": float(row.end - row.start) * time_unit_us,
                    "args": {"waiting_for": row.waiting_for},
                }
            )
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": {"schedule": timeline.name}}

"""A rank's row on the Gantt: where its compute lane and, when transfers take time or a run waited for receives,
its thin communication lane sit — and what the communication lane draws: each hand-off's send and receive
bars with an arrow between, the wait for a busy shared link, and a distributed rank's blocked receives."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from app.charts.style import (
    EXPERT_HIDDEN,
    EXPERT_WAITED,
    RECEIVE_COLOUR,
    SEND_COLOUR,
    TRANSFER_COLOUR,
    WAIT_HATCH,
)
from engine import Timeline

TRANSFER_LIMIT = 3000
"""Above this many hand-offs the communication lane is left out (the arrows would hide the bars)."""


def time_format(timeline: Timeline) -> str:
    """One decimal for simulated time units, three for measured milliseconds."""
    times = np.r_[timeline.frame["start"].to_numpy(), timeline.frame["end"].to_numpy()]
    return ".1f" if np.allclose(times * 10, np.round(times * 10)) else ".3f"


@dataclass(frozen=True)
class Lanes:
    """Where a rank's row puts its bars (row units; the y axis runs downwards, rank 0 on top): the compute lane,
    and — when transfers take time or a run waited for receives — a thin communication lane under it."""

    compute: tuple[float, float]
    """(offset, width) of the compute lane."""
    comm: tuple[float, float] | None = None
    """(offset, width) of the communication lane, or None."""

    def halves(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """An overlapped F&B pair's two halves of the compute lane: F above, the backward below."""
        offset, width = self.compute
        return (offset, width / 2), (offset + width / 2, width / 2)


ONE_LANE = Lanes(compute=(-0.4, 0.8))
TWO_LANES = Lanes(compute=(-0.42, 0.6), comm=(0.22, 0.2))


def lanes_for(timeline: Timeline) -> Lanes:
    moves = timeline.transfers
    timed = moves is not None and len(moves) <= TRANSFER_LIMIT and bool((moves["arrive"] > moves["depart"]).any())
    waited = timeline.waits is not None and len(timeline.waits) > 0
    expert = timeline.expert_comm is not None and timeline.expert_comm["total"] > 0
    return TWO_LANES if timed or waited or expert else ONE_LANE


ARROWS = "pplab-arrows"
"""The ``meta`` of the trace that draws the hand-off arrows (the player and the Your run page find it by it)."""


def add_transfers(traces: list, timeline: Timeline, show_legend: bool, lanes: Lanes) -> None:
    """Each hand-off between ranks on the communication lanes — a send bar on the producer's rank, a receive bar
    on the consumer's — with an arrow from one to the other (only when transfers take time, and not too many)."""
    moves = timeline.transfers
    if lanes.comm is None or moves is None or moves.empty or len(moves) > TRANSFER_LIMIT:
        return
    moves = moves[moves["arrive"] > moves["depart"]]
    if moves.empty:
        return
    fmt = time_format(timeline)
    offset, width = lanes.comm
    for side, rank_column, colour in (("send", "from_rank", SEND_COLOUR), ("receive", "to_rank", RECEIVE_COLOUR)):
        hover = [
            f"rank {r} · {side} {what} → {consumer} · {a:{fmt}} → {b:{fmt}}"
            for r, what, consumer, a, b in zip(
                moves[rank_column], moves["what"], moves["for"], moves["depart"], moves["arrive"], strict=True
            )
        ]
        solid = dict(color=colour, line=dict(width=0))
        traces.append(lane_bar(f"transfer: {side}", "transfer", show_legend, lanes, moves[rank_column],
                               moves["depart"], moves["arrive"], solid, hover))  # fmt: skip
    queued = moves[moves["depart"] > moves["made"] + 1e-9]
    if not queued.empty:  # shared links: the product was made, its link still busy with an earlier one
        hover = [
            f"rank {r} · {what} → {consumer} waits for the link to rank {t} · {a:{fmt}} → {b:{fmt}}"
            for r, t, what, consumer, a, b in zip(
                queued["from_rank"],
                queued["to_rank"],
                queued["what"],
                queued["for"],
                queued["made"],
                queued["depart"],
                strict=True,
            )  # fmt: skip
        ]
        dotted = dict(
            color="rgba(255,255,255,0)",
            line=dict(width=0.5, color=SEND_COLOUR),
            pattern=dict(shape=".", fgcolor=SEND_COLOUR, size=4, solidity=0.4),
        )
        traces.append(lane_bar("transfer: waiting for the link", "transfer", show_legend, lanes, queued["from_rank"],
                               queued["made"], queued["depart"], dotted, hover))  # fmt: skip
    count, middle = len(moves), offset + width / 2
    x = np.column_stack([moves["depart"], moves["arrive"], np.full(count, np.nan)]).ravel()
    y = np.column_stack([moves["from_rank"] + middle, moves["to_rank"] + middle, np.full(count, np.nan)]).ravel()
    traces.append(
        dict(
            type="scatter",
            name="transfer: from producer to consumer",
            legendgroup="transfer",
            showlegend=False,
            meta=ARROWS,  # the browser hides them where they would be too dense to see (player.py)
            x=x.astype(np.float32),
            y=y.astype(np.float32),
            mode="lines+markers",
            line=dict(color=TRANSFER_COLOUR, width=1),
            marker=dict(
                symbol="arrow",
                angleref="previous",
                size=np.tile(np.array([0, 9, 0], np.int8), count),
                color=TRANSFER_COLOUR,
            ),
            hoverinfo="skip",
        )
    )


def add_expert_comm(traces: list, timeline: Timeline, show_legend: bool, lanes: Lanes) -> None:
    """The all-to-all inside each F and backward (``engine.simulator.expert_overlap``) on its rank's communication
    lane: the part that ran under the other half's compute faint, the part the rank waited for solid. A lone
    action waits for all of it, drawn at its end; an overlapped pair's two, one after the other from its start."""
    frame = timeline.frame
    if lanes.comm is None or "expert_comm" not in frame or len(frame) > TRANSFER_LIMIT:
        return
    rows = frame[frame["expert_comm"] > 0]
    if rows.empty:
        return
    comm, hidden = rows["expert_comm"].to_numpy(), rows["expert_hidden"].to_numpy()
    is_forward = (rows["kind"] == "F").to_numpy()
    paired = rows["overlapped"].to_numpy()
    partner = np.where(paired & ~is_forward, comm, 0.0)  # a pair's backward follows its forward's (same c)
    begin = np.where(paired, rows["start"].to_numpy() + partner, rows["end"].to_numpy() - comm)
    fmt = time_format(timeline)
    ranks = rows["rank"].reset_index(drop=True)
    labels = [f"{s}{k}{m}" for s, k, m in zip(rows["stage"], rows["kind"], rows["microbatch"], strict=True)]
    for name, low, high, marker in (
        ("all-to-all: under compute", begin, begin + hidden,
         dict(color=EXPERT_HIDDEN, line=dict(width=0), pattern=dict(shape=".", fgcolor=EXPERT_WAITED, size=4))),
        ("all-to-all: waited for", begin + hidden, begin + comm, dict(color=EXPERT_WAITED, line=dict(width=0))),
    ):  # fmt: skip
        keep = high > low + 1e-12
        if not keep.any():
            continue
        hover = [
            f"rank {r} · {label} · {name.split(': ')[1]} · {a:{fmt}} → {b:{fmt}}"
            for r, label, a, b, k in zip(ranks, labels, low, high, keep, strict=True)
            if k
        ]
        traces.append(lane_bar(name, "all-to-all", show_legend, lanes, ranks[keep],
                               pd.Series(low[keep]), pd.Series(high[keep]), marker, hover))  # fmt: skip


def add_waits(traces: list, timeline: Timeline, show_legend: bool, lanes: Lanes) -> None:
    """Time a rank sat blocked in a receive (the distributed backend), on its communication lane, hatched: a wait,
    not a transfer."""
    waits = timeline.waits
    if waits is None or not len(waits) or lanes.comm is None:
        return
    hatched = dict(
        color="rgba(255,255,255,0)",
        line=dict(width=0),
        pattern=dict(shape="/", fgcolor=WAIT_HATCH, size=5, solidity=0.5),
    )
    hover = [
        f"rank {r} · {a} waits for {w} · {e - s:.3f}"
        for r, a, w, s, e in zip(
            waits["rank"], waits["action"], waits["waiting_for"], waits["start"], waits["end"], strict=True
        )
    ]
    traces.append(lane_bar("waiting for a receive", "wait", show_legend, lanes, waits["rank"], waits["start"],
                           waits["end"], hatched, hover))  # fmt: skip


def lane_bar(name: str, group: str, show_legend: bool, lanes: Lanes, ranks, starts, ends, marker: dict, hover) -> dict:
    """One trace of bars on the communication lane: each from ``starts`` to ``ends`` on its rank's row."""
    assert lanes.comm is not None
    offset, width = lanes.comm
    return dict(
        type="bar",
        name=name,
        legendgroup=group,
        showlegend=show_legend,
        orientation="h",
        y=ranks.to_numpy(np.int16),
        base=starts.to_numpy(np.float32),
        x=(ends - starts).to_numpy(np.float32),
        width=width,
        offset=offset,
        marker=marker,
        hovertext=hover,
        hoverinfo="text",
    )

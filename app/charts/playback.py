"""Playing a timeline in the browser: Plotly frames that move only a few shapes — a cursor, a veil over what
has not happened yet, outlines around the actions running at that moment — played by the HTML controls of
``player.py``. At the end of the step every shape is hidden again, so the last frame is the chart as drawn.

Frames never resend the bars (FIELD-NOTES: 32 KiB against 531 KiB for 4×32×3 with 50 frames), so they work
with ``redraw=False``, and the figure stays small at any size.
"""

from __future__ import annotations

import numpy as np

from app.charts.style import CURSOR, VEIL

FRAMES = 80
"""Frames of one play-through (plus the start)."""
SECONDS = 8.0
"""Length of a play-through at 1× speed."""
HIGHLIGHT_LIMIT = 16
"""Outline the running actions only while there are at most this many rows (shapes cost bytes per frame)."""


def slot_rows(frame, yref: str) -> tuple[np.ndarray, str]:
    """(start, end, rank) of every occupied slot of one subplot, and that subplot's y axis."""
    slots = frame.drop_duplicates(["rank", "step"])
    return np.column_stack([slots["start"], slots["end"], slots["rank"]]), yref


def shapes_at(t: float, end: float, rows: list[tuple[np.ndarray, str]], highlight: bool) -> list[dict]:
    """The shapes that show moment ``t``: a veil from t to the end, the cursor, and an outline around each
    action running at t (one path per subplot, so a frame stays a few hundred bytes).

    Every moment has the same shapes in the same order — an empty veil at the end, a hidden outline where
    nothing runs — because Plotly updates shapes by position and keeps any a frame does not mention."""
    shapes = [
        dict(
            type="rect",
            xref="x",
            yref="paper",
            x0=t,
            x1=max(t, end),
            y0=0,
            y1=1,
            fillcolor=VEIL,
            line=dict(width=0),
            layer="above",
            visible=t < end,
        ),
        dict(
            type="line",
            xref="x",
            yref="paper",
            x0=t,
            x1=t,
            y0=0,
            y1=1,
            line=dict(color=CURSOR, width=2),
            layer="above",
            visible=t < end,
        ),
    ]
    if highlight:
        for slots, yref in rows:
            running = slots[(slots[:, 0] <= t) & (slots[:, 1] > t)]
            path = "".join(f"M{a:.6g},{r - 0.45:g}H{b:.6g}V{r + 0.45:g}H{a:.6g}Z" for a, b, r in running)
            shapes.append(
                dict(
                    type="path",
                    xref="x",
                    yref=yref,
                    path=path or "M0,0",
                    visible=bool(path),
                    line=dict(color="#111111", width=2.5),
                    layer="above",
                )
            )
    return shapes


def frame_times(end: float) -> np.ndarray:
    """About ``FRAMES`` moments from 0 to ``end`` at a round step (1, 2, 2.5 or 5 × 10^k), so the slider reads
    0, 0.5, 1.0… rather than 0.41, 0.82…; the last frame is ``end`` itself."""
    raw = end / FRAMES
    power = 10.0 ** np.floor(np.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    times = np.arange(0.0, end, step)
    return np.r_[times, end] if end - times[-1] > 1e-9 * end else times


def playback(
    layout: dict,
    end: float,
    rows: list[tuple[np.ndarray, str]],
    *,
    total_rows: int,
    time_format: str,
    cursor_at: float | None = None,
) -> list[dict]:
    """The frames of one play-through (named by their time), and ``layout`` set to show the first one the page
    shows: the whole step, or the moment ``cursor_at`` (the lecture's step mode). The controls that play them
    are HTML (``player.py``); ``layout["meta"]["start_frame"]`` tells them where the figure starts."""
    if end <= 0:
        return []
    highlight = total_rows <= HIGHLIGHT_LIMIT
    times = frame_times(end)
    frames = [dict(name=f"{t:{time_format}}", layout=dict(shapes=shapes_at(t, end, rows, highlight))) for t in times]
    start = len(times) - 1 if cursor_at is None else int(np.abs(times - cursor_at).argmin())
    layout.update(
        shapes=shapes_at(cursor_at, end, rows, highlight) if cursor_at is not None else [],
        meta=dict(start_frame=start),
    )
    return frames

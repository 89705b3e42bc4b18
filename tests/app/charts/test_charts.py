"""Figure builders without Streamlit: what they draw is the engine's timeline, they pass plotly's full
validation (they are built unvalidated for speed), and they stay small and readable."""

import json
import re

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from app.charts import BAR_LIMIT, compare_figure, timeline_figure, tradeoff_figure
from app.charts.bins import BINS, GAP_CODE, IDLE_CODE, LANE_BAND, LANE_SHARE, busy_by_bin
from app.charts.style import KIND_COLOURS, chunk_shade, contrast, text_colour
from engine import FAMILIES, UNIT, Costs, build_schedule, simulate
from engine.ir import Kind


def as_json(figure) -> dict:
    return json.loads(pio.to_json(figure, validate=False))


def decoded(array) -> np.ndarray:
    if isinstance(array, dict):
        import base64

        flat = np.frombuffer(base64.b64decode(array["bdata"]), dtype=np.dtype(array["dtype"]))
        shape = array.get("shape")
        return flat.reshape([int(n) for n in str(shape).split(",")]) if shape else flat
    return np.asarray(array)


@pytest.mark.parametrize("name", sorted(FAMILIES))
@pytest.mark.slow
def test_every_figure_passes_plotlys_validation(name):
    chunks = 3 if FAMILIES[name].takes_chunks else None
    costs = Costs.of({"F": 1, "I": 1, "W": 0.5}, comm=0.2, recompute=True)
    timeline = simulate(build_schedule(name, *FAMILIES[name].accepted_sizes(3, 6), chunks), costs)
    for figure in (
        timeline_figure(timeline, title=name, projector=True, cursor_at=2.0),
        compare_figure({name: timeline, "gpipe": simulate(build_schedule("gpipe", 3, 6))}),
        tradeoff_figure([{"schedule": name, "peak_memory": 3.0, "bubble_fraction": 0.2}]),
    ):
        go.Figure(as_json(figure))  # raises on any misspelt property


def test_bars_and_idle_blocks_account_for_every_rank_and_moment():
    timeline = simulate(build_schedule("zb-h1", 4, 8), Costs.of({"F": 1, "I": 1, "W": 0.5}))
    data = as_json(timeline_figure(timeline))["data"]
    bars = [t for t in data if t["type"] == "bar" and t["name"][0] in "FBIW"]
    assert sum(len(decoded(t["y"])) for t in bars) == len(timeline.frame)
    idle = next(t for t in data if t["name"] == "idle (the bubble)")
    per_rank = np.bincount(decoded(idle["y"]).astype(int), weights=decoded(idle["x"]), minlength=4)
    assert per_rank == pytest.approx(timeline.idle_per_rank(), abs=1e-5)


def test_large_timelines_are_binned_and_the_bins_keep_the_busy_time():
    timeline = simulate(build_schedule("zb-v", 32, 64), UNIT)
    assert len(timeline.frame) > BAR_LIMIT
    data = as_json(timeline_figure(timeline))["data"]
    assert [t["type"] for t in data].count("heatmap") == 1 and not any(t.get("base") is not None for t in data)
    edges = np.linspace(0, timeline.makespan, 101)
    assert busy_by_bin(timeline, edges).sum(axis=(1, 2)) == pytest.approx(timeline.busy_per_rank())


def test_a_binned_chart_keeps_forwards_and_backwards_visible_in_lanes():
    """At 256 micro-batches, colouring a column by the kind that ran most drew one orange block; each
    kind's own lane keeps the forwards visible, and a lane is coloured exactly where its kind ran for a quarter
    of the column or more."""
    timeline = simulate(build_schedule("1f1b", 16, 256), UNIT)
    [heatmap] = [t for t in as_json(timeline_figure(timeline))["data"] if t["type"] == "heatmap"]
    z = decoded(heatmap["z"])
    assert z.shape == (16 * 3 + 1, BINS) and (z[::3] == GAP_CODE).all()  # a gap row, then the F and B lanes
    edges = np.linspace(0, timeline.makespan, BINS + 1)
    busy = busy_by_bin(timeline, edges)
    for rank in range(16):
        forward, backward = z[3 * rank + 1], z[3 * rank + 2]
        assert set(forward) == {Kind.F, IDLE_CODE} and set(backward) == {Kind.B, IDLE_CODE}
        expected = busy[rank, Kind.F] >= LANE_SHARE * (edges[1] - edges[0])
        assert ((forward == Kind.F) == expected).all()
        steady = slice(BINS // 3, 2 * BINS // 3)  # both kinds run through the steady state
        assert (forward[steady] == Kind.F).mean() > 0.3 and (backward[steady] == Kind.B).mean() > 0.6
    y = decoded(heatmap["y"])
    assert y[1] == pytest.approx(-LANE_BAND / 4) and y[2] == pytest.approx(LANE_BAND / 4)


@pytest.mark.parametrize(
    "name, ranks, microbatches, limit_kib",
    [("zb-v", 8, 32, 300), ("interleaved-1f1b", 8, 32, 300), ("zb-v", 32, 256, 1200)],
)
@pytest.mark.slow
def test_figures_stay_small(name, ranks, microbatches, limit_kib):
    """A binned chart carries its actions packed for zooming in (13 bytes each, base64): 49k actions ≈ 0.85 MB."""
    timeline = simulate(build_schedule(name, ranks, microbatches), UNIT)
    assert len(pio.to_json(timeline_figure(timeline), validate=False)) < limit_kib * 1024


def test_frames_only_move_shapes_and_outline_what_runs():
    timeline = simulate(build_schedule("1f1b", 2, 2))
    frames = as_json(timeline_figure(timeline))["frames"]
    assert all(set(f) == {"name", "layout"} and set(f["layout"]) == {"shapes"} for f in frames)
    middle = frames[len(frames) // 2]["layout"]["shapes"]
    t = middle[1]["x0"]
    running = timeline.frame[(timeline.frame["start"] <= t) & (timeline.frame["end"] > t)]
    outlines = [s for s in middle if s["type"] == "path"]
    assert len(outlines) == 1 and outlines[0]["path"].count("M") == len(running)


def test_every_chunk_shade_differs_and_its_label_is_readable():
    for kind in KIND_COLOURS:
        for chunks in range(1, 9):
            shades = [chunk_shade(kind, chunk, chunks) for chunk in range(chunks)]
            assert len(set(shades)) == chunks
            assert all(contrast(shade, text_colour(shade)) >= 4.5 for shade in shades)  # WCAG AA


@pytest.mark.parametrize("name, recompute", [("1f1b", True), ("gpipe", True), ("zb-h1", False), ("dualpipev", True)])
def test_the_memory_chart_and_the_peak_card_are_one_series(name, recompute):
    """With recomputation the card said 1.3 while the chart never rose above 0.4 (it left out the
    activations a recomputing backward rebuilds). Both now read Timeline.memory_curve."""
    costs = Costs.of({"F": 1, "I": 1, "W": 1}, recompute=recompute)
    timeline = simulate(build_schedule(name, 4, 8), costs)
    drawn = as_json(timeline_figure(timeline))
    highest = max(decoded(t["y"]).max() for t in drawn["data"] if t.get("legendgroup") == "memory")
    assert f"{highest:.3g}" == f"{max(timeline.peak_memory_per_rank()):.3g}"
    if recompute:  # the rebuilt activations are in the series: above what is held between actions
        assert highest > timeline.frame["memory_after"].max() + 0.2  # a backward rebuilds what was dropped


@pytest.mark.slow
def test_the_plan_attribution_and_frontier_figures_pass_plotlys_validation():
    from app.charts.attribution import attribution_figure
    from app.charts.plan import allreduce_traces, memory_figure
    from app.charts.search import frontier_figure
    from engine.attribution import attribute_simulated
    from engine.scale import plan_preset
    from engine.search import frontier

    result = plan_preset("llama3-405b-as-trained")
    go.Figure(memory_figure(result).to_dict())
    go.Figure(timeline_figure(result.timeline, extra=allreduce_traces(result), time_unit="seconds").to_dict())
    schedule = build_schedule("zb-h1", 4, 8)
    costs = Costs.of({"F": 1, "I": 1, "W": 2}, stage_scale=(1.5, 1, 1, 1))
    go.Figure(
        attribution_figure(attribute_simulated(schedule, costs, simulate(schedule, costs)), time_unit="u").to_dict()
    )
    go.Figure(frontier_figure(frontier(2, 3, UNIT, time_limit_per_budget_s=0.5, method="heuristic")).to_dict())
    memory = as_json(memory_figure(result))
    stacked = [t for t in memory["data"] if t["type"] == "bar"]
    assert [t["name"] for t in stacked] == ["weights", "gradients", "optimizer", "activations"]
    assert all(t["marker"]["pattern"].get("fillmode", "overlay") == "overlay" for t in stacked[1:])  # filled bars


@pytest.mark.slow
def test_every_secondary_chart_writes_its_text_at_18_px_or_more_on_a_projector():
    """The look's template sizes its legend (12 px), axis titles (14 px) and ticks (12 px) itself, which a layout
    font does not override: projector mode names each one."""
    from app.charts.attribution import attribution_figure
    from app.charts.plan import memory_figure, time_figure
    from app.charts.search import frontier_figure
    from engine.attribution import attribute_simulated
    from engine.scale import plan_preset
    from engine.search import frontier

    result = plan_preset("llama3-405b-as-trained")
    schedule = build_schedule("zb-h1", 4, 8)
    costs = Costs.of({"F": 1, "I": 1, "W": 2}, stage_scale=(1.5, 1, 1, 1))
    split = attribute_simulated(schedule, costs, simulate(schedule, costs))
    found = frontier(2, 3, UNIT, time_limit_per_budget_s=0.5, method="heuristic")
    rows = [{"schedule": "1f1b", "peak_memory": 3.0, "bubble_fraction": 0.2}]
    for projector, least in ((True, 18), (False, 0)):
        for figure in (
            memory_figure(result, projector=projector),
            time_figure(result, projector=projector),
            attribution_figure(split, time_unit="u", projector=projector),
            frontier_figure(found, projector=projector),
            tradeoff_figure(rows, projector=projector),
        ):
            layout = figure.layout
            texts = [layout.legend.font.size, *(a.font.size for a in layout.annotations)]
            texts += [axis.title.font.size for axis in (layout.xaxis, layout.yaxis)]
            texts += [axis.tickfont.size for axis in (layout.xaxis, layout.yaxis)]
            sized = [size for size in texts if size is not None]
            if projector:
                assert len(sized) == len(texts) and min(sized) >= least, (figure.layout.title.text, texts)
            else:
                assert not sized or min(sized) < 18  # the laptop's sizes stay the template's


@pytest.mark.parametrize(
    ("figure_of", "ranks"),
    [
        # Search on a projector: the searched schedule and six families of 4 ranks, stacked in 330 px
        (
            lambda: compare_figure(
                {
                    name: simulate(build_schedule(name, 4, 8), Costs.of({"F": 1, "B": 2}))
                    for name in ("gpipe", "1f1b", "zb-h1", "zb-h2", "interleaved-1f1b", "zb-v", "dualpipev")
                },
                projector=True,
            ),
            4,
        ),  # fmt: skip
        (
            lambda: timeline_figure(
                simulate(build_schedule("1f1b", 32, 32), Costs.of({"F": 1, "B": 2})), projector=True
            ),
            32,
        ),
        (lambda: timeline_figure(simulate(build_schedule("1f1b", 32, 32), Costs.of({"F": 1, "B": 2}))), 32),
    ],
    ids=["search-7x4-projector", "32-ranks-projector", "32-ranks-laptop"],
)
def test_rank_labels_never_overlap(figure_of, ranks):
    """Two labelled ranks are far enough apart that their labels do not touch (a row of ranks shares its
    subplot's height)."""
    layout = figure_of().layout
    height = layout.height - layout.margin.t - layout.margin.b
    axes = [name for name in layout.to_plotly_json() if name.startswith("yaxis") and layout[name].ticktext]
    assert axes
    for name in axes:
        axis = layout[name]
        pitch = (axis.domain[1] - axis.domain[0]) * height / ranks  # pixels from one rank's row to the next
        apart = min(np.diff(axis.tickvals), default=ranks) * pitch
        # a label's glyphs ("rank 12": no descender) stand about 0.75 of its font size tall
        assert apart >= 0.8 * axis.tickfont.size, (name, list(axis.tickvals), axis.tickfont.size, pitch)


@pytest.mark.parametrize(("ranks", "microbatches"), [(4, 8), (8, 20), (16, 64), (3, 1)])
def test_the_question_picture_shows_the_set_up_and_nothing_of_what_happens(ranks, microbatches):
    """p empty rows and m waiting boxes in columns as tall as the ranks, each box on a row and none on another's
    place; no time axis; and the only numbers it writes are p and m (Plotly validates it too)."""
    from app.charts.setup import setup_figure

    figure = setup_figure(ranks, microbatches, title=f"{ranks} ranks, {microbatches} micro-batches", projector=True)
    go.Figure(as_json(figure))
    rows, boxes = figure.data
    assert list(rows.y) == list(range(ranks)) and min(rows.base) >= 0
    places = list(zip(boxes.base, boxes.y, strict=True))
    assert len(set(places)) == microbatches and all(0 <= y < ranks for _, y in places)
    assert max(base + width for base, width in zip(boxes.base, boxes.x, strict=True)) < 0  # left of the rows
    assert figure.layout.xaxis.visible is False
    written = " ".join(
        [figure.layout.title.text, *(t.name for t in figure.data), *(a.text for a in figure.layout.annotations)]
    )
    assert sorted(set(re.findall(r"\d+", written))) == sorted({str(ranks), str(microbatches)}), written

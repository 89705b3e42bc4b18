"""What the pages say about a timeline: the metric cards, the chart's summary, why each number is what it is,
each rank's idle time by cause and the per-rank table. Every number is the engine's."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.charts import BAR_LIMIT
from app.charts.attribution import attribution_figure
from app.elements.live_chart import live_chart
from app.frame.cards import card_places
from app.text.metrics import CARDS, PLAYGROUND_CARDS
from engine import Costs, Schedule, Timeline
from engine.attribution import DEFINITIONS, LEVELS, IdleAttribution
from engine.schedules import Family

KEYBOARD_HINT = "keyboard_hint"
"""The start of the key of the chart's keyboard help, a block of its own that a touch screen hides
(``app.charts.style.PAGE_CSS``)."""


def card_rows(
    timeline: Timeline, cards: tuple[str, ...] | None = None, *, time_unit: str = ""
) -> list[tuple[str, str, str]]:
    """(label, value, help) of each card, as drawn. ``cards`` None: the Playground's set, where "Idle inside
    span" appears only when it differs from the plain idle time; named cards are always drawn (a lesson that
    has taught a card shows it), in ``CARDS``' order. The help is the glossary's definition."""
    if cards is None:
        idle = CARDS["idle"].value(timeline)
        differs = abs(sum(timeline.span_idle_per_rank()) - idle) > 1e-9 * max(1.0, idle)
        cards = tuple(c for c in PLAYGROUND_CARDS if c not in ("idle_inside_span", "period_bubble_rate") or differs)
        if timeline.expert_comm is None:  # no all-to-all asked for: no card about it
            cards = tuple(c for c in cards if c != "all_to_all_hidden")
    return [
        (metric.card, metric.shown(timeline, time_unit=time_unit), metric.help)
        for name, metric in CARDS.items()
        if name in cards
    ]


def metric_cards(
    timeline: Timeline,
    *,
    cards: tuple[str, ...] | None = None,
    time_unit: str = "",
    stacked: bool = False,
) -> None:
    """The metric cards of ``timeline``: the Playground's set, or only ``cards`` (a lesson shows the quantities
    it has taught); in one row, or ``stacked`` one under another (beside a projected chart)."""
    rows = card_rows(timeline, cards, time_unit=time_unit)
    if not rows:
        return
    places = card_places(len(rows), stacked=stacked)
    for place, (label, value, help_text) in zip(places, rows, strict=True):
        place.metric(label, value, help=help_text)
    summary = timeline.summary()
    idle, span_idle = sum(summary["idle"]), sum(summary["span_idle"])
    shows_span = any(label == CARDS["idle_inside_span"].card for label, _, _ in rows)
    if shows_span and span_idle < 0.5 * idle:  # the two counts tell different stories (ZB-H2, ZB-V)
        st.caption(
            "Idle inside span leaves out each rank's wait before its first action and after its last: the "
            "Zero Bubble papers' count, because the next step's warm-up fills those. A \"zero bubble\" "
            "schedule is zero by this count, not by the bubble fraction of one step on its own."
        )


def chart_summary(timeline: Timeline, what: str, memory: bool = True) -> str:
    """One paragraph a screen reader says of a Gantt chart: what it shows, the makespan, the bubble and where
    the idle time is (before a rank's first action, between its actions, after its last); and, with ``memory``
    (the chart draws it) and some memory to speak of, who holds the most."""
    summary = timeline.summary()
    makespan = summary["makespan"]
    if makespan == 0:
        return f"{what}: no action takes any time."
    frame = timeline.frame
    first = frame.groupby("rank")["start"].min().reindex(range(timeline.num_ranks), fill_value=0.0)
    last = frame.groupby("rank")["end"].max().reindex(range(timeline.num_ranks), fill_value=makespan)
    before = float((first - frame["start"].min()).sum())
    after = float((frame["end"].max() - last).sum())
    inside = float(sum(summary["span_idle"]))
    total = before + inside + after
    parts = [
        (before, "before each rank's first action (the pipeline filling)"),
        (inside, "between actions"),
        (after, "after each rank's last action (the pipeline draining)"),
    ]
    where = "; ".join(f"{share / total:.0%} {words}" for share, words in parts if share > 1e-9 * total) or "none"
    busiest = int(max(range(timeline.num_ranks), key=lambda r: summary["peak_memory"][r]))
    said = (
        f"{what}: a Gantt chart with one row per rank ({timeline.num_ranks} ranks) and time from left to right; "
        f"each bar is one action, labelled with its kind letter (F forward, B backward, I input gradient, "
        f"W weight gradient) and micro-batch. The step takes {makespan:.4g}. {summary['bubble_fraction']:.1%} "
        f"of the device time is idle (the bubble): {where}."
    )
    if memory and summary["peak_memory"][busiest] > 0:  # a profiler trace has no memory: nothing to say of it
        said += f" Below it, activation memory over time; rank {busiest} holds the most, "
        said += f"{summary['peak_memory'][busiest]:.3g}."
    return said


def tradeoff_sentences(rows: list[dict]) -> list[str]:
    """What the bubble-versus-memory chart shows, in words computed from its points: each schedule against the
    first, by how much its bubble and its peak memory move (never a direction the numbers do not show)."""
    first = rows[0]
    tolerance = 1e-9
    sentences = []
    for row in rows[1:]:
        bubble = row["bubble_fraction"] - first["bubble_fraction"]
        memory = row["peak_memory"] - first["peak_memory"]
        lower, higher = bubble < -tolerance, bubble > tolerance
        more, less = memory > tolerance, memory < -tolerance
        if lower and more:
            verdict = "it trades memory for time (down and to the right)"
        elif lower:
            verdict = "less bubble at no extra memory on these costs (straight down" + (" and left)" if less else ")")
        elif higher and less:
            verdict = "it trades time for memory (up and to the left)"
        elif less:
            verdict = "the same bubble with less memory (straight left)"
        elif more:
            verdict = "the same bubble with more memory (straight right)" if not higher else "more of both"
        else:
            verdict = "more bubble for the same memory (straight up)" if higher else "the same point"
        sentences.append(
            f"{row['schedule']} against {first['schedule']}: bubble {row['bubble_fraction']:.1%} vs "
            f"{first['bubble_fraction']:.1%} ({100 * bubble:+.1f} pts), peak memory {row['peak_memory']:.3g} vs "
            f"{first['peak_memory']:.3g} ({memory:+.3g}) — {verdict}."
        )
    return sentences


def idle_causes(split: IdleAttribution, *, key: str, time_unit: str, projector: bool = False) -> None:
    """Each rank's idle time by cause, with what each cause means and the four simulations it comes from."""
    totals = split.per_rank.sum(axis=0)
    idle = float(split.idle.sum())
    shown = [
        f"**{cause}** {value:+.4g} {time_unit}"
        for cause, value in zip(split.causes, totals, strict=True)
        if abs(value) > 1e-9 * max(split.makespan, 1.0)
    ]
    st.markdown(
        f"All ranks together idle **{idle:.4g} {time_unit}**: " + ", ".join(shown) + ". Each part is the "
        "difference between two simulations of this schedule, each adding one thing to the textbook's setting:"
    )
    for cause, why in split.negative().items():  # a part below zero is not an error: say why it can be
        st.caption(f"{cause.capitalize()} is negative: {why}.")
    live_chart(attribution_figure(split, time_unit=time_unit, projector=projector), key=key)
    levels = pd.DataFrame(
        {
            "timing": [*(level.replace("+", "\\+", 1) for level in LEVELS), "the run"],  # a table's cells are Markdown
            "adds": ["—", *split.causes[1:]],
            f"makespan ({time_unit})": [f"{value:.4g}" for value in (*split.level_makespans, split.makespan)],
            f"idle, all ranks ({time_unit})": [f"{value:.4g}" for value in (*split.level_idle, idle)],
        }
    )
    st.table(levels)  # the last row's idle minus the one before it is the overhead
    st.caption(" ".join(f"{cause.capitalize()}: {words}." for cause, words in DEFINITIONS.items()))


def shared_links_effect(shared: Timeline, delayed: Timeline) -> str:
    """What occupying the links changes: the step against the delay model's, and the transfers that queued."""
    waits = shared.link_waits()
    queued = waits[waits > 1e-9]
    change = shared.makespan - delayed.makespan
    step = (
        f"the step takes {shared.makespan:.4g} against {delayed.makespan:.4g} with transfers as pure delays "
        f"({change:+.4g}, {change / delayed.makespan:+.1%})"
        if delayed.makespan
        else f"the step takes {shared.makespan:.4g}"
    )
    if not len(queued):
        return f"Shared links: no transfer waited for its link, so {step}."
    return (
        f"Shared links: {len(queued)} of {len(waits)} transfers waited for their link, {queued.sum():.4g} in all "
        f"and at most {queued.max():.4g} (dotted on the sender's lane); {step}."
    )


def legend_notes(timeline: Timeline, costs: Costs | None, schedule: Schedule, *, key: str) -> None:
    """What the chart draws, in words, under it; ``key``: the chart's (a page may draw two)."""
    binned = len(timeline.frame) > BAR_LIMIT
    notes = [
        "Each rank's row has a lane per kind of action (F above B, or F, I, W), coloured where that kind ran for "
        "at least a quarter of the column's time; where every lane is grey the rank was idle — the bubble. Zoom "
        "in to see the actions one by one."
        if binned
        else "Hatched grey blocks are idle time — the bubble."
    ]
    if schedule.copies > 1:  # DualPipe: the two chunks are two copies of the model, not two halves
        half = schedule.num_microbatches // 2
        notes.append(
            f"Each rank holds two copies' blocks, {schedule.copies}× the weights of one rank's share: the first "
            f"copy (micro-batches 0–{half - 1}, entering at rank 0) in the darker shade, the second copy "
            f"(micro-batches {half}–{schedule.num_microbatches - 1}, entering at rank {schedule.num_ranks - 1}) "
            f"lighter. The memory chart counts activations; the second copy of the weights comes on top."
        )
    elif schedule.num_chunks > 1:
        notes.append(
            f"Each rank holds {schedule.num_chunks} model chunks: chunk 0 (nearest the input) in the darkest shade, "
            f"each later chunk lighter."
        )
    if costs is not None and costs.recompute:
        notes.append(
            f"Recomputation: a forward keeps {costs.recompute_memory_fraction:.0%} of its activations (the "
            f"stage input); each backward first re-runs the forward (the cross-hatched start of B/I bars, "
            f"+F each) and holds the rebuilt activations while it runs — the peak counts them. Memory "
            f"saved, time added."
        )
    if costs is not None and costs.comm > 0:
        notes.append(
            f"Under each rank a thin lane shows its transfers, each taking {costs.comm:g}: dark where one leaves, "
            f"light where it arrives, an arrow between"
            + (" — one at a time on each link, so a burst queues." if costs.shared_links else ".")
        )
    expert = timeline.expert_comm
    if expert is not None and expert["total"] > 0:
        notes.append(
            f"On the lane under each rank, the all-to-all inside each F and backward ({costs.expert_comm:g} each, "
            f"through one rank's share): solid where the rank waited for it, light where it ran under another "
            f"micro-batch's compute — {expert['hidden']:g} of {expert['total']:g} hidden "
            f"({expert['hidden_fraction']:.0%}), {expert['exposed']:g} waited for."
            if costs is not None
            else f"All-to-all: {expert['hidden']:g} of {expert['total']:g} hidden ({expert['hidden_fraction']:.0%})."
        )
    if binned:
        notes.append(
            f"{len(timeline.frame):,} actions are too many to draw one by one: each column is a slice of "
            f"time coloured by the kind that ran most in it."
        )
    if timeline.num_ranks > 8:
        notes.append("The memory chart shows rank 0, the last rank and the busiest.")
    notes.append(
        "▶ Play (above the chart) sweeps a cursor through the step: what has not happened yet is veiled, what "
        "runs is outlined. The Time slider scrubs; click a legend entry to hide it."
    )
    st.caption(" ".join(notes))
    with st.container(key=f"{KEYBOARD_HINT}_{key}"):  # hidden on a touch screen (style.PAGE_CSS): it has neither key
        st.caption("With a keyboard: Tab reaches ▶ Play, and the arrow keys move the Time slider.")


def why_panel(family: Family, schedule: Schedule, costs: Costs, timeline: Timeline) -> None:
    """The family's closed forms with this configuration's numbers, next to the simulated values."""
    st.markdown(family.story)
    if timeline.makespan == 0:
        st.markdown("Every cost is zero, so nothing takes time: there is no bubble to explain.")
        return
    forms = family.closed_forms(schedule, costs, timeline)
    if not forms:
        st.markdown("This family has no simple closed form: the simulated value is the answer.")
    for form in forms:
        show = {"share": lambda x: f"{x:.1%}", "ratio": lambda x: f"{x:.3f}"}.get(form.kind, lambda x: f"{x:.4g}")
        agree = "equals" if form.holds else "differs from"
        steps = list(dict.fromkeys([form.formula, form.filled]))  # "p = 4", not "p = 4 = 4"
        if steps[-1] != show(form.predicted):
            steps.append(f"**{show(form.predicted)}**")
        else:
            steps[-1] = f"**{steps[-1]}**"
        st.markdown(
            f"**{form.quantity}** — {' = '.join(steps)}; "
            f"the simulation gives **{show(form.simulated)}**, which {agree} it. "
            f"<span style='opacity:0.75'>({form.source})</span>",
            unsafe_allow_html=True,
        )
        if form.departures:
            st.markdown(
                "The closed form assumes "
                + "; ".join(form.departures)
                + " — this configuration does not, "
                + ("so the simulated value is the one to trust." if not form.holds else "yet it happens to hold here.")
            )
        elif not form.holds:  # pragma: no cover - the tests keep every formula holding under its assumptions
            st.warning("The closed form's assumptions hold but the simulation differs: please report this.")


def per_rank_frame(columns: dict[str, list]) -> pd.DataFrame:
    """A per-rank table as the pages show it: a "rank" column first, and every number written to its own
    precision (24, 4.5, 0.333 — not 24.0000)."""

    def shown(value):
        return f"{value:.4g}" if isinstance(value, float) else value

    first = next(iter(columns.values()), [])
    return pd.DataFrame({"rank": list(range(len(first)))} | {k: [shown(v) for v in vs] for k, vs in columns.items()})


def rank_table(timeline: Timeline) -> None:
    summary = timeline.summary()
    table = per_rank_frame(
        {
            "busy": summary["busy"],
            "idle": summary["idle"],
            "idle inside span": summary["span_idle"],
            "peak memory": summary["peak_memory"],
        }
    )
    st.table(table)  # a static table: the grid widget's 1.2 MB of script stays off the page

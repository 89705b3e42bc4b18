"""Compare: two to four schedules on the same ranks, micro-batches and costs, on one time axis."""

import pandas as pd
import streamlit as st

from app.charts import compare_figure, tradeoff_figure
from app.charts.player import player
from app.elements.live_chart import live_chart
from app.frame import state
from app.frame.engine_calls import simulated
from app.frame.projector import projector_query, projector_toggle
from app.frame.safe_text import plain
from app.frame.sidebar import LabInputs, bind_lab, page_heading, warn_about
from app.frame.timeline_panels import chart_summary, tradeoff_sentences
from app.views.compare.settings import COMPARE_DEFAULT, COMPARE_KEYS, TABLE_2_LAB, CompareSettings
from app.views.navigation import link_to
from engine import FAMILIES

PAGE = "cp"
SCHEDULES = f"{PAGE}_schedules"


def bind() -> tuple[CompareSettings, list[str], bool]:
    """The address bar (when the visitor opened a link) and the sidebar → the comparison's settings."""
    link = state.opened_link(PAGE, COMPARE_KEYS + (state.PROJECTOR_KEY,))
    problems: list[str] = []
    if link:
        schedules, problems = CompareSettings.schedules_from_query(link)
        state.seed({SCHEDULES: list(schedules)})
    projector = projector_toggle(link)
    state.restore({SCHEDULES: list(COMPARE_DEFAULT)})
    names = st.sidebar.multiselect(
        "Schedules (2 to 4)",
        list(FAMILIES),
        key=SCHEDULES,
        max_selections=4,
        format_func=lambda n: FAMILIES[n].title,
    )
    state.remember([SCHEDULES])
    chosen = CompareSettings(tuple(names))
    inputs = LabInputs(schedule=False, chunks=chosen.takes_chunks, split_costs=True, overlapped=chosen.overlaps)
    lab, typed = bind_lab(PAGE, link, inputs=inputs)
    return CompareSettings(tuple(names), lab), problems + typed, projector


def deepseek_table_2() -> None:
    """A link to DeepSeek-V3's own comparison (report Table 2; the DualPipe README's table): 1F1B, ZB-1P,
    DualPipe and DualPipeV on the same costs — here with an all-to-all in every F and B, which only the two that
    overlap a forward with a backward can hide. The sizes are DeepSeek's figure's, 8 ranks and 20 micro-batches."""
    preset = CompareSettings(("1f1b", "zb-h1", "dualpipe", "dualpipev"), TABLE_2_LAB)
    link_to("cp", preset.to_query(), "DeepSeek-V3's comparison: 1F1B, ZB-1P, DualPipe, DualPipeV with an "
            "all-to-all", icon=":material/compare_arrows:")  # fmt: skip


def compare() -> None:
    page_heading(
        "Compare schedules",
        "The same model, ranks, micro-batches and costs under different schedules: one time axis, so the "
        "longer step is visibly longer. B = I + W for the schedules without a split backward.",
    )
    settings, problems, projector = bind()
    deepseek_table_2()
    state.write_url(PAGE, settings.to_query() | projector_query(projector))
    warn_about(problems)

    try:
        settings.check()
        results = {}
        for name in settings.schedules:
            one = settings.settings_for(name)
            one.check()
            results[name] = (one,) + simulated(one)
        state.keep_last_good(PAGE, results)
    except ValueError as error:
        st.error(f"This comparison cannot run: {plain(error)}")
        results = state.last_good(PAGE)
        if results is None:
            st.stop()
        st.caption("Showing the last comparison that worked.")

    for name, (one, _, _) in results.items():
        for note in one.family_spec.size_notes(one.num_ranks, one.num_microbatches):
            st.info(f"{FAMILIES[name].title}: {note}")
    rows = []
    for name, (_, schedule, timeline) in results.items():
        summary = timeline.summary()
        rows.append(
            {
                "schedule": name,
                "makespan": summary["makespan"],
                "bubble_fraction": summary["bubble_fraction"],
                "bubble_ratio": summary["bubble_ratio"],
                "idle_inside_span": summary["span_idle_fraction"],
                "peak_memory": max(summary["peak_memory"]),
                "transfers": summary["transfers"],
                "weights": max(schedule.weights_per_rank()),
                **({"all_to_all": summary["expert_comm"]} if "expert_comm" in summary else {}),
            }
        )
    table = pd.DataFrame(rows).set_index("schedule")
    first = table.iloc[0]
    shown = pd.DataFrame(
        {
            "makespan": table["makespan"].map("{:.4g}".format),
            f"vs {table.index[0]}": (table["makespan"] / first["makespan"] - 1).map("{:+.1%}".format),
            "bubble fraction": table["bubble_fraction"].map("{:.1%}".format),
            "Δ bubble": (table["bubble_fraction"] - first["bubble_fraction"]).map(lambda d: f"{100 * d:+.1f} pts"),
            "bubble ratio": table["bubble_ratio"].map("{:.3f}".format),
            "idle inside span": table["idle_inside_span"].map("{:.1%}".format),
            "peak memory (busiest rank)": table["peak_memory"].map("{:.3g}".format),
            "Δ memory": (table["peak_memory"] - first["peak_memory"]).map("{:+.3g}".format),
            "transfers": table["transfers"].map("{:,}".format),  # text like every cell: one column per schedule
            "weights per rank (× a rank's share)": table["weights"].map("{:g}×".format),
        }
    )
    if "all_to_all" in table:  # how much of the all-to-all each schedule hid, and what it waited for
        shown["all-to-all hidden"] = table["all_to_all"].map(lambda a: f"{a['hidden_fraction']:.0%} ({a['hidden']:g})")
        shown["all-to-all waited for"] = table["all_to_all"].map(lambda a: f"{a['exposed']:g}")
    timelines = {FAMILIES[name].title: timeline for name, (_, _, timeline) in results.items()}
    figure = compare_figure(timelines, projector=projector)
    spoken = " ".join(chart_summary(timeline, title) for title, timeline in timelines.items())
    player("cp_gantt", figure, name=f"{len(timelines)} schedules on one time axis", summary=spoken)
    live_chart(figure, key="cp_gantt")  # redrawn in place on a change (charts/live_chart.py)
    st.caption(
        "One ▶ Play drives every schedule: the cursor shows where each one is at the same moment. "
        "Hatched grey is idle time."
    )
    # under the chart (three schedules and their time axis come first, on a projector too), one column per
    # schedule: four schedules fit a phone's width, where nine metric columns hid in a sideways scroller
    st.table(shown.T.rename_axis("metric"))
    st.subheader("Time against memory")
    live_chart(tradeoff_figure(rows, projector=projector), key="cp_tradeoff")
    st.caption("Lower is less bubble, left is less memory. " + " ".join(tradeoff_sentences(rows)))


compare()

"""A lesson step's real runs: run on the button in a child process, kept per visitor and step, a failure named
until a run succeeds; then each run's numbers in one table and its measured timeline with its idle time by
cause. ``page`` prefixes the session keys (the Lessons page's)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.charts import run_figure
from app.charts.attribution import attribution_figure
from app.elements.live_chart import live_chart
from app.frame.clicker import RUN_REAL
from app.frame.safe_text import plain
from app.lecture.controls import chart_with_lecture
from app.server import real_run_jobs as server_runs  # looked up per call, so a test can stand in for it
from app.views.lessons.course import Step
from engine.runtime.result import measured_stage_costs


def real_runs(step: Step, real_key, page: str, *, button_at=None) -> dict | None:
    """The step's real runs: run on the button (drawn in ``button_at`` when given, e.g. beside the step's title
    on a projector), kept per visitor and step. After a failure the button says Retry, and the failure stays named
    until a run succeeds (meanwhile the step draws its simulated stand-in)."""
    results = st.session_state.setdefault(f"{page}_real", {}).get(real_key)
    failed: dict = st.session_state.setdefault(f"{page}_real_failed", {})
    if not step.real:
        return results
    label = "Retry" if real_key in failed else (RUN_REAL if results is None else "Run again")
    if (button_at if button_at is not None else st).button(
        label,
        key=f"{page}_run",
        type="primary",
        help="Measure the configurations this step describes on real tensors (a few seconds each).",
    ):
        bar = st.progress(0.0, text="Starting (a fresh process imports PyTorch: a few seconds)…")
        waiting = st.empty()
        fresh = {}
        try:
            for position, (name, config) in enumerate(step.real.items()):

                def progress(done, total, note, position=position, name=name):
                    waiting.empty()
                    bar.progress(
                        min((position + done / max(total, 1)) / len(step.real), 1.0),
                        text=f"{name}: {done:,} / {total:,} actions · {note}",
                    )

                fresh[name] = server_runs.run_one(config, progress=progress, waiting=waiting.info)
            st.session_state[f"{page}_real"][real_key] = results = fresh
            failed.pop(real_key, None)
        except (ValueError, RuntimeError, TimeoutError) as error:
            failed[real_key] = str(error)
            st.rerun()  # drawn again: the button now says Retry, the failure named above the stand-in
        bar.empty()
        waiting.empty()
    if real_key in failed:
        st.error(
            f"The run failed: {plain(failed[real_key])}. Press **Retry** to run it again"
            + (" — meanwhile the simulated stand-in below shows the same schedule." if step.stand_in else ".")
        )
    return results


def real_results(results: dict, projector: bool, page: str, *, slide: bool, words, ask) -> None:
    """The step's real runs' results: a slide of the first measured chart with the step's words beside it
    (``slide``), or the table and the charts after the step."""
    if slide:
        measured_slide(results, page, words=words, ask=ask)
    else:
        show_real_results(results, projector, page)


def measured_slide(results: dict, page: str, *, words, ask) -> None:
    """A projected step whose real runs have run in place of its stand-in: the first run's measured chart, the
    step's question and words beside it, the table and the other charts under it."""
    first = next(iter(results))
    with st.container(key=f"{page}_measured"):
        chart_with_lecture(
            lambda narrow: None,
            lambda lectured: live_chart(run_figure(results[first], projector=True), key=f"{page}_real_{first}"),
            lambda **_layout: show_real_results(results, True, page, drawn=first),
            stage=f"{page}_real",
            projector=True,
            words=words,
            ask=ask,
        )


def show_real_results(results: dict, projector: bool, page: str, *, drawn: str = "") -> None:
    """The runs' numbers in one table, then each run's measured timeline and its idle time by cause (less the
    measured chart of the run ``drawn`` already, on a slide)."""
    rows = []
    for name, result in results.items():
        summary = result.summary()
        stage_ms = [
            round(row["F"] + row["B"] + row["I"] + row["W"], 2)
            for row in measured_stage_costs(result.schedule, result.measured.frame["compute_ms"].to_numpy())
        ]
        rows.append(
            {
                "run": name,
                "measured step (ms)": round(summary["makespan"], 2),
                "predicted (ms)": round(summary["predicted_makespan"], 2),
                "gradients match": "yes" if summary["gradients_match"] else "no",
                "peak memory (KiB)": round(max(summary["peak_memory_bytes"]) / 1024),
                "F + B per stage (ms)": ", ".join(map(str, stage_ms)),
            }
        )
    st.table(pd.DataFrame(rows).set_index("run"))
    for position, (name, result) in enumerate(results.items()):
        with st.expander(f"Measured timeline: {name}", expanded=position == 0):
            if name != drawn:
                live_chart(run_figure(result, projector=projector), key=f"{page}_real_{name}")
            live_chart(
                attribution_figure(result.idle_attribution(), time_unit="ms", projector=projector),
                key=f"{page}_real_{name}_causes",
            )

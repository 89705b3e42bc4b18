"""Lessons: guided steps from one idle GPU to zero bubble, each with a live configuration, questions whose
answers the engine computes, and real runs on demand. Deep links: /lessons?lesson=2&step=3."""

import pandas as pd
import streamlit as st

from app import state
from app.charts import run_figure, timeline_figure
from app.charts.player import player
from app.codec import plain, shown
from app.controls import projector_query, projector_toggle
from app.explain import chart_summary, lecture_controls, legend_notes, metric_cards
from app.lessons import Lesson, Step, check_answer, load_lessons, render, simulated
from app.navigation import link_to
from app.real_runs import run_one
from engine.runtime.result import measured_stage_costs

PAGE = "ls"
LESSON, STEP = f"{PAGE}_lesson", f"{PAGE}_step"
LESSON_KEYS = ("lesson", "step")


@st.cache_resource(show_spinner=False)
def lessons() -> dict[int, Lesson]:
    """The lesson files, read once per server (they are data shipped with the app), by number."""
    return {lesson.number: lesson for lesson in load_lessons()}


def go(number: int, step_index: int) -> None:
    """The Previous/Next buttons' callback: it runs before the rerun, when the lesson picker may still be set."""
    st.session_state[LESSON], st.session_state[STEP] = number, step_index


def start_of_lesson() -> None:
    """Choosing another lesson in the sidebar starts it at its first step."""
    st.session_state[STEP] = 0


def bind(by_number: dict[int, Lesson]) -> tuple[Lesson, int, bool]:
    """The address bar (when the visitor opened a link) and the sidebar → the lesson and step shown."""
    link = state.opened_link(PAGE, LESSON_KEYS + (state.PROJECTOR_KEY,))
    if link and set(link) & set(LESSON_KEYS):  # a deep link: /lessons?lesson=2&step=3
        try:
            number = int(link.get("lesson", 1))
            index = int(link.get("step", 1)) - 1
            if number not in by_number or not 0 <= index < len(by_number[number].steps):
                raise ValueError
        except ValueError:
            st.warning(
                f"The link asks for lesson {shown(link.get('lesson'))}, step {shown(link.get('step', 1))}, which "
                f"does not exist; showing the first lesson."
            )
            number, index = 1, 0
        state.seed({LESSON: number, STEP: index})
    state.restore({LESSON: 1, STEP: 0})
    projector = projector_toggle(link)
    st.sidebar.radio(
        "Lessons",
        list(by_number),
        key=LESSON,
        format_func=lambda n: f"{n}. {by_number[n].title}",
        on_change=start_of_lesson,
    )
    state.remember([LESSON, STEP])
    lesson = by_number[st.session_state[LESSON]]
    index = min(st.session_state[STEP], len(lesson.steps) - 1)
    state.write_url(PAGE, {"lesson": str(lesson.number), "step": str(index + 1)} | projector_query(projector))
    return lesson, index, projector


def progress_in_sidebar(by_number: dict[int, Lesson], lesson: Lesson, visited: set) -> None:
    seen = sum((lesson.id, s.id) in visited for s in lesson.steps)
    st.sidebar.progress(seen / len(lesson.steps), text=f"This lesson: {seen} of {len(lesson.steps)} steps seen")
    done = [str(n) for n, one in by_number.items() if all((one.id, s.id) in visited for s in one.steps)]
    st.sidebar.caption(
        f"Lessons finished: {', '.join(done)}" if done else "Your progress is kept while this tab is open."
    )


def real_runs(step: Step, real_key) -> dict | None:
    """The step's real runs: run on the button, kept per visitor and step."""
    results = st.session_state.setdefault(f"{PAGE}_real", {}).get(real_key)
    if not step.real:
        return results
    label = "Run it for real" if results is None else "Run again"
    if st.button(
        label,
        key=f"{PAGE}_run",
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

                fresh[name] = run_one(config, progress=progress, waiting=waiting.info)
            st.session_state[f"{PAGE}_real"][real_key] = results = fresh
        except (ValueError, RuntimeError, TimeoutError) as error:
            st.error(f"The run failed: {plain(error)}")
        bar.empty()
        waiting.empty()
    return results


def show_real_results(results: dict, projector: bool) -> None:
    rows = []
    for name, result in results.items():
        summary = result.summary()
        stage_ms = [
            round(f + b + i + w, 2)
            for f, b, i, w in measured_stage_costs(result.schedule, result.measured.frame["compute_ms"].to_numpy())
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
            st.plotly_chart(run_figure(result, projector=projector), width="stretch", key=f"{PAGE}_real_{name}")


def question(lesson: Lesson, step: Step, real_key, results: dict | None) -> None:
    asked = step.question
    if asked is None:
        return
    st.markdown(f"**Question.** {asked.prompt}")
    answer_key = f"{PAGE}_answer_{lesson.id}_{step.id}"
    if asked.kind == "choice":
        labels = [label for label, _ in asked.options] + ([asked.tie] if asked.tie else [])
        given = st.radio("Your answer", labels, key=answer_key, index=None)
    else:
        given = st.number_input(
            "Your answer" + (" (%)" if asked.percent else ""), key=answer_key, value=None, step=0.1, format="%.2f"
        )
    outcome = st.session_state.setdefault(f"{PAGE}_outcomes", {})
    if st.button("Check", key=f"{PAGE}_check_{lesson.id}_{step.id}", disabled=given is None):
        outcome[real_key] = check_answer(asked, step, given)
    if real_key in outcome:
        right, value = outcome[real_key]
        explanation = render(asked.explanation, step, results)
        if right:
            st.success(f"Right: the engine says {value}. {explanation}")
        else:
            st.error(f"Not quite. Hint: {asked.hint}")
            if st.toggle("Show the answer", key=f"{PAGE}_reveal_{lesson.id}_{step.id}"):
                st.info(f"The engine says {value}. {explanation}")


def step_buttons(by_number: dict[int, Lesson], lesson: Lesson, index: int) -> None:
    before = (
        (lesson.number, index - 1)
        if index > 0
        else ((lesson.number - 1, len(by_number[lesson.number - 1].steps) - 1) if lesson.number > 1 else None)
    )
    after = (
        (lesson.number, index + 1)
        if index < len(lesson.steps) - 1
        else ((lesson.number + 1, 0) if lesson.number < max(by_number) else None)
    )
    previous, _, following = st.columns([1, 4, 1])
    previous.button(
        "◀ Previous step", key=f"{PAGE}_previous", disabled=before is None, on_click=go, args=before or (1, 0)
    )
    following.button(
        "Next step ▶", key=f"{PAGE}_next", type="primary", disabled=after is None, on_click=go, args=after or (1, 0)
    )


def lessons_page() -> None:
    by_number = lessons()
    visited: set = st.session_state.setdefault(f"{PAGE}_visited", set())
    lesson, index, projector = bind(by_number)
    step = lesson.steps[index]
    visited.add((lesson.id, step.id))
    progress_in_sidebar(by_number, lesson, visited)

    st.title(f"Lesson {lesson.number} · {lesson.title}")
    st.caption(lesson.summary)
    st.subheader(f"Step {index + 1} of {len(lesson.steps)}: {step.title}")
    real_key = (lesson.id, step.id)
    results = real_runs(step, real_key)
    st.markdown(render(step.text, step, results))
    if step.config is not None:
        schedule, timeline = simulated(step.config)
        costs = step.config.costs()
        metric_cards(timeline, projector=projector)
        cursor = lecture_controls(PAGE, schedule, timeline, costs.comm, real_key, start_on=step.mode == "steps")
        figure = timeline_figure(timeline, title=step.config.title(), projector=projector, cursor_at=cursor)
        title = step.config.title()
        player(f"{PAGE}_chart", figure, name=title, summary=chart_summary(timeline, title))
        st.plotly_chart(figure, width="stretch", key=f"{PAGE}_chart")
        legend_notes(timeline, costs, schedule.num_chunks)
        link_to("pg", step.config.to_query(), "Open this in the Playground", icon=":material/science:")
    if results:
        show_real_results(results, projector)
    question(lesson, step, real_key, results)
    if step.try_this:
        st.markdown("**Try this**\n" + "\n".join(f"- {item}" for item in step.try_this))
    step_buttons(by_number, lesson, index)


lessons_page()

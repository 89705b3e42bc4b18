"""Lessons: guided steps from one idle GPU to zero bubble, each with a live configuration, questions whose
answers the engine computes, and real runs on demand. Deep links: /lessons?lesson=2&step=3."""

from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from app import state
from app.charts import run_figure, timeline_figure
from app.explain import lecture_controls, legend_notes, metric_cards
from app.lessons import check_answer, load_lessons, render, simulated
from app.real_runs import run_one
from app.widgets import projector_toggle
from engine.runtime.result import measured_stage_costs

PAGE = "ls"
LESSON, STEP = f"{PAGE}_lesson", f"{PAGE}_step"


@st.cache_resource(show_spinner=False)
def lessons():
    """The lesson files, read once per server (they are data shipped with the app)."""
    return load_lessons()


all_lessons = lessons()
by_number = {lesson.number: lesson for lesson in all_lessons}
visited: set = st.session_state.setdefault(f"{PAGE}_visited", set())

link = state.new_link(PAGE, ("lesson", "step"))
if link is not None:  # a deep link: /lessons?lesson=2&step=3 (bad values fall back to the first)
    try:
        number = int(link.get("lesson", 1))
        index = int(link.get("step", 1)) - 1
        if number not in by_number or not 0 <= index < len(by_number[number].steps):
            raise ValueError
    except ValueError:
        st.warning(
            f"The link asks for lesson {link.get('lesson')}, step {link.get('step', 1)}, which does not "
            f"exist; showing the first lesson."
        )
        number, index = 1, 0
    state.seed({LESSON: number, STEP: index})
state.restore([LESSON, STEP], {LESSON: 1, STEP: 0})
projector = projector_toggle()


def finished(number: int) -> bool:
    return all((by_number[number].id, step.id) in visited for step in by_number[number].steps)


def on_lesson_change() -> None:
    st.session_state[STEP] = 0


st.sidebar.radio(
    "Lessons",
    list(by_number),
    key=LESSON,
    format_func=lambda n: f"{n}. {by_number[n].title}",
    on_change=on_lesson_change,
)
state.remember([LESSON, STEP])
lesson = by_number[st.session_state[LESSON]]
index = min(st.session_state[STEP], len(lesson.steps) - 1)
step = lesson.steps[index]
visited.add((lesson.id, step.id))
state.write_link(PAGE, {"lesson": str(lesson.number), "step": str(index + 1)})
seen = sum((lesson.id, s.id) in visited for s in lesson.steps)
st.sidebar.progress(seen / len(lesson.steps), text=f"This lesson: {seen} of {len(lesson.steps)} steps seen")
done = [str(n) for n in by_number if finished(n)]
st.sidebar.caption(f"Lessons finished: {', '.join(done)}" if done else "Your progress is kept while this tab is open.")

st.title(f"Lesson {lesson.number} · {lesson.title}")
st.caption(lesson.summary)
st.subheader(f"Step {index + 1} of {len(lesson.steps)}: {step.title}")

real_key = (lesson.id, step.id)
real_results = st.session_state.setdefault(f"{PAGE}_real", {}).get(real_key)
if step.real:
    if st.button(
        "Run it for real" if real_results is None else "Run again",
        key=f"{PAGE}_run",
        type="primary",
        help="Measure the configurations this step describes on real tensors (a few seconds each).",
    ):
        bar = st.progress(0.0, text="Starting (a fresh process imports PyTorch: a few seconds)…")
        waiting = st.empty()
        results = {}
        try:
            for position, (name, config) in enumerate(step.real.items()):

                def progress(done, total, note, position=position, name=name):
                    waiting.empty()
                    bar.progress(
                        min((position + done / max(total, 1)) / len(step.real), 1.0),
                        text=f"{name}: {done:,} / {total:,} actions · {note}",
                    )

                results[name] = run_one(config, progress=progress, waiting=waiting.info)
            st.session_state[f"{PAGE}_real"][real_key] = real_results = results
        except (ValueError, RuntimeError, TimeoutError) as error:
            st.error(f"The run failed: {error}")
        bar.empty()
        waiting.empty()

st.markdown(render(step.text, step, real_results))

if step.config is not None:
    schedule, timeline = simulated(step.config)
    costs = step.config.costs()
    metric_cards(timeline, projector=projector)
    cursor = lecture_controls(PAGE, schedule, timeline, costs.comm, real_key, start_on=step.mode == "steps")
    st.plotly_chart(
        timeline_figure(timeline, title=step.config.title(), projector=projector, cursor_at=cursor),
        width="stretch",
        key=f"{PAGE}_chart",
    )
    legend_notes(timeline, costs, schedule.num_chunks)
    st.markdown(f"[Open this in the Playground ↗](/?{urlencode(step.config.to_query())})")

if real_results:
    rows = []
    for name, result in real_results.items():
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
    st.dataframe(pd.DataFrame(rows).set_index("run"), width="stretch")
    for position, (name, result) in enumerate(real_results.items()):
        with st.expander(f"Measured timeline: {name}", expanded=position == 0):
            st.plotly_chart(run_figure(result, projector=projector), width="stretch", key=f"{PAGE}_real_{name}")

question = step.question
if question is not None:
    st.markdown(f"**Question.** {question.prompt}")
    answer_key = f"{PAGE}_answer_{lesson.id}_{step.id}"
    if question.kind == "choice":
        labels = [label for label, _ in question.options] + ([question.tie] if question.tie else [])
        given = st.radio("Your answer", labels, key=answer_key, index=None)
    else:
        given = st.number_input(
            "Your answer" + (" (%)" if question.percent else ""), key=answer_key, value=None, step=0.1, format="%.2f"
        )
    outcome = st.session_state.setdefault(f"{PAGE}_outcomes", {})
    if st.button("Check", key=f"{PAGE}_check_{lesson.id}_{step.id}", disabled=given is None):
        outcome[real_key] = check_answer(question, step, given)
    if real_key in outcome:
        right, value = outcome[real_key]
        explanation = render(question.explanation, step, real_results)
        if right:
            st.success(f"Right: the engine says {value}. {explanation}")
        else:
            st.error(f"Not quite. Hint: {question.hint}")
            if st.toggle("Show the answer", key=f"{PAGE}_reveal_{lesson.id}_{step.id}"):
                st.info(f"The engine says {value}. {explanation}")

if step.try_this:
    st.markdown("**Try this**\n" + "\n".join(f"- {item}" for item in step.try_this))


def go(number: int, step_index: int) -> None:
    """Button callbacks run before the rerun, when the lesson picker's value may still be set."""
    st.session_state[LESSON], st.session_state[STEP] = number, step_index


previous, _, following = st.columns([1, 4, 1])
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
previous.button("◀ Previous step", key=f"{PAGE}_previous", disabled=before is None, on_click=go, args=before or (1, 0))
following.button(
    "Next step ▶", key=f"{PAGE}_next", type="primary", disabled=after is None, on_click=go, args=after or (1, 0)
)

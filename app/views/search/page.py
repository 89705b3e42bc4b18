"""Search: the shortest step under a memory budget, found rather than hand-made (``engine.search``) — next to
every hand-made family that fits the same budget, and the frontier of step time against memory."""

import threading
import time

import streamlit as st

from app.charts import compare_figure
from app.charts.player import player
from app.charts.search import frontier_figure
from app.elements.live_chart import live_chart
from app.frame import state
from app.frame.engine_calls import simulated
from app.frame.lab_settings import LabSettings
from app.frame.projector import projector_query, projector_toggle
from app.frame.safe_text import plain
from app.frame.sidebar import page_heading, read_back, seed_from_link, warn_about
from app.frame.timeline_panels import chart_summary
from app.frame.widgets import draw
from app.server.admission import SEARCHES, Refused
from app.views.real_run.settings import RealRunSettings
from app.views.search.settings import SEARCH_KEYS, SearchSettings
from engine import FAMILIES, Costs
from engine.runtime.errors import RunFailed
from engine.search import OPTIMAL, family_points
from engine.search.isolated import frontier_isolated, search_isolated, start_fork_server
from engine.search.problem import OBJECTIVES

PAGE = "sr"
RESULTS = f"{PAGE}_results"
BUSY = f"{PAGE}_busy"
# at most this per budget when drawing the frontier, and the time limit shared out between the budgets
FRONTIER_SECONDS = 1.0
PROJECTED_SCHEDULES = 3  # a projected chart stacks this many at most (as Compare does, in 330 px); the table all
KEPT_RESULTS = 4  # searches a visitor's session keeps (by settings), the oldest dropped first


def bind() -> tuple[SearchSettings, bool, bool]:
    """The sidebar → the settings, the projector switch, and whether a link with search settings was opened."""
    link = state.opened_link(PAGE, SEARCH_KEYS + (state.PROJECTOR_KEY,))
    projector = projector_toggle(link)
    problems, defaults = seed_from_link(SearchSettings, link)
    for name, _ in SearchSettings.options():
        ranks = st.session_state[SearchSettings.widget_key("num_ranks")]
        more = {
            "help": f"1F1B holds p = {ranks} on its busiest rank, ZB-H2 2p − 1 = {2 * ranks - 1}; above 2p = "
            f"{2 * ranks} nothing is constrained. Too small a budget is refused with the arithmetic."
        }
        draw(SearchSettings, name, **(more if name == "memory_budget" else {}))
    settings, typed = read_back(SearchSettings, defaults)
    state.write_url(PAGE, settings.to_query() | projector_query(projector))
    warn_about(problems + typed)
    return settings, projector, bool(link and set(link) & set(SEARCH_KEYS))


@st.cache_resource(show_spinner=False)
def fork_server_starting() -> threading.Thread:
    """Once per server, when the Search page is first opened: the searches' fork server starts in the
    background (``engine.search.isolated``), so the first search does not wait for it."""
    starting = threading.Thread(target=start_fork_server, daemon=True, name="pplab-fork-server")
    starting.start()
    return starting


@st.cache_resource(max_entries=16, show_spinner=False)
def hand_made(num_ranks: int, num_microbatches: int, costs: Costs):
    """Every family simulated at these sizes (seconds at 32 × 256): once per sizes and costs, not per rerun."""
    return family_points(num_ranks, num_microbatches, costs)


def run_search(settings: SearchSettings):
    """One search at a time per visitor and per server (``app.server.admission``: the others wait with their place
    shown); the result kept in this visitor's session, the last few only."""
    if st.session_state.get(BUSY):
        st.warning("Your previous search is still running; this page answers when it ends.")
        return None
    st.session_state[BUSY] = True
    notice = st.empty()
    try:
        with SEARCHES.admitted(f"{settings.num_ranks} × {settings.num_microbatches}", tell=notice.info) as waited:
            notice.empty()
            with st.spinner(f"Searching (at most {settings.time_limit_s:g} s)…"):
                began = time.perf_counter()
                result = search_isolated(settings.to_problem(), every_space=settings.every_space)
                took = time.perf_counter() - began
    except Refused as refusal:
        notice.empty()
        st.warning(f"The search did not start: {refusal}.")
        return None
    except (ValueError, RunFailed) as failure:
        st.warning(f"The search gave no result: {failure}.")
        return None
    finally:
        st.session_state[BUSY] = False
    if waited >= 1:
        st.caption(
            f"Waited {waited:.0f} s for another visitor's search; this one then took {took:.1f} s of its "
            f"{settings.time_limit_s:g} s: {result.wall_time_s:.1f} s searching, the rest starting its process "
            "on this busy server (engine.search.isolated)."
        )
    kept = st.session_state.setdefault(RESULTS, {})
    kept[settings] = result
    while len(kept) > KEPT_RESULTS:  # the oldest goes: a visitor's session holds a few searches, not all
        kept.pop(next(iter(kept)))
    return result


def objective_of(settings: SearchSettings):
    """What the search minimises, read from a timeline: the period or the makespan."""
    return (lambda t: t.period) if settings.objective == "period" else (lambda t: t.makespan)


def within_budget(settings: SearchSettings) -> list:
    """The hand-made families that hold at most the budget at these sizes, best first by the search's objective."""
    costs = settings.engine_costs()
    fits = [
        point
        for point in hand_made(settings.num_ranks, settings.num_microbatches, costs)
        if point.peak_memory <= settings.memory_budget + 1e-9 and point.timeline is not None
    ]
    score = objective_of(settings)
    return sorted(fits, key=lambda point: score(point.timeline))


def none_fits(settings: SearchSettings) -> None:
    st.caption(f"No hand-made family holds at most {settings.memory_budget:g} micro-batches on these sizes.")


def gantt(timelines: dict, name: str, projector: bool) -> None:
    """Schedules stacked on one time axis, under one player; one chart element, before and after a search."""
    figure = compare_figure(timelines, projector=projector)
    player("sr_gantt", figure, name=name, summary=" ".join(chart_summary(t, n) for n, t in timelines.items()))
    live_chart(figure, key="sr_gantt")  # redrawn in place on a change (charts/live_chart.py)


def what_to_beat(settings: SearchSettings, projector: bool) -> None:
    """Before a search: the hand-made families within the budget, on one time axis — what the search must beat
    (a projected page has its chart on the first screen before anyone presses Search)."""
    fits = within_budget(settings)
    if not fits:
        none_fits(settings)
        return
    shown = fits[:PROJECTED_SCHEDULES] if projector else fits
    gantt({point.title: point.timeline for point in shown}, "The hand-made families within the budget", projector)
    best = fits[0]
    words = "period" if settings.objective == "period" else "makespan"
    st.caption(
        f"What the search must beat: the {len(fits)} hand-made families that hold at most "
        f"{settings.memory_budget:g} micro-batches here"
        + (f" (the best {len(shown)} drawn)" if len(shown) < len(fits) else "")
        + f"; the best, {best.title}, has a {words} of {objective_of(settings)(best.timeline):.4g}."
    )


def step_columns(timeline) -> dict[str, str]:
    """Both objectives and the three bubble conventions of one step, for the comparison table."""
    return {
        "makespan": f"{timeline.makespan:.4g}",
        "bubble (idle / (p × makespan))": f"{timeline.bubble_fraction:.1%}",
        "period": f"{timeline.period:.4g}",
        "bubble rate (Zero Bubble)": f"{timeline.period_bubble_rate:.1%}",
    }


def space_words(placement: str, chunks: int) -> str:
    """A schedule's placement and chunks per rank, short, for the comparison table."""
    if placement == "v":
        return "V, 2 chunks"
    return "loop, 1 chunk" if chunks == 1 else f"loop, {chunks} chunks"


def show_result(settings: SearchSettings, result, projector: bool) -> None:
    searched = result.problem  # with auto chunks, the space of the best schedule
    status = result.claim[:1].upper() + result.claim[1:]
    cards = st.columns(4)
    if settings.objective == "period":
        cards[0].metric("Period", f"{result.period:.4g}", help=f"the longest rank span: {OBJECTIVES['period']}")
        cards[1].metric(
            "Bubble rate (Zero Bubble)",
            f"{result.period_bubble_rate:.1%}",
            help="(period − busiest rank's work) / period, the Zero Bubble paper's bubble rate",
        )
    else:
        cards[0].metric("Makespan", f"{result.makespan:.4g}", help="first start to last end of the found step")
        cards[1].metric("Bubble fraction", f"{result.bubble_fraction:.1%}")
    cards[2].metric("Peak memory", f"{max(result.peak_memory):.3g}", help=f"budget {settings.memory_budget:g}")
    cards[3].metric("Status", "optimal" if result.status == OPTIMAL else f"gap {result.gap:.1%}", help=status)
    st.markdown(f"**{status}.**")
    st.caption(f"{result.method}: {result.detail}; {result.wall_time_s:.2f} s.")
    fits = within_budget(settings)
    rows = [{"schedule": "searched", "placement": space_words(searched.placement, searched.num_chunks),
             **step_columns(result.timeline), "peak memory": f"{max(result.peak_memory):.3g}",
             "against the bound": "optimal" if result.status == OPTIMAL else f"within {result.gap:.1%}"}]  # fmt: skip
    score = objective_of(settings)
    for point in fits:
        same_space = (point.placement, point.num_chunks) == (searched.placement, searched.num_chunks)
        rows.append(
            {
                "schedule": point.title,
                "placement": space_words(point.placement, point.num_chunks),
                **step_columns(point.timeline),
                "peak memory": f"{point.peak_memory:.3g}",
                # the bound holds in the searched schedule's space; a family in another is not held to it
                "against the bound": f"{score(point.timeline) / result.lower_bound - 1:+.1%}"
                if same_space
                else "another space",
            }
        )
    st.table(rows)
    if not fits:
        none_fits(settings)
    drawn = fits[: PROJECTED_SCHEDULES - 1] if projector else fits  # a projector's chart: the best, the table all
    timelines = {"Searched schedule": result.timeline} | {point.title: point.timeline for point in drawn}
    gantt(timelines, "The searched schedule and the families that fit, on one time axis", projector)
    buttons = st.columns(2)
    buttons[0].download_button(
        "Download CSV (PyTorch format)", result.schedule.to_csv, "searched.csv", "text/csv", key=f"{PAGE}_csv"
    )
    if buttons[1].button("Run it for real ⚙️", key=f"{PAGE}_run", help="Open the Real run page with this schedule."):
        RealRunSettings.send_schedule(st.session_state, result.schedule.to_csv())
        st.switch_page("views/real_run/page.py", query_params=state.page_query("rr", RealRunSettings().to_query()))


def show_frontier(settings: SearchSettings, projector: bool) -> None:
    st.subheader("Step time against memory")
    budgets = settings.frontier_budgets()
    seconds = min(FRONTIER_SECONDS, settings.time_limit_s / len(budgets))
    st.caption(
        f"For {len(budgets)} budgets from the least any schedule needs to 2p ({', '.join(f'{b:g}' for b in budgets)}), "
        f"the best step found in at most {seconds:.2g} s each (the time limit shared out, so large sizes show the "
        "greedy's answer), with every hand-made family as a point: the trade-off the Zero Bubble and "
        "controllable-memory papers are about."
    )
    if st.button("Draw the frontier", key=f"{PAGE}_frontier"):
        if st.session_state.get(BUSY):
            st.warning("A search of yours is still running.")
            return
        st.session_state[BUSY] = True
        notice = st.empty()
        try:
            with SEARCHES.admitted("frontier", tell=notice.info), st.spinner("Searching each budget…"):
                notice.empty()
                found = frontier_isolated(
                    settings.num_ranks,
                    settings.num_microbatches,
                    settings.engine_costs(),
                    settings.placement,
                    budgets,
                    time_limit_per_budget_s=seconds,
                    objective=settings.objective,
                    chunks=settings.loop_chunks,  # auto: the frontier of the page's placement, one chunk a rank
                )
            st.session_state[f"{PAGE}_frontier_for"] = (settings, found)
        except Refused as refusal:
            notice.empty()
            st.warning(f"The frontier was not drawn: {refusal}.")
        except (ValueError, RunFailed) as failure:
            st.warning(f"The frontier was not drawn: {failure}.")
        finally:
            st.session_state[BUSY] = False
    kept = st.session_state.get(f"{PAGE}_frontier_for")
    if kept and kept[0] == settings:
        live_chart(frontier_figure(kept[1], projector=projector), key=f"{PAGE}_frontier_chart")


def search_page() -> None:
    fork_server_starting()
    page_heading(
        "Search for a schedule",
        "Every other page draws hand-made schedules. Here the lab searches for the order of each rank's work "
        "that gives the shortest step without any rank holding more activations than the budget: an exact "
        "constraint model (CP-SAT) proves the optimum for small sizes, a Zero-Bubble-style greedy answers large "
        "ones, and a lower bound says how far from the optimum the answer can be.",
    )
    settings, projector, linked = bind()
    first_screen = st.container() if projector else None  # a projected page's chart comes first (filled below)
    _, one_f_one_b = simulated(
        LabSettings(family="1f1b", num_ranks=settings.num_ranks, num_microbatches=settings.num_microbatches)
    )
    st.caption(
        f"For scale: {FAMILIES['1f1b'].title} holds {max(one_f_one_b.peak_memory_per_rank()):g} micro-batches "
        f"on its busiest rank at these sizes; the budget is in the same unit."
    )
    try:
        settings.to_problem()  # refuse, with the arithmetic, before anything runs
    except ValueError as error:
        st.error(f"This search cannot run: {plain(error)}")
        return
    result = st.session_state.get(RESULTS, {}).get(settings)
    if linked and result is None:  # a shared link shows its result at once, as the sender saw it
        result = run_search(settings)
    if st.button("Search" if result is None else "Search again", type="primary", key=f"{PAGE}_go"):
        result = run_search(settings) or result
    if result is None:
        st.info("Set the sizes, costs and budget, then press Search.")
        with first_screen or st.container():
            what_to_beat(settings, projector)
    else:
        show_result(settings, result, projector)
    show_frontier(settings, projector)


search_page()

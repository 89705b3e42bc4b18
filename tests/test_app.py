"""The Streamlit pages through AppTest: each shows the engine's numbers, keeps its URL in step, reports bad
input as an error element (never an exception), and keeps the visitor's settings across pages."""

import base64
import json
import re
from pathlib import Path

import numpy as np
import pytest
from drawn import drawn_figures
from streamlit.testing.v1 import AppTest

from app.frame.lab_settings import LabSettings
from app.views.compare.settings import CompareSettings
from engine import FAMILIES, Costs, build_schedule, simulate

pytestmark = pytest.mark.slow  # AppTest runs the whole app script per test

APP = str(Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py")


def figure(at, index=0) -> dict:
    return drawn_figures(at)[index]


def values(array) -> list:
    """Plotly sends numeric arrays as {"dtype": "i8", "bdata": base64}; lists stay lists."""
    if isinstance(array, dict) and "bdata" in array:
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=np.dtype(array["dtype"])).tolist()
    return list(array)


def errors(at) -> list[str]:
    """The page's error messages as the visitor reads them (the Markdown escapes of app/codec.plain removed)."""
    return [re.sub(r"\\(.)", r"\1", e.value).replace("\u200b", "") for e in at.error]


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def go_to(at: AppTest, page: str) -> AppTest:
    """Switch page as the browser does: Streamlit's navigation clears the address bar's query."""
    at.query_params.clear()
    at.switch_page(page)
    return at.run()


def open_app(query: dict | None = None, page: str | None = None) -> AppTest:
    """A visitor opening a link: ``/?query`` or, with ``page``, ``/<page>?query`` (AppTest starts on the default
    page, so the link is followed from there, as a link to another page is)."""
    at = AppTest.from_file(APP, default_timeout=60)
    if query and not page:
        at.query_params.update(query)
    at.run()
    if page:
        at.query_params.clear()
        at.query_params.update(query or {})
        at.switch_page(page)
        at.run()
    assert not at.exception, at.exception
    return at


def expected_cards(timeline) -> dict[str, str]:
    summary = timeline.summary()
    return {
        "Makespan": f"{summary['makespan']:.4g}",
        "Bubble fraction": f"{summary['bubble_fraction']:.1%}",
        "Bubble ratio": f"{summary['bubble_ratio']:.3f}",
        "Peak memory": f"{max(summary['peak_memory']):.3g}",
        "Transfers": f"{summary['transfers']:,}",
    }


# -- Playground --------------------------------------------------------------------------------------------
def test_playground_default_shows_the_engines_numbers_and_writes_its_url():
    at = open_app()
    expected = simulate(build_schedule("1f1b", 4, 8), Costs.of({"F": 1, "B": 2}))
    shown = metrics(at)
    assert {k: shown[k] for k in expected_cards(expected)} == expected_cards(expected)
    assert at.query_params == {
        "schedule": "1f1b",
        "ranks": "4",
        "microbatches": "8",
        "chunks": "2",
        "costs": "F=1,B=2",
        "comm": "0",
        "recompute": "0",
    }
    drawn = figure(at)
    bars = sum(len(values(t["y"])) for t in drawn["data"] if t["type"] == "bar" and t["name"][0] in "FBIW")
    assert bars == len(expected.frame)
    assert any(t["name"] == "idle (the bubble)" for t in drawn["data"])


def test_a_link_sets_the_page_and_round_trips():
    at = open_app({"schedule": "gpipe", "ranks": "4", "microbatches": "6"})
    assert metrics(at)["Bubble fraction"] == "33.3%"
    settings, problems = LabSettings.from_query(at.query_params)
    assert problems == [] and settings.family == "gpipe" and settings.num_microbatches == 6
    assert settings.to_query() == at.query_params
    why = " ".join(m.value for m in at.markdown)
    assert "(4 − 1) / (6 + 4 − 1) = 3/9 = **33.3%**" in why and "the simulation gives **33.3%**" in why


@pytest.mark.parametrize(
    "query, problem",
    [
        ({"ranks": "99"}, "ranks=`99`: expected a whole number from 1 to 32; using 4"),
        ({"schedule": "nope"}, "schedule=`nope`: expected one of gpipe, 1f1b"),
        ({"costs": "F=banana"}, "costs=`F=banana`: cannot read cost"),
        ({"recompute": "maybe"}, "recompute=`maybe`: expected 0 or 1"),
    ],
)
def test_a_bad_link_warns_and_uses_defaults(query, problem):
    at = open_app(query)
    assert any(problem in w.value for w in at.warning)
    assert metrics(at)["Makespan"] == f"{simulate(build_schedule('1f1b', 4, 8)).makespan:.4g}"


def test_widgets_recompute_and_idle_inside_span_shows_when_it_differs():
    at = open_app()
    at.selectbox(key="pg_family").set_value("zb-h2")
    at.slider(key="pg_num_ranks").set_value(6)
    at.slider(key="pg_num_microbatches").set_value(12)
    at.run()
    assert not at.exception
    timeline = simulate(build_schedule("zb-h2", 6, 12), Costs.of({"F": 1, "I": 1, "W": 1}))
    shown = metrics(at)
    assert {k: shown[k] for k in expected_cards(timeline)} == expected_cards(timeline)
    span = sum(timeline.span_idle_per_rank()) / (6 * timeline.makespan)
    assert shown["Idle inside span"] == f"{span:.1%}" != shown["Bubble fraction"]
    assert at.query_params["schedule"] == "zb-h2" and at.query_params["costs"] == "F=1,I=1,W=1"


def test_over_the_bound_is_an_error_with_the_arithmetic_and_the_last_chart_stays():
    at = open_app({"schedule": "interleaved-1f1b", "ranks": "32", "microbatches": "256", "chunks": "2"})
    assert not at.error
    at.slider(key="pg_num_chunks").set_value(8)
    at.run()
    assert not at.exception
    assert any("32 ranks × 256 micro-batches × 8 chunk(s) = 65,536" in e and "16,384" in e for e in errors(at))
    assert drawn_figures(at) and "2 chunks per rank" in figure(at)["layout"]["title"]["text"].replace("<br>", " ")


def test_a_family_built_for_more_microbatches_says_so_in_a_notice_and_the_title():
    at = open_app({"schedule": "zb-v", "ranks": "4", "microbatches": "1"})
    assert any("built for 7 and runs the first 1" in i.value for i in at.info)
    assert "1 micro-batch (built for 7, 6 dropped)" in figure(at)["layout"]["title"]["text"].replace("<br>", " ")


def test_recomputation_states_its_memory_rule_and_draws_its_segment():
    at = open_app({"schedule": "1f1b", "recompute": "1"})
    at.slider(key="pg_recompute_memory_fraction").set_value(0.25)
    at.run()
    costs = Costs.of({"F": 1, "B": 2}, recompute=True, recompute_memory_fraction=0.25)
    assert (
        metrics(at)["Peak memory"] == f"{max(simulate(build_schedule('1f1b', 4, 8), costs).peak_memory_per_rank()):.3g}"
    )
    assert any("a forward keeps 25% of its activations" in c.value for c in at.caption)
    assert any(t["name"] == "re-run forward (recomputation)" for t in figure(at)["data"])


def test_a_shared_link_with_recomputation_reproduces_the_senders_peak_memory():
    sender = open_app({"schedule": "1f1b", "recompute": "1"})
    sender.slider(key="pg_recompute_memory_fraction").set_value(0.5)
    sender.run()
    link = dict(sender.query_params)
    assert link["keep"] == "0.5" and link["recompute"] == "1"
    receiver = open_app(link)
    assert metrics(receiver)["Peak memory"] == metrics(sender)["Peak memory"]
    costs = Costs.of({"F": 1, "B": 2}, recompute=True, recompute_memory_fraction=0.5)
    peak = max(simulate(build_schedule("1f1b", 4, 8), costs).peak_memory_per_rank())
    assert metrics(receiver)["Peak memory"] == f"{peak:.3g}" != metrics(open_app({"recompute": "1"}))["Peak memory"]


def test_transfers_that_share_a_link_come_from_the_link_and_show_their_lanes():
    """DualPipeV's overlapped pairs hand two products over one link at once: shared, the second waits."""
    at = open_app({"schedule": "dualpipev", "costs": "F=1,I=1,W=1,F&B=2.5", "comm": "0.5", "links": "shared"})
    split = {"F": 1, "I": 1, "W": 1, "F&B": 2.5}
    shared = simulate(build_schedule("dualpipev", 4, 8), Costs.of(split, comm=0.5, shared_links=True))
    delay = simulate(build_schedule("dualpipev", 4, 8), Costs.of(split, comm=0.5))
    assert metrics(at)["Makespan"] == f"{shared.makespan:.4g}" != f"{delay.makespan:.4g}"
    assert at.query_params["links"] == "shared"
    names = {t["name"] for t in figure(at)["data"]}
    assert {"transfer: send", "transfer: receive"} <= names


def test_every_link_carries_dualpipevs_overlapped_cost():
    at = open_app({"schedule": "dualpipev", "costs": "F=1,I=1,W=1"})
    assert at.query_params["costs"] == "F=1,I=1,W=1,F&B=3"  # no F&B given: F + B, written out
    at.number_input(key="pg_cost_F&B").set_value(2.5)
    at.run()
    assert at.query_params["costs"] == "F=1,I=1,W=1,F&B=2.5"


def test_every_chunk_has_its_own_shade():
    at = open_app({"schedule": "interleaved-1f1b", "chunks": "3"})
    forward = [t for t in figure(at)["data"] if t.get("legendgroup") == "F"]
    assert len({t["marker"]["color"] for t in forward}) == 3


def test_frames_move_shapes_only():
    drawn = figure(open_app())
    assert len(drawn["frames"]) > 20
    assert all(set(frame) <= {"name", "layout"} and set(frame["layout"]) == {"shapes"} for frame in drawn["frames"])
    assert not drawn["layout"].get("updatemenus") and not drawn["layout"].get("sliders")  # HTML controls instead
    assert drawn["layout"]["meta"]["start_frame"] == len(drawn["frames"]) - 1  # the whole step first
    last = drawn["frames"][-1]["layout"]["shapes"]
    assert last and not any(shape.get("visible", True) for shape in last)  # the end leaves no veil or outline


def lecture_deck(at) -> dict:
    """The events lecture mode steps through in the browser, as the page carries them (app/lecture/deck.py)."""
    body = next(element.proto.body for element in at.get("html") if 'class="pplab-lecture' in element.proto.body)
    return json.loads(re.search(r"payload = (\{.*\});", body).group(1))


def test_lecture_mode_steps_event_by_event_with_the_reason():
    at = open_app({"schedule": "gpipe", "ranks": "4", "microbatches": "3"})
    at.toggle(key="pg_lecture").set_value(True)
    at.run()
    deck = lecture_deck(at)
    timeline = simulate(build_schedule("gpipe", 4, 3), Costs.of({"F": 1, "B": 2}))
    starts = sorted(set(timeline.frame["start"][timeline.frame["end"] > timeline.frame["start"]]))
    assert deck["start"] == 0 and [event["time"] for event in deck["events"]] == starts  # every moment work starts
    count = len(starts)
    assert [event["headline"][0] for event in deck["events"]] == [f"Event {k} of {count}" for k in range(1, count + 1)]
    second = deck["events"][1]  # t = 1: rank 0 starts micro-batch 1, rank 1 micro-batch 0, ranks 2–3 wait
    assert second["headline"][1] == "t = 1: 2 start, 0 busy, 2 waiting"
    assert ["rank 0", "starts 0F1 (stage 0, forward, micro-batch 1)"] in second["story"]
    assert any(rank == "rank 3" and "waits for" in text for rank, text in second["story"])
    for event in deck["events"]:  # the cursor and the veil at the event's time
        cursor = next(shape for shape in event["shapes"] if shape["type"] == "line")
        veil = next(shape for shape in event["shapes"] if shape["type"] == "rect")
        assert cursor["x0"] == cursor["x1"] == veil["x0"] == event["time"] and veil["x1"] == timeline.makespan
    # the server draws the first event: the chart's cursor, the headline and the story
    shapes = figure(at)["layout"]["shapes"]
    assert any(s["type"] == "line" and s["x0"] == 0.0 for s in shapes)
    blocks = [element.proto.body for element in at.get("html")]
    story = next(body for body in blocks if 'class="pplab-story"' in body)
    controls = next(body for body in blocks if 'class="pplab-lecture"' in body)
    assert "<strong>rank 0</strong> starts 0F0" in story and f"<strong>Event 1 of {count}</strong>" in controls


def test_settings_survive_moving_between_pages():
    at = open_app()
    at.slider(key="pg_num_ranks").set_value(6)
    at.run()
    go_to(at, "views/compare/page.py")
    go_to(at, "views/playground/page.py")
    assert not at.exception and at.slider(key="pg_num_ranks").value == 6 and at.query_params["ranks"] == "6"


def test_dualpipev_draws_overlapped_pairs_as_half_bars():
    widths = {t.get("width") for t in figure(open_app({"schedule": "dualpipev"}))["data"] if t["type"] == "bar"}
    assert 0.4 in widths and 0.8 in widths


# -- Compare -----------------------------------------------------------------------------------------------
COMPARE = {"schedules": "gpipe,1f1b,zb-h1", "ranks": "4", "microbatches": "8"}
COMPARE_COSTS = Costs.of({"F": 1, "I": 1, "W": 1})  # the page's defaults; B = I + W


def test_compare_shows_every_schedule_on_one_axis_with_the_engines_numbers():
    at = open_app(COMPARE, "views/compare/page.py")
    table = at.table[0].value.T  # drawn one column per schedule
    assert list(table.index) == ["gpipe", "1f1b", "zb-h1"]
    for name in table.index:
        expected = simulate(build_schedule(name, 4, 8), COMPARE_COSTS)
        assert table.loc[name, "makespan"] == f"{expected.makespan:.4g}"
        assert table.loc[name, "bubble fraction"] == f"{expected.bubble_fraction:.1%}"
        assert table.loc[name, "transfers"] == f"{expected.num_transfers:,}"
    drawn = figure(at)
    titles = [a["text"] for a in drawn["layout"]["annotations"]]
    assert titles == [FAMILIES[n].title for n in ("gpipe", "1f1b", "zb-h1")]
    layout = drawn["layout"]
    assert layout["xaxis"]["matches"] == layout["xaxis2"]["matches"] == "x3"  # one time axis for all three
    assert len(drawn["frames"]) > 20
    assert CompareSettings.from_query(at.query_params)[0].schedules == ("gpipe", "1f1b", "zb-h1")


def test_compare_refuses_a_single_schedule():
    at = open_app(COMPARE, "views/compare/page.py")
    at.multiselect(key="cp_schedules").set_value(["gpipe"])
    at.run()
    assert not at.exception and any("choose 2 to 4 schedules" in e for e in errors(at))


# -- Schedule editor -----------------------------------------------------------------------------------------
def test_editor_simulates_the_text_and_loads_a_family():
    at = open_app(page="views/editor/page.py")
    assert metrics(at)["Makespan"] == f"{simulate(build_schedule('1f1b', 4, 8)).makespan:.4g}"
    at.selectbox(key="ed_family").set_value("zb-h1")
    at.run()
    at.button(key="ed_load").click()
    at.run()
    assert at.text_area(key="ed_csv").value == build_schedule("zb-h1", 4, 8).to_csv()
    expected = simulate(build_schedule("zb-h1", 4, 8), Costs.of({"F": 1, "I": 1, "W": 1}))
    assert metrics(at)["Makespan"] == f"{expected.makespan:.4g}"


@pytest.mark.parametrize(
    "text, message",
    [
        ("0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n", "deadlock"),
        ("0F0,0B0\n1F0\n", "stage 1, micro-batch 0 has no backward"),
        ("hello\n", "cannot read"),
    ],
)
def test_editor_reports_a_broken_schedule_with_the_grid(text, message):
    at = open_app(page="views/editor/page.py")
    at.text_area(key="ed_csv").set_value(text)
    at.run()
    assert not at.exception and any(message in e for e in errors(at))
    if message != "cannot read":
        assert any("<-- here" in c.value for c in at.code)
    assert drawn_figures(at)  # the last version that ran is still drawn


def test_lab_settings_defaults_are_the_widgets_defaults():
    assert LabSettings().to_query()["costs"] == "F=1,B=2"


# -- Real run ------------------------------------------------------------------------------------------------
def small_real_run(at):
    at.selectbox(key="rr_family").set_value("zb-h1")
    at.slider(key="rr_num_ranks").set_value(2)
    at.select_slider(key="rr_num_microbatches").set_value(4)
    at.slider(key="rr_layers").set_value(4)
    at.select_slider(key="rr_hidden").set_value(32)
    at.slider(key="rr_repeats").set_value(2)
    at.run()


def test_real_run_runs_once_on_run_and_not_on_a_later_change():
    at = open_app(page="views/real_run/page.py")
    assert any("press Run" in i.value for i in at.info)
    small_real_run(at)
    assert "rr_result" not in at.session_state  # changing widgets ran nothing
    at.button(key="rr_run").click()
    at.run(timeout=180)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.session_state["rr_runs"] == 1
    shown = metrics(at)
    assert float(shown["Gradient check"]) < 1e-5 and shown["Makespan, measured"].endswith(" ms")
    assert any("CPU time of the thread" in c.value for c in at.caption)  # the clock, named in the note
    agreement = [c.value for c in at.caption if "one cost per stage describes" in c.value]  # what it shows
    assert agreement and "Each rank's own end is off by" in agreement[0]
    charts = drawn_figures(at)
    names = {t["name"] for chart in charts for t in chart["data"]}
    assert {"predicted (outline)", "spread over the repeats (min–max)"} <= names
    assert any(name.endswith("modelled") for name in names)
    assert {"schedule", "imbalance"} <= names  # the idle time split by cause, one bar per rank
    assert any("Why the measured step is longer" in h.value for h in at.subheader)
    result = at.session_state["rr_result"][1]
    costs = at.table[0].value  # each stage's cost under the run's estimator, then the median beside it
    assert result.estimator == "min" and "F (ms, fastest repeat)" in costs and "F (ms, median repeat)" in costs
    assert (costs["F (ms, fastest repeat)"] <= costs["F (ms, median repeat)"]).all()
    shown_notes = [n.value for n in at.caption] + [n.value for n in at.warning]
    assert result.interference.sentence.replace("--repeats", "Measured steps") in shown_notes
    at.slider(key="rr_layers").set_value(2)
    at.run()
    assert at.session_state["rr_runs"] == 1  # still the one run
    assert any("press Run to measure the new configuration" in c.value for c in at.caption)
    other = open_app(page="views/real_run/page.py")  # another visitor
    assert "rr_result" not in other.session_state and any("press Run" in i.value for i in other.info)


def test_real_run_speaks_the_pages_words_and_resets_the_width_for_the_gpt():
    at = open_app(page="views/real_run/page.py")
    at.slider(key="rr_layers").set_value(2)
    at.run()
    assert any("2 blocks cannot fill 4 stages" in e for e in errors(at))
    assert not any("--" in e for e in errors(at))
    at.radio(key="rr_model").set_value("gpt")
    at.run()
    assert at.select_slider(key="rr_hidden").value == 128  # the GPT's default, not the MLP's 512


def test_real_run_refuses_what_this_machine_cannot_hold(monkeypatch):
    import engine.runtime.budget as budget

    monkeypatch.setattr(budget, "available_bytes", lambda: 300 * 2**20)  # a machine with 300 MiB free
    at = open_app(page="views/real_run/page.py")
    assert any("This run would need about" in e and "more than the" in e for e in errors(at))
    assert at.button(key="rr_run").disabled


def test_the_editor_hands_its_schedule_to_the_real_run_page():
    at = open_app(page="views/editor/page.py")
    at.text_area(key="ed_csv").set_value(build_schedule("zb-h1", 2, 4).to_csv())
    at.run()
    at.button(key="ed_run").click()
    at.run()
    assert not at.exception
    assert any("sent from the editor" in i.value for i in at.info)


def test_real_run_settings_survive_a_visit_to_another_page():
    at = open_app(page="views/real_run/page.py")
    at.slider(key="rr_layers").set_value(12)
    at.run()
    go_to(at, "views/playground/page.py")
    go_to(at, "views/real_run/page.py")
    assert not at.exception and at.slider(key="rr_layers").value == 12


# -- What the server process loads ---------------------------------------------------------------------------
PAGE_FILES = [
    "views/playground/page.py",
    "views/lessons/page.py",
    "views/compare/page.py",
    "views/editor/page.py",
    "views/real_run/page.py",
]
TORCH_CHECK = """
import sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({app!r}, default_timeout=60)
at.run()
if {page!r} != "views/playground/page.py":
    at.switch_page({page!r})
    at.run()
assert not at.exception, at.exception
print("torch" in sys.modules)
"""


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGE_FILES)
def test_opening_a_page_does_not_import_torch_into_the_server(page):
    """Only pressing Run loads PyTorch, and then in a child process (app/server/real_run_jobs.py)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", TORCH_CHECK.format(app=APP, page=page)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=Path(APP).parents[1],
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "False", f"{page} imported torch"


# -- Plan ----------------------------------------------------------------------------------------------------
PLAN_QUERY = {
    "model": "llama3-405b", "gpu": "h100", "tp": "8", "pp": "16", "dp": "64", "seq": "8192", "global_batch": "2048",
    "microbatch_size": "1", "schedule": "interleaved-1f1b", "chunks": "2", "split": "llama3", "recompute": "selective",
}  # fmt: skip


def test_the_plan_page_shows_the_commands_numbers_for_the_same_inputs():
    import subprocess
    import sys

    flags = [f"--{key.replace('_', '-')}={value}" for key, value in PLAN_QUERY.items()]
    done = subprocess.run(
        [sys.executable, "-m", "engine", "plan", *flags, "--json"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    cli = json.loads(done.stdout)
    at = open_app(PLAN_QUERY, "views/plan/page.py")
    shown = metrics(at)
    assert shown["Step time"] == f"{cli['step_seconds']:.3g} s"
    assert shown["Tokens / s"] == f"{cli['tokens_per_second']:,.0f}"
    assert shown["MFU"] == f"{cli['mfu']:.1%}" and shown["Bubble"] == f"{cli['bubble_fraction']:.1%}"
    assert cli["layers_per_stage"] == [3] + [4] * 30 + [3]
    assert any("layers per stage 3, 4 × 30, 3" in m.value for m in at.markdown)
    assert all(at.query_params[key] == value for key, value in PLAN_QUERY.items())


def test_a_plan_that_does_not_multiply_out_says_so_with_the_arithmetic():
    at = open_app({**PLAN_QUERY, "global_batch": "2047"}, "views/plan/page.py")
    assert any("2047" in e or "2,047" in e for e in errors(at)), errors(at)


# -- Search --------------------------------------------------------------------------------------------------
def test_the_search_page_finds_a_schedule_no_worse_than_zb_h1_within_the_budget():
    """A shared link shows its result at once, as the sender saw it (no press needed)."""
    at = open_app({"ranks": "4", "microbatches": "8", "costs": "F=1,I=1,W=1", "memory": "4"}, "views/search/page.py")
    assert not at.exception, at.exception
    assert not any("press Search" in i.value for i in at.info)
    shown = metrics(at)
    assert float(shown["Makespan"]) <= 27 and float(shown["Peak memory"]) <= 4
    table = at.table[0].value
    assert "searched" in list(table.iloc[:, 0]) or "searched" in list(table.index)
    assert at.query_params["memory"] == "4" and at.query_params["costs"] == "F=1,I=1,W=1"


def test_changing_p_keeps_the_budget_and_a_budget_above_2p_is_taken():
    """A widget change never overwrites another: p from 4 to 5 leaves the budget at 3 (a slider whose maximum
    followed p reset it to 0.5); a link's budget of 10 on 4 ranks constrains nothing and is kept."""
    at = open_app({"ranks": "4", "microbatches": "4", "memory": "3", "time": "2"}, "views/search/page.py")
    at.slider(key="sr_num_ranks").set_value(5).run()
    assert not at.exception and not errors(at), (at.exception, errors(at))
    assert at.number_input(key="sr_memory_budget").value == 3 and at.query_params["memory"] == "3"
    at = open_app({"ranks": "4", "microbatches": "4", "memory": "10", "time": "2"}, "views/search/page.py")
    assert not at.exception and not at.warning, (at.exception, [w.value for w in at.warning])
    assert at.query_params["memory"] == "10" and float(metrics(at)["Peak memory"]) <= 4


def test_a_budget_below_what_any_schedule_needs_is_refused_with_the_arithmetic():
    at = open_app({"ranks": "4", "microbatches": "8", "memory": "0.5"}, "views/search/page.py")
    assert any("0.5" in e and "micro-batch" in e for e in errors(at)), errors(at)


def test_a_published_run_shows_the_papers_figure_the_planned_one_and_where_each_value_comes_from():
    from engine.scale import LAYOUT_PRESETS, plan_preset
    from engine.scale.calibration import planned_tflops
    from engine.scale.hardware import gpu_named

    preset = LAYOUT_PRESETS["megatron-145b"]
    planned = planned_tflops(plan_preset(preset.name), preset)
    at = open_app({"preset": preset.name}, "views/plan/page.py")
    shown = " ".join(i.value for i in at.info)
    assert f"**{planned:,.1f} TFLOP/s per GPU** against the paper's 148" in shown
    assert f"**{planned / 148 - 1:+.1%}**" in shown
    table = at.table[0].value
    assert "the lab's choice" in table.to_string() and "Table 1" in table.to_string()
    share = f"{gpu_named('a100').gemm_share:.1%} of peak"  # the calibrated share, whatever the model makes it
    assert any(share in m.value and "1T run" in m.value for m in at.markdown)


def test_your_run_shows_the_example_runs_step_as_the_engine_reads_it():
    from engine.traces import import_traces
    from engine.traces.examples import DEFAULT_EXAMPLE, example_files

    at = open_app({"expect": "interleaved-1f1b"}, page="views/your_run/page.py")
    expected = import_traces(example_files(DEFAULT_EXAMPLE)).timeline.summary()
    shown = {m.label: m.value for m in at.metric}
    assert shown["Step (measured)"] == f"{expected['makespan']:.3g} ms"
    assert shown["Bubble fraction"] == f"{expected['bubble_fraction']:.1%}"
    assert any("equals interleaved-1f1b" in s.value for s in at.success)
    assert drawn_figures(at) and any("ZB-V" in str(t.value) or "zb-v" in str(t.value) for t in at.table)


def test_your_run_marks_where_the_order_differs_and_warns_about_a_bad_link():
    at = open_app({"expect": "looped-bfs", "step": "x"}, page="views/your_run/page.py")
    assert any("differs from looped-bfs" in e.value for e in at.error)
    assert any("<-- here" in c.value for c in at.code)
    assert any("step=`x`: expected a whole number" in w.value for w in at.warning)


def test_your_run_shows_the_prediction_as_a_card_and_its_outlines_and_the_arrows_only_when_asked():
    """Issue 35: measured and predicted step side by side (one simulation for the card and the outlines); the
    outlines off and the arrows on by default, each behind its toggle; the time axis ends at the step."""
    from engine import simulate
    from engine.traces import import_traces
    from engine.traces.examples import DEFAULT_EXAMPLE, example_files

    run = import_traces(example_files(DEFAULT_EXAMPLE))
    predicted = simulate(run.schedule, run.costs, check=False).makespan
    at = open_app({}, page="views/your_run/page.py")
    shown = {m.label: m.value for m in at.metric}
    assert shown["Step (predicted)"] == f"{predicted:.3g} ms"

    def drawn(app) -> tuple[set, list]:
        figure = drawn_figures(app)[0]
        return {trace.get("meta") or trace.get("name") for trace in figure["data"]}, figure["layout"]["xaxis"]["range"]

    names, axis = drawn(at)
    assert "pplab-arrows" in names and "predicted (outline)" not in names
    assert axis[1] == pytest.approx(run.timeline.makespan, rel=0.05)  # the step's end, a margin at most
    toggles = {t.label: t for t in at.toggle}
    toggles["Show the prediction's outlines"].set_value(True)
    toggles["Show the hand-off arrows"].set_value(False)
    names, _ = drawn(at.run())
    assert "pplab-arrows" not in names and "predicted (outline)" in names


def test_your_run_zooms_to_a_time_window_and_a_rank():
    at = open_app({}, page="views/your_run/page.py")
    window = next(s for s in at.slider if s.label == "Time window, ms")
    low, high = window.value
    window.set_value((high / 4, high / 2))
    next(s for s in at.selectbox if s.label == "Ranks").set_value("rank 1")
    at.run()
    assert not at.exception
    layout = figure(at)["layout"]
    assert layout["xaxis"]["range"] == pytest.approx([high / 4, high / 2], rel=0.02)
    assert layout["yaxis"]["range"] == pytest.approx([1.55, 0.45])


ABBREVIATION = re.compile(r"\b[A-Z][A-Z0-9]*[A-Z][A-Za-z0-9]*\b")
NOT_TERMS = {"GB": "a unit", "MB": "a unit", "TB": "a unit", "NVIDIA": "a maker's name", "SXM": "part of the name "
             "H100 SXM", "LM": "part of the name Megatron-LM", "ZB": "part of the names ZB-H1, ZB-V"}  # fmt: skip


def test_every_abbreviation_the_plan_page_shows_is_in_the_glossary():
    """Issue 36: "GEMM" was used throughout the Plan page and defined nowhere. Every capitalised abbreviation in
    its text, cards and tables is a glossary term (by name or alias), or a unit or a name (``NOT_TERMS``)."""
    from app.text.glossary import TERMS

    at = open_app({}, page="views/plan/page.py")
    texts = [str(element.value) for kind in ("markdown", "caption", "title", "header", "subheader", "info",
             "warning", "error", "success") for element in getattr(at, kind)]  # fmt: skip
    texts += [f"{m.label} {m.value} {m.help or ''}" for m in at.metric] + [e.label for e in at.expander]
    texts += [str(table.value) for table in at.table]
    defined = {word for term in TERMS for word in (term.name, *term.aliases)}
    found = set(ABBREVIATION.findall("\n".join(texts)))
    assert found, "the page shows abbreviations (the test reads its text)"
    assert found - defined - set(NOT_TERMS) == set()


def test_lesson_11_step_1_shows_the_staircase_in_seconds_beside_its_memory():
    """Issue 36: "The staircase, in seconds" showed only a memory chart; now one pipeline's Gantt in seconds (the
    Plan page's, one engine call) comes first, its time axis the plan's step."""
    from app.frame.engine_calls import planned
    from app.views.lessons.course import load_lessons

    step = next(lesson for lesson in load_lessons() if lesson.number == 11).steps[0]
    result = planned(step.plans[step.plan])
    at = open_app({"lesson": "11", "step": "1"}, page="views/lessons/page.py")
    figures = drawn_figures(at)
    gantt = next(f for f in figures if f["layout"].get("xaxis", {}).get("title", {}).get("text") == "seconds")
    assert len(figures) >= 2 and gantt["layout"]["xaxis"]["range"][1] >= result.timeline.makespan


def test_a_lecture_too_long_for_the_page_steps_on_the_server():
    """Past DECK_EVENTS events the page does not carry them all: each press is a rerun, as before issue 38."""
    from app.lecture.deck import DECK_EVENTS

    at = open_app({"schedule": "1f1b", "ranks": "32", "microbatches": "256"})
    at.toggle(key="pg_lecture").set_value(True)
    at.run()
    headline = next(m.value for m in at.markdown if "Event 1 of" in m.value)
    assert int(headline.split(" of ")[1].split("*")[0]) > DECK_EVENTS
    assert not any('class="pplab-lecture' in element.proto.body for element in at.get("html"))
    at.button(key="pg_event_next").click()
    at.run()
    assert any("Event 2 of" in m.value for m in at.markdown)


def test_the_playgrounds_closed_expanders_are_filled_once_opened():
    """Issue 38: a change of setting no longer mounts the idle-cause chart and the schedule's grid while their
    expanders are closed; opened, they hold the engine's attribution and the grid (and keep them on a change)."""
    at = open_app({"schedule": "1f1b", "ranks": "4", "microbatches": "8", "costs": "F=1,I=1,W=1"})
    labels = [e.label for e in at.expander]
    assert {"Where the idle time comes from", "Schedule as text (rank × step grid, PyTorch CSV)"} <= set(labels)
    assert len(drawn_figures(at)) == 1 and not at.get("download_button")
    at.session_state["pg_causes_open"] = True
    at.session_state["pg_text_open"] = True
    at.run()
    figures = drawn_figures(at)
    schedule = build_schedule("1f1b", 4, 8)
    timeline = simulate(schedule, Costs.of({"F": 1, "I": 1, "W": 1}))
    per_rank = np.sum([values(trace["x"]) for trace in figures[1]["data"]], axis=0)  # the causes add up to idle
    assert len(figures) == 2 and np.allclose(per_rank, timeline.summary()["idle"])
    downloads = [button.proto.label for button in at.get("download_button")]
    assert downloads == ["Download CSV (PyTorch format)", "Download Perfetto trace"]
    assert any("pplab-grid" in h.proto.body for h in at.get("html"))


def test_the_playgrounds_gantt_is_built_once_per_configuration_and_drawn_as_built():
    """Issue 38: the figure and its JSON are kept per configuration (shared by every visitor); what the page
    sends is the figure the chart module builds for that timeline."""
    from app.charts import timeline_figure
    from app.frame.engine_calls import playground_gantt, simulated

    settings = LabSettings(family="zb-h1", num_ranks=4, num_microbatches=6)
    kept, as_json = playground_gantt(settings, False)
    assert playground_gantt(settings, False)[1] is as_json  # kept, not rebuilt
    fresh = timeline_figure(simulated(settings)[1], title=settings.title())
    assert as_json == json.loads(fresh.to_json()) and kept.layout.title.text == fresh.layout.title.text
    at = open_app(settings.to_query())
    assert figure(at) == as_json

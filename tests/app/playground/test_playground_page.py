"""The Playground through AppTest: the engine's numbers, the URL in step, bad links warned, lecture mode."""

import json
import re

import numpy as np
import pytest
from apptest_support import errors, expected_cards, figure, go_to, metrics, open_app, values
from drawn import drawn_figures

from app.frame.lab_settings import LabSettings
from engine import Costs, build_schedule, simulate

pytestmark = pytest.mark.slow  # AppTest runs the whole app script per test
DEFAULT = LabSettings()
SIZES = (DEFAULT.num_ranks, DEFAULT.num_microbatches)
"""What the Playground opens on (a size no lesson question uses: tests/app/lessons/test_lessons.py)."""


def test_playground_default_shows_the_engines_numbers_and_writes_its_url():
    at = open_app()
    expected = simulate(build_schedule("1f1b", *SIZES), Costs.of({"F": 1, "B": 2}))
    shown = metrics(at)
    assert {k: shown[k] for k in expected_cards(expected)} == expected_cards(expected)
    assert at.query_params == {
        "schedule": "1f1b",
        "ranks": str(DEFAULT.num_ranks),
        "microbatches": str(DEFAULT.num_microbatches),
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
        ({"ranks": "99"}, f"ranks=`99`: expected a whole number from 1 to 32; using {DEFAULT.num_ranks}"),
        ({"schedule": "nope"}, "schedule=`nope`: expected one of gpipe, 1f1b"),
        ({"costs": "F=banana"}, "costs=`F=banana`: cannot read cost"),
        ({"recompute": "maybe"}, "recompute=`maybe`: expected 0 or 1"),
    ],
)
def test_a_bad_link_warns_and_uses_defaults(query, problem):
    at = open_app(query)
    assert any(problem in w.value for w in at.warning)
    assert metrics(at)["Makespan"] == f"{simulate(build_schedule('1f1b', *SIZES)).makespan:.4g}"


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
    peak = max(simulate(build_schedule("1f1b", *SIZES), costs).peak_memory_per_rank())
    assert metrics(at)["Peak memory"] == f"{peak:.3g}"
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
    peak = max(simulate(build_schedule("1f1b", *SIZES), costs).peak_memory_per_rank())
    assert metrics(receiver)["Peak memory"] == f"{peak:.3g}" != metrics(open_app({"recompute": "1"}))["Peak memory"]


def test_transfers_that_share_a_link_come_from_the_link_and_show_their_lanes():
    """DualPipeV's overlapped pairs hand two products over one link at once: shared, the second waits."""
    at = open_app({"schedule": "dualpipev", "costs": "F=1,I=1,W=1,F&B=2.5", "comm": "0.5", "links": "shared"})
    split = {"F": 1, "I": 1, "W": 1, "F&B": 2.5}
    shared = simulate(build_schedule("dualpipev", *SIZES), Costs.of(split, comm=0.5, shared_links=True))
    delay = simulate(build_schedule("dualpipev", *SIZES), Costs.of(split, comm=0.5))
    assert metrics(at)["Makespan"] == f"{shared.makespan:.4g}" != f"{delay.makespan:.4g}"
    assert at.query_params["links"] == "shared"
    names = {t["name"] for t in figure(at)["data"]}
    assert {"transfer: send", "transfer: receive"} <= names


def test_dualpipes_all_to_all_card_lane_and_link_come_from_the_engine():
    """DeepSeek-V3's schedule with an all-to-all inside each F and B: the card's hidden share, the lane's two
    parts and the link's a2a are the engine's; without one, no card and no a2a in the link."""
    at = open_app({"schedule": "dualpipe", "costs": "F=1,I=1,W=1,F&B=2.5", "a2a": "0.75"})
    costs = Costs.of({"F": 1, "I": 1, "W": 1, "F&B": 2.5}, expert_comm=0.75)
    expected = simulate(build_schedule("dualpipe", *SIZES), costs)
    assert metrics(at)["All-to-all hidden"] == f"{expected.expert_comm['hidden_fraction']:.0%}"
    assert metrics(at)["Makespan"] == f"{expected.makespan:.4g}"
    assert at.query_params["a2a"] == "0.75"
    lanes = {t["name"]: t for t in figure(at)["data"] if t["name"].startswith("all-to-all")}
    assert sum(values(lanes["all-to-all: under compute"]["x"])) == pytest.approx(expected.expert_comm["hidden"], 1e-5)
    assert sum(values(lanes["all-to-all: waited for"]["x"])) == pytest.approx(expected.expert_comm["exposed"], 1e-5)
    plain = open_app({"schedule": "dualpipe", "costs": "F=1,I=1,W=1,F&B=2.5"})
    assert "All-to-all hidden" not in metrics(plain) and "a2a" not in plain.query_params


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


def test_a_lecture_too_long_for_the_page_steps_on_the_server():
    """Past DECK_EVENTS events the page does not carry them all: each press is a rerun."""
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
    """A change of setting no longer mounts the idle-cause chart and the schedule's grid while their
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
    """The figure and its JSON are kept per configuration (shared by every visitor); what the page
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

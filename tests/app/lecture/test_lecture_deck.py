"""What the page carries for lecture mode in the browser (app/lecture/deck.py), against the engine's narration."""

import json

from app.charts.playback import shapes_at, slot_rows
from app.lecture.deck import controls_html, deck_payload, script_json, story_block, story_html, story_lines
from engine import Costs, build_schedule, simulate
from engine.narrate import Narration


def _narration(family="zb-v", ranks=4, microbatches=8):
    schedule = build_schedule(family, ranks, microbatches)
    return Narration(schedule, simulate(schedule, Costs.of({"F": 1, "I": 1, "W": 1})))


def test_every_event_is_carried_with_the_engines_words_and_shapes():
    narration = _narration()
    deck = deck_payload(narration, start=3)
    assert deck["start"] == 3 and len(deck["events"]) == len(narration.times)
    frame = narration.timeline.frame
    rows, end = [slot_rows(frame, "y")], float(frame["end"].max())
    for index, carried in enumerate(deck["events"]):
        event = narration.event(index)
        assert carried["time"] == event.time
        assert carried["headline"] == (f"Event {index + 1} of {len(narration.times)}", event.headline())
        assert [text for _, text in carried["story"]] == [state.text for state in event.ranks]
        assert carried["shapes"] == shapes_at(event.time, end, rows, True)


def test_more_than_sixteen_ranks_are_counted_not_told():
    narration = _narration("1f1b", 20, 20)
    lines = story_lines(narration.event(0))
    assert len(lines) == 17 and lines[-1] == ("", "… and 4 more ranks")
    assert "<li>… and 4 more ranks</li>" in story_html(lines)


def test_text_is_escaped_and_the_script_holds_no_angle_bracket():
    assert story_html([("rank 0", "waits <for> & more")]) == (
        "<ul><li><strong>rank 0</strong> waits &lt;for&gt; &amp; more</li></ul>"
    )
    carried = script_json({"text": "</script><b>"})
    assert "<" not in carried and json.loads(carried) == {"text": "</script><b>"}
    page = controls_html("pg", "pg_gantt", deck_payload(_narration(), 0), narrow=False)
    script = page.split("<script>", 1)[1].rsplit("</script>", 1)[0]
    # Streamlit's sanitizer drops a script whose text holds "<" followed by a letter or "/"
    assert not any(
        script[i] == "<" and (script[i + 1].isalpha() or script[i + 1] == "/") for i in range(len(script) - 1)
    )


def test_the_first_event_is_drawn_by_the_server_with_its_buttons_set():
    deck = deck_payload(_narration(), 0)
    page = controls_html("pg", "pg_gantt", deck, narrow=True)
    assert 'data-step="-1" disabled' in page and 'data-step="1">' in page  # at the first event: no going back
    assert f"<strong>Event 1 of {len(deck['events'])}</strong>" in page and "narrow" in page
    last = deck_payload(_narration(), len(deck["events"]) - 1)
    assert 'data-step="1" disabled' in controls_html("pg", "pg_gantt", last, narrow=False)
    assert "<strong>rank 0</strong> starts" in story_block("pg", deck)

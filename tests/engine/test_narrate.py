"""The lecture's event-by-event story, checked against the timeline it tells."""

import pytest

from engine import FAMILIES, Costs, build_schedule, simulate
from engine.narrate import Narration


@pytest.mark.parametrize("name", sorted(FAMILIES))
@pytest.mark.slow
def test_every_event_tells_what_the_timeline_shows(name):
    chunks = 2 if FAMILIES[name].takes_chunks else None
    costs = Costs.of({"F": 1, "I": 1.5, "W": 0.5}, comm=0.25)
    schedule = build_schedule(name, *FAMILIES[name].accepted_sizes(3, 5), chunks)  # DualPipe's: 4 ranks, 8
    timeline = simulate(schedule, costs)
    narration = Narration(schedule, timeline, costs.comm)
    slots = timeline.frame.drop_duplicates(["rank", "step"])
    assert list(narration.times) == sorted(set(slots["start"]))
    for index in range(len(narration.times)):
        event = narration.event(index)
        for state in event.ranks:
            mine = slots[slots["rank"] == state.rank]
            starting = mine[(mine["start"] - event.time).abs() < 1e-9]
            running = mine[(mine["start"] < event.time - 1e-9) & (mine["end"] > event.time + 1e-9)]
            assert (state.state == "starts") == (len(starting) > 0), (event.time, state)
            assert (state.state == "busy") == (len(running) > 0 and len(starting) == 0), (event.time, state)
            if state.state in ("waits", "not started"):
                upcoming = mine[mine["start"] > event.time + 1e-9]["start"].min()
                assert state.until == pytest.approx(upcoming)  # it resumes when its last input arrives


def test_the_story_of_gpipes_first_moments():
    schedule = build_schedule("gpipe", 4, 3)
    narration = Narration(schedule, simulate(schedule, Costs.of({"F": 1, "B": 2}, comm=0.5)), 0.5)
    first = narration.event(0)
    assert first.ranks[0].text == "starts 0F0 (stage 0, forward, micro-batch 0)"
    assert first.ranks[1].text == (
        "has not started: its first action 1F0 waits for 0F0 from rank 0 (finishes at 1, arrives at 1.5)"
    )


def test_an_action_of_no_duration_is_no_event():
    """Lesson 2's forwards-only chart (B = 0) ended on an event narrating "rank 0 starts 0B0 (… full
    backward …)" on every rank, under a text that says the backwards take no time."""
    costs = Costs.of({"F": 1, "B": 0})
    schedule = build_schedule("gpipe", 4, 6)
    narration = Narration(schedule, simulate(schedule, costs), costs.comm)
    assert list(narration.times) == list(range(9))  # each forward's start; the last forward starts at 8
    told = [state.text for index in range(len(narration.times)) for state in narration.event(index).ranks]
    assert not any("backward" in words for words in told)

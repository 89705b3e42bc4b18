"""V-Half and V-Min (Qi et al. 2024, "Pipeline Parallelism with Controllable Memory"): the authors' orders, a
valid schedule for every size, and the memory and idle time their closed forms give.

Legend: p ranks, m micro-batches; memory in micro-batches of one rank's share (a chunk's forward holds 1/2).
"""

from pathlib import Path

import pytest

from engine import UNIT, Costs, build_schedule, simulate, validate
from engine.schedules import FAMILIES
from engine.schedules.v_half import v_half_block, v_half_idle, v_half_peak
from engine.schedules.v_min import v_min_block, v_min_idle, v_min_peak
from engine.schedules.v_shape import greedy_microbatches, squeezed_ranks

FIXTURES = Path(__file__).parents[1] / "fixtures"
PEAK = {"v-half": v_half_peak, "v-min": v_min_peak}
IDLE = {"v-half": v_half_idle, "v-min": v_min_idle}
BLOCK = {"v-half": v_half_block, "v-min": v_min_block}
SMALL = [(p, m) for p in range(1, 9) for m in range(1, 3 * p + 3)]


def peaks(timeline) -> list[float]:
    """Each rank's peak, straight from the frame (``peak_memory_per_rank`` draws the whole curve first)."""
    return [float(x) for x in timeline.frame.groupby("rank")["memory_peak"].max()]


def authors_order(path: Path) -> list[list[str]]:
    rows = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    return [row.split(",") for row in rows]


@pytest.mark.parametrize("name, p, m", [(n, p, m) for n in ("v-half", "v-min") for p, m in [(4, 8), (3, 7), (5, 3)]])
def test_the_order_is_the_authors(name, p, m):
    """Each rank's list equals the one the authors' zbv_greedy.py builds (fixtures: where they come from is in
    their header). Its order is computed on unit slots, so the same order holds for every cost."""
    expected = authors_order(FIXTURES / f"zbv_greedy_{name.replace('-', '_')}_{p}ranks_{m}mb.txt")
    schedule = build_schedule(name, p, m)
    assert [[str(action) for action in actions] for actions in schedule.ranks] == expected


@pytest.mark.parametrize("name", ["v-half", "v-min"])
@pytest.mark.slow
def test_every_small_size_validates_simulates_and_holds_the_authors_peak(name):
    """Every p ≤ 8, m ≤ 3p + 2: no deadlock, every action once, and every rank's peak is min(m, the authors'
    count) — ⌊(p + 2)/2⌋ for V-Half, ⌊(p + 4)/3⌋ for V-Min — against 1F1B's p on rank 0. V-Min on 2 ranks holds
    1.5, less than its count, unless W needs all of a micro-batch's activations (the authors' accounting)."""
    for p, m in SMALL:
        schedule = build_schedule(name, p, m)
        validate(schedule)
        assert schedule.num_actions == 3 * 2 * p * m
        held = peaks(simulate(schedule, UNIT))
        expected = min(m, PEAK[name](p))
        if name == "v-min" and p == 2 and m > 1:
            assert max(held) == 1.5, (p, m)
            authors = simulate(schedule, Costs.of({"I": 1, "W": 1}, w_memory_fraction=1.0))
            assert max(peaks(authors)) == expected
        else:
            assert max(held) == expected, (name, p, m, held)
        assert min(held) >= min(m, 0.5 * expected + 0.5), (name, p, m, held)  # every rank holds about as much


@pytest.mark.parametrize("fraction", [0.0, 1.0])
@pytest.mark.slow
def test_the_peak_does_not_depend_on_what_w_keeps(fraction):
    """The peak comes at a forward, not between an I and its W: the same whatever share W still needs."""
    costs = Costs.of({"I": 1, "W": 1}, w_memory_fraction=fraction)
    for name in ("v-half", "v-min"):
        for p in (1, 3, 4, 5, 6, 8):
            for m in (p, 2 * p, 3 * p + 2):
                peak = max(peaks(simulate(build_schedule(name, p, m), costs)))
                assert peak == min(m, PEAK[name](p)), (name, p, m, fraction)


def test_half_and_a_third_of_1f1b():
    """The papers' claim in numbers: V-Half ≤ p/2 + 1, V-Min ≤ p/3 + 4/3, 1F1B p (m ≥ p)."""
    for p in range(1, 17):
        assert v_half_peak(p) <= p / 2 + 1 and v_min_peak(p) <= p / 3 + 4 / 3
    for p in (4, 8, 12):
        one_f_one_b = max(simulate(build_schedule("1f1b", p, 2 * p), UNIT).peak_memory_per_rank())
        half = max(simulate(build_schedule("v-half", p, 2 * p), UNIT).peak_memory_per_rank())
        third = max(simulate(build_schedule("v-min", p, 2 * p), UNIT).peak_memory_per_rank())
        assert (one_f_one_b, half, third) == (p, p // 2 + 1, (p + 4) // 3)


@pytest.mark.parametrize("name", ["v-half", "v-min"])
@pytest.mark.slow
def test_idle_time_is_the_closed_form_at_unit_costs(name):
    """F = I = W, no transfer time, m ≥ 2p: every rank idles V-Half 3⌊(p − 1)/2⌋ − 1/2 (p ≥ 3), V-Min
    2p − 5/2 − [3 | p] (p ≥ 2) times F, all of it inside its span; the paper's rates ≈ p/(2m) and ≈ 2p/(3m)."""
    fewest = 3 if name == "v-half" else 2
    for p in [*range(fewest, 9), 12, 16]:
        for m in (2 * p, 2 * p + 1, 3 * p + 2):
            for scale in (1.0, 0.5):
                costs = Costs.of({"F": scale, "I": scale, "W": scale})
                timeline = simulate(build_schedule(name, p, m), costs)
                expected = IDLE[name](p) * scale
                assert timeline.idle_per_rank() == pytest.approx([expected] * p), (name, p, m)
                assert max(timeline.span_idle_per_rank()) == pytest.approx(expected)  # rank 0 idles inside its span
                assert timeline.makespan == pytest.approx(3 * m * scale + expected)


@pytest.mark.parametrize("name", ["v-half", "v-min"])
@pytest.mark.parametrize("p, m", [(1, 12), (2, 20), (3, 30), (4, 40), (5, 19), (8, 40), (12, 45)])
def test_more_microbatches_repeat_the_steady_round(name, p, m):
    """Beyond 2p + 8 micro-batches the generator repeats the steady round instead of squeezing again; the result
    is what the squeeze on all m micro-batches gives."""
    assert m > greedy_microbatches(p)
    squeezed = squeezed_ranks(p, m, BLOCK[name])
    assert list(build_schedule(name, p, m).ranks) == squeezed


def test_four_ranks_eight_microbatches_side_by_side():
    """The numbers of the report (p = 4, m = 8, F = I = W = 1): ZB-V idles 1.5 outside its span, V-Half 2.5,
    V-Min 5.5, 1F1B 9 — at peaks 4, 3, 2 and 4 (1F1B: p − r on rank r)."""
    measured = {}
    for name in ("1f1b", "zb-v", "v-half", "v-min"):
        timeline = simulate(build_schedule(name, 4, 8), UNIT)
        measured[name] = (
            timeline.makespan,
            round(timeline.bubble_fraction, 4),
            max(timeline.span_idle_per_rank()),
            timeline.peak_memory_per_rank(),
        )
    assert measured == {
        "1f1b": (33.0, round(36 / 132, 4), 9.0, [4.0, 3.0, 2.0, 1.0]),
        "zb-v": (25.5, round(6 / 102, 4), 0.0, [4.0] * 4),
        "v-half": (26.5, round(10 / 106, 4), 2.5, [3.0] * 4),
        "v-min": (29.5, round(22 / 118, 4), 5.5, [2.0] * 4),
    }


@pytest.mark.parametrize("name", ["v-half", "v-min"])
def test_the_family_record(name):
    family = FAMILIES[name]
    assert (family.fixed_chunks, family.placement, family.splits_backward) == (2, "v", True)
    assert family.minimum_microbatches is None and family.size_notes(4, 1) == []  # any m ≥ 1, nothing dropped
    schedule = build_schedule(name, 3, 1)
    validate(schedule)
    every = sorted(str(action) for actions in schedule.ranks for action in actions)
    assert every == sorted(f"{stage}{kind}0" for stage in range(6) for kind in "FIW")


@pytest.mark.parametrize("family", ["v-half", "v-min"])
def test_beyond_the_squeeze_limit_the_refusal_shows_the_arithmetic(family):
    from engine.limits import MAX_SQUEEZED_RANKS

    with pytest.raises(ValueError, match=rf"{family}: ranks must be from 1 to {MAX_SQUEEZED_RANKS}, got 256: .*8\.0×"):
        build_schedule(family, 256, 2)

"""Each family against its closed form, computed here independently of the simulator.

Legend: p ranks, m micro-batches, v stages per rank; F, B, I, W durations of one micro-batch through one
rank's share of the model.
"""

import pytest

from engine import UNIT, Costs, build_schedule, simulate
from engine.ir import all_actions, slot_actions

F1_B2 = Costs.of({"F": 1, "B": 2})
SIZES = [(2, 1), (2, 5), (4, 3), (4, 6), (4, 24), (7, 13), (8, 32)]


def test_seed_gpipe_forward_staircase():
    """4 stages, 6 micro-batches, forward only: each rank works 6 of 9 steps → 33 % idle; 24 → 11 %."""
    forward_only = Costs.of({"F": 1, "B": 0})
    t6 = simulate(build_schedule("gpipe", 4, 6), forward_only)
    assert t6.makespan == 9 and t6.idle_per_rank() == [3, 3, 3, 3]
    assert round(t6.bubble_fraction * 100) == 33
    t24 = simulate(build_schedule("gpipe", 4, 24), forward_only)
    assert t24.makespan == 27 and round(t24.bubble_fraction * 100) == 11


@pytest.mark.parametrize("p, m", SIZES)
def test_gpipe_and_1f1b_bubble_is_p_minus_1_over_m_plus_p_minus_1(p, m):
    expected_fraction = (p - 1) / (m + p - 1)  # GPipe §2.3
    expected_makespan = (m + p - 1) * (1 + 2)
    for name in ("gpipe", "1f1b"):
        timeline = simulate(build_schedule(name, p, m), F1_B2)
        assert timeline.makespan == pytest.approx(expected_makespan), name
        assert timeline.bubble_fraction == pytest.approx(expected_fraction), name
        assert timeline.bubble_ratio == pytest.approx((p - 1) / m), name  # Megatron's convention


@pytest.mark.parametrize("p, m", SIZES)
def test_1f1b_holds_at_most_p_minus_s_microbatches_while_gpipe_holds_m(p, m):
    one_f_one_b = simulate(build_schedule("1f1b", p, m), F1_B2).peak_memory_per_rank()
    gpipe = simulate(build_schedule("gpipe", p, m), F1_B2).peak_memory_per_rank()
    assert one_f_one_b == [min(p - s, m) for s in range(p)]
    assert gpipe == [m] * p


@pytest.mark.parametrize("p, m, v", [(2, 2, 2), (4, 4, 2), (4, 8, 2), (4, 12, 3), (3, 9, 4), (8, 16, 2)])
def test_interleaved_bubble_ratio_is_p_minus_1_over_v_m(p, m, v):
    timeline = simulate(build_schedule("interleaved-1f1b", p, m, v), F1_B2)
    assert timeline.bubble_ratio == pytest.approx((p - 1) / (v * m))  # Megatron-LM 2021, §2.2.2
    assert timeline.makespan == pytest.approx(m * 3 + (p - 1) * 3 / v)


@pytest.mark.parametrize(
    "name, p, m, built_for, chunks",
    [
        ("zb-v", 4, 3, 7, None),
        ("zb-v", 2, 1, 3, None),
        ("dualpipev", 3, 5, 6, None),
        ("dualpipev", 4, 1, 8, None),
    ],
)
def test_families_with_a_minimum_are_built_larger_and_trimmed(name, p, m, built_for, chunks):
    """PyTorch's ZB-V pads to max(2p−1, m) and drops the extra micro-batches; the lab does so everywhere."""
    schedule = build_schedule(name, p, m, chunks)
    larger = build_schedule(name, p, built_for, chunks)
    assert schedule.num_microbatches == m
    assert schedule.num_actions == sum(a.microbatch < m for _, a in all_actions(larger))
    kept = [[str(a) for slot in slots for a in slot_actions(slot)] for slots in schedule.ranks]
    expected = [[str(a) for slot in slots for a in slot_actions(slot) if a.microbatch < m] for slots in larger.ranks]
    assert kept == expected


@pytest.mark.parametrize("p, m", [(2, 4), (4, 8), (4, 16), (6, 12), (8, 24)])
def test_zero_bubble_table_2_with_unit_costs(p, m):
    """Zero Bubble paper Table 2 at F = I = W: 1F1B idles 3(p−1), ZB-H1 p−1, both peak at p."""
    one_f_one_b = simulate(build_schedule("1f1b", p, m), UNIT)
    zb_h1 = simulate(build_schedule("zb-h1", p, m), UNIT)
    assert one_f_one_b.idle_per_rank() == pytest.approx([3 * (p - 1)] * p)
    assert zb_h1.idle_per_rank() == pytest.approx([p - 1] * p)
    assert max(one_f_one_b.peak_memory_per_rank()) == p
    assert max(zb_h1.peak_memory_per_rank()) == p


@pytest.mark.parametrize("f, i, w", [(1, 1, 1), (1, 1, 0.5), (2, 2, 1), (1, 1.5, 1), (1, 1, 0.8)])
@pytest.mark.parametrize("p, m", [(4, 12), (6, 24)])
def test_zb_h1_and_h2_bubbles_are_the_papers_formulas(f, i, w, p, m):
    """Table 2: ZB-H1 (p−1)(T_F+T_B−T_W), ZB-H2 (p−1)(T_F+T_B−2T_W), the paper's T_B being our I.

    ZB-H2's count is the idle time inside each rank's span (the next step's warm-up overlaps this tail).
    """
    costs = Costs.of({"F": f, "I": i, "W": w})
    zb_h1 = simulate(build_schedule("zb-h1", p, m), costs)
    zb_h2 = simulate(build_schedule("zb-h2", p, m), costs)
    assert max(zb_h1.idle_per_rank()) == pytest.approx((p - 1) * (f + i - w))
    assert max(zb_h2.span_idle_per_rank()) == pytest.approx((p - 1) * (f + i - 2 * w))
    assert max(zb_h2.span_idle_per_rank()) < max(zb_h1.span_idle_per_rank())


@pytest.mark.parametrize("p, m", [(2, 4), (4, 8), (4, 16), (8, 24)])
def test_zb_h2_is_zero_bubble_by_the_papers_count_and_peaks_at_2p_minus_1(p, m):
    zb_h2 = simulate(build_schedule("zb-h2", p, m), UNIT)
    zb_h1 = simulate(build_schedule("zb-h1", p, m), UNIT)
    assert zb_h2.span_idle_per_rank() == [0] * p
    assert sum(zb_h2.idle_per_rank()) <= sum(zb_h1.idle_per_rank())
    assert max(zb_h2.peak_memory_per_rank()) == 2 * p - 1


@pytest.mark.parametrize("p, m", [(2, 3), (4, 7), (4, 16), (8, 32)])
def test_zb_v_idles_less_than_1f1b_at_1f1b_memory(p, m):
    zb_v = simulate(build_schedule("zb-v", p, m), UNIT)
    one_f_one_b = simulate(build_schedule("1f1b", p, m), UNIT)
    assert zb_v.span_idle_per_rank() == [0] * p  # the paper's zero bubble at F = I = W
    assert max(zb_v.idle_per_rank()) < max(one_f_one_b.idle_per_rank())
    assert max(zb_v.peak_memory_per_rank()) == pytest.approx(p)


def test_dualpipev_gains_from_overlap_and_holds_about_p():
    p, m = 4, 16
    plain = simulate(build_schedule("dualpipev", p, m), UNIT)
    overlapped = simulate(build_schedule("dualpipev", p, m), Costs.of({"F": 1, "I": 1, "W": 1, "F&B": 2}))
    # rank r runs 2(m − 2p + r + 1) + (p − r − 1) overlapped pairs (the last rank one fewer: its first
    # F and B run apart); each pair of two half-size stages saves (F + B − F&B)/2 = (1 + 2 − 2)/2
    pairs = [2 * (m - 2 * p + r + 1) + (p - r - 1) - (r == p - 1) for r in range(p)]
    saved = [0.5 * n for n in pairs]
    assert [a - b for a, b in zip(plain.busy_per_rank(), overlapped.busy_per_rank(), strict=True)] == saved
    assert overlapped.makespan < plain.makespan
    assert max(plain.peak_memory_per_rank()) == pytest.approx(p + 0.5)


def test_looped_bfs_matches_interleaved_bubble_at_gpipe_memory():
    p, m, v = 4, 8, 2
    bfs = simulate(build_schedule("looped-bfs", p, m, v), F1_B2)
    assert bfs.bubble_ratio == pytest.approx((p - 1) / (v * m))
    assert bfs.peak_memory_per_rank() == [m] * p  # v chunks × m micro-batches × 1/v each


def test_chunks_make_stages_cheaper_so_comparisons_are_fair():
    """Every schedule runs the same model: the total busy time is m·(F+B) per rank for any v."""
    p, m = 4, 8
    for name, chunks in [("1f1b", None), ("interleaved-1f1b", 2), ("interleaved-1f1b", 4), ("looped-bfs", 3)]:
        timeline = simulate(build_schedule(name, p, m, chunks), F1_B2)
        assert timeline.busy_per_rank() == pytest.approx([m * 3] * p), name


def test_comm_delays_each_cross_rank_hop():
    p, m, comm = 4, 1, 0.25
    timeline = simulate(build_schedule("gpipe", p, m), Costs.of({"F": 1, "B": 2}, comm=comm))
    # one micro-batch: p forwards and p backwards in a chain with 2(p−1) hops
    assert timeline.makespan == pytest.approx(p * 3 + 2 * (p - 1) * comm)


def test_recompute_adds_a_forward_to_each_backward_and_keeps_only_inputs():
    p, m = 4, 8
    costs = Costs.of({"F": 1, "B": 2}, recompute=True, recompute_memory_fraction=0.25)
    timeline = simulate(build_schedule("1f1b", p, m), costs)
    assert timeline.busy_per_rank() == pytest.approx([m * 4] * p)
    # rank s holds min(p − s, m) micro-batches at a quarter each, and its first backward rebuilds the other
    # three quarters of one of them while it runs
    assert timeline.peak_memory_per_rank() == pytest.approx([0.25 * min(p - s, m) + 0.75 for s in range(p)])
    assert list(timeline.frame["memory_after"].groupby(timeline.frame["rank"]).max()) == pytest.approx(
        [0.25 * min(p - s, m) for s in range(p)]
    )  # between actions, only the kept quarters


def test_stage_scale_slows_one_stage_and_everyone_waits():
    p, m = 4, 8
    scale = (1, 1, 2, 1)
    timeline = simulate(build_schedule("gpipe", p, m), Costs.of({"F": 1, "B": 2}, stage_scale=scale))
    # the slow stage paces the pipeline: its m·3·2 of work plus the others' fill and drain
    assert timeline.makespan == pytest.approx(m * 3 * 2 + (p - 1) * 3)
    with pytest.raises(ValueError, match="stage_scale has 3 entries but the schedule has 4 stages"):
        simulate(build_schedule("gpipe", p, m), Costs.of(stage_scale=(1, 1, 1)))


def test_memory_split_backward_keeps_w_fraction_until_w():
    timeline = simulate(build_schedule("zb-h1", 1, 1), Costs.of({"F": 1, "I": 1, "W": 1}, w_memory_fraction=0.3))
    assert list(timeline.frame["memory_after"].round(9)) == [1.0, 0.3, 0.0]


# -- the closed forms the app shows (engine/closed_forms.py) ---------------------------------------------------
from engine import FAMILIES  # noqa: E402

PANEL_COSTS = [
    Costs.of({"F": 1, "B": 2}),
    UNIT,
    Costs.of({"F": 2, "I": 1.5, "W": 0.5}),
    Costs.of({"F": 1, "I": 1, "W": 2}),
    Costs.of({"F": 1, "I": 0.5, "W": 1}),  # W > I: the case Table 2's form missed
    Costs.of({"F": 1, "B": 2}, comm=0.5),
    Costs.of({"F": 1, "I": 1, "W": 1}, recompute=True, recompute_memory_fraction=0.2),
]
SWEEP_COSTS = [
    *(Costs.of({"F": f, "I": i, "W": w}) for f in (1, 2) for i in (0.5, 2) for w in (0.5, 1, 2)),
    Costs.of({"F": 1, "B": 2}),
    Costs.of({"F": 2, "B": 1}),
    Costs.of({"F": 1, "B": 2}, comm=0.5),
    Costs.of({"F": 1, "I": 1, "W": 1}, recompute=True, recompute_memory_fraction=0.2),
    Costs.of({"F": 1, "B": 2}, recompute=True, recompute_memory_fraction=0.5),
]
SWEEP_SIZES = [(p, m) for p in (1, 2, 3, 4, 6) for m in (1, 2, 3, 4, 5, 6, 8, 9, 12)]


def sweep(name: str, sizes, costs_list) -> dict[str, int]:
    """Every closed form of ``name`` over sizes × chunks × costs (+ one uneven stage split): each either holds
    or names the assumption this configuration breaks. Returns the counts (configurations, forms, held,
    departures listed) — so "please report this" in the "Why these numbers" panel is unreachable here."""
    family = FAMILIES[name]
    counts = {"configurations": 0, "forms": 0, "held": 0, "departures listed": 0}
    for p, m in sizes:
        if family.refuses(p, m):  # DualPipe's odd p, odd m, m < 2p: refused, nothing to check
            continue
        for chunks in (2, 3) if family.takes_chunks else (None,):
            schedule = build_schedule(name, p, m, chunks)
            stages = p * schedule.num_chunks
            uneven = Costs.of({"F": 1, "B": 2}, stage_scale=tuple(1.0 + (s == 0) for s in range(stages)))
            for costs in [*costs_list, uneven]:
                counts["configurations"] += 1
                for form in family.closed_forms(schedule, costs, simulate(schedule, costs)):
                    counts["forms"] += 1
                    assert form.holds or form.departures, (name, p, m, chunks, costs, form)
                    counts["held" if form.holds else "departures listed"] += 1
    return counts


@pytest.mark.parametrize("name", sorted(FAMILIES))
@pytest.mark.slow
def test_every_closed_form_the_app_shows_holds_under_its_assumptions(name):
    """Where a configuration keeps a formula's assumptions, the formula and the simulator agree; where it
    breaks one, the panel names it (a small grid: the fast tier)."""
    counts = sweep(name, [(1, 3), (2, 5), (4, 3), (4, 8), (3, 7)], PANEL_COSTS)
    assert name == "dualpipev" or (counts["held"] > 5 and counts["departures listed"] > 2), counts


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_the_closed_form_sweep_every_form_holds_or_names_a_departure(name):
    """The full grid: p 1–6, m 1–12, v 2 and 3, 17 cost settings (F 1 or 2, I ½ or 2, W ½, 1 or 2, B-only,
    transfers, recomputation) and an uneven split. Its figures are printed for the report (``-s``)."""
    counts = sweep(name, SWEEP_SIZES, SWEEP_COSTS)
    print(name, counts)
    accepted = [size for size in SWEEP_SIZES if not FAMILIES[name].refuses(*size)]  # all 45 but for DualPipe's 7
    assert len(accepted) >= 7 and counts["configurations"] >= len(accepted) * len(SWEEP_COSTS)


def test_zb_h1_idle_holds_when_w_is_longer_than_i():
    """F = 1, I = 0.5, W = 1: Table 2's (p − 1)(F + I − W) says 1.5 on 4 ranks; the simulator says 3.0. The
    panel's form, (p − 1)(F + I − min(F, I, W)), says 3.0 — and lists no departure, because none is needed."""
    costs = Costs.of({"F": 1, "I": 0.5, "W": 1})
    for name, chunks, expected in (("zb-h1", None, 3.0), ("interleaved-zb", 2, 1.5)):
        schedule = build_schedule(name, 4, 8, chunks)
        timeline = simulate(schedule, costs)
        idle = FAMILIES[name].closed_forms(schedule, costs, timeline)[0]
        assert max(timeline.idle_per_rank()) == pytest.approx(expected)
        assert idle.predicted == pytest.approx(expected) and idle.holds and not idle.departures
        assert "min(F, I, W)" in idle.formula


@pytest.mark.parametrize("name", ["interleaved-1f1b", "looped-bfs"])
def test_the_interleaved_bubble_form_departs_only_below_m_equals_p(name):
    """(p − 1)/(v·m) holds for every m ≥ p with the lab's rounds (m = 9, 10, 11 on 4 ranks: uneven rounds), and
    the panel names m ≥ p as the assumption broken only when m < p."""
    for m in (4, 5, 6, 7, 9, 10, 11):
        schedule = build_schedule(name, 4, m, 2)
        ratio = FAMILIES[name].closed_forms(schedule, F1_B2, simulate(schedule, F1_B2))[0]
        assert ratio.holds and not ratio.departures, (m, ratio)
    schedule = build_schedule(name, 4, 3, 2)
    ratio = FAMILIES[name].closed_forms(schedule, F1_B2, simulate(schedule, F1_B2))[0]
    assert not ratio.holds and [d[:5] for d in ratio.departures] == ["m ≥ p"]


def test_interleaving_costs_about_v_times_the_transfers_exactly_2m_vp_minus_1():
    """Each micro-batch crosses v·p − 1 stage borders down and as many back: 48 → 112 → 240 on 4 ranks and 8
    micro-batches, (v·p − 1)/(p − 1) times 1F1B's — "about v times", as the family's story says."""
    p, m = 4, 8
    counts = {v: simulate(build_schedule("interleaved-1f1b", p, m, v), F1_B2).num_transfers for v in (2, 4)}
    counts[1] = simulate(build_schedule("1f1b", p, m), F1_B2).num_transfers
    assert counts == {1: 48, 2: 112, 4: 240} == {v: 2 * m * (v * p - 1) for v in (1, 2, 4)}
    assert "about v times" in FAMILIES["interleaved-1f1b"].story and "2m(v·p − 1)" in FAMILIES["interleaved-1f1b"].story


def test_1f1b_matches_gpipe_only_on_free_links():
    """Lesson 4's "same bubble as GPipe" needs no transfer time: with comm = 1 GPipe takes 39, 1F1B 49."""
    free = {n: simulate(build_schedule(n, 4, 8), F1_B2).makespan for n in ("gpipe", "1f1b")}
    slow = {n: simulate(build_schedule(n, 4, 8), Costs.of({"F": 1, "B": 2}, comm=1)).makespan for n in free}
    assert free == {"gpipe": 33, "1f1b": 33} and slow == {"gpipe": 39, "1f1b": 49}
    assert "free transfers" in FAMILIES["1f1b"].story


def test_the_dualpipev_notice_says_who_refuses_and_points_to_zb_v():
    """PyTorch's ScheduleDualPipeV and DeepSeek's dualpipev.py refuse m < 2p; only ScheduleZBVZeroBubble pads."""
    [note] = FAMILIES["dualpipev"].size_notes(4, 3)
    assert "refuse m < 2p" in note and "choose ZB-V" in note and "as PyTorch does" not in note
    assert "only PyTorch's ScheduleZBVZeroBubble pads and trims" in note
    [zb_v_note] = FAMILIES["zb-v"].size_notes(4, 3)
    assert "ScheduleZBVZeroBubble does the same" in zb_v_note


@pytest.mark.slow
def test_the_dualpipev_notice_figures_are_the_simulators():
    """The notice's figures — the padded DualPipeV's step against ZB-V's at the same m, F = I = W, 2 to 8
    ranks, every m < 2p (63 configurations) — recomputed."""
    import statistics

    longer = [
        simulate(build_schedule("dualpipev", p, m), UNIT).makespan
        / simulate(build_schedule("zb-v", p, m), UNIT).makespan
        - 1
        for p in range(2, 9)
        for m in range(1, 2 * p)
    ]
    assert len(longer) == 63 and min(longer) > 0
    [note] = FAMILIES["dualpipev"].size_notes(4, 3)
    assert f"a median {statistics.median(longer):.0%} longer" in note.replace(" %", "%")
    assert f"up to {max(longer):.0%}" in note.replace(" %", "%")


def test_titles_and_sources_say_what_the_papers_say():
    assert "zero bubble" not in FAMILIES["zb-h1"].title.lower()  # ZB-H1 keeps a third of 1F1B's bubble
    assert "ZB1P" in FAMILIES["interleaved-zb"].title and "PyTorch" in FAMILIES["interleaved-zb"].title
    assert "§6" in FAMILIES["zb-v"].source and "§3" in FAMILIES["zb-v"].source
    story = FAMILIES["1f1b"].story
    assert "frees its micro-batch's activations before the rank's next forward starts" in story


def test_a_broken_assumption_is_named_and_the_numbers_differ():
    schedule = build_schedule("gpipe", 4, 6)
    [fraction, *_] = FAMILIES["gpipe"].closed_forms(
        schedule,
        Costs.of({"F": 1, "B": 2}, comm=0.5),
        simulate(schedule, Costs.of({"F": 1, "B": 2}, comm=0.5)),
    )
    assert fraction.filled == "(4 − 1) / (6 + 4 − 1) = 3/9" and fraction.predicted == pytest.approx(1 / 3)
    assert not fraction.holds and fraction.departures[0].startswith("no transfer time")

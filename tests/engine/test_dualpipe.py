"""DualPipe, DeepSeek-V3's bidirectional schedule: its order against an independent transcription of DeepSeek's
``DualPipe.step()`` (deepseek-ai/DualPipe ``dualpipe/dualpipe.py``, steps 1–8), its refusals, its memory and its
closed forms against the simulator."""

from __future__ import annotations

import itertools
from collections import deque

import pytest

from engine import FAMILIES, build_schedule, read_csv, simulate, validate
from engine.dependencies import ScheduleError
from engine.ir import Action, Kind, Overlap, Schedule


def deepseek_step(rank: int, p: int, n: int) -> list:
    """Rank ``rank``'s compute calls in ``DualPipe.step(num_chunks=n)`` on p ranks, transcribed line by line: a
    phase is flipped by ``is_in_second_half`` into a direction (0: enters at rank 0, module[0]; 1: enters at rank
    p − 1, module[1]); chunk ids count per direction; ``enable_zb`` backwards queue their weight pass, which
    ``_weight_chunk`` pops first in, first out. Written as (stage, kind, micro-batch) in the lab's numbering:
    direction 0 is stage r, direction 1 stage 2p − 1 − r, its micro-batches after the first n/2."""
    half_ranks, half_rank, half_n = p // 2, min(rank, p - 1 - rank), n // 2
    second_half, middle = rank >= half_ranks, rank in (half_ranks - 1, half_ranks)
    f_id, b_id, queue, out = [0, 0], [0, 0], deque(), []

    def forward(phase):
        d = phase ^ second_half
        action = Action(rank if d == 0 else 2 * p - 1 - rank, Kind.F, f_id[d] + d * half_n)
        f_id[d] += 1
        return action

    def backward(phase, zb=False):
        d = phase ^ second_half
        stage, mb = (rank if d == 0 else 2 * p - 1 - rank), b_id[d] + d * half_n
        b_id[d] += 1
        if zb:
            queue.append(Action(stage, Kind.W, mb))
            return Action(stage, Kind.I, mb)
        return Action(stage, Kind.B, mb)

    for _ in range((half_ranks - half_rank - 1) * 2):  # step 1: nF0
        out.append(forward(0))
    for _ in range(half_rank + 1):  # step 2: nF0F1
        out += [forward(0), forward(1)]
    for _ in range(half_ranks - half_rank - 1):  # step 3: nB1W1F1
        out.append(backward(1, zb=True))
        out.append(queue.popleft())
        out.append(forward(1))
    for i in range(half_n - p + half_rank + 1):  # step 4: nF0B1F1B0
        if i == 0 and middle:  # "We don't overlap these two chunks to further reduce bubble size."
            out += [forward(0), backward(1)]
        else:
            out.append(Overlap(forward(0), backward(1)))
        out.append(Overlap(forward(1), backward(0)))
    for _ in range(half_ranks - half_rank - 1):  # step 5: nB1F1B0
        out.append(backward(1))
        out.append(Overlap(forward(1), backward(0)))
    step_6, zb = half_rank + 1, False
    for i in range(step_6):  # step 6: nB1B0, the second half with zero bubble
        if i == step_6 // 2 and half_rank % 2 == 1:
            zb = True
        out.append(backward(1, zb))
        if i == step_6 // 2 and half_rank % 2 == 0:
            zb = True
        out.append(backward(0, zb))
    for _ in range(half_ranks - half_rank - 1):  # step 7: nWB0
        out.append(queue.popleft())
        out.append(backward(0, zb=True))
    for _ in range(half_rank + 1):  # step 8: nW
        out.append(queue.popleft())
    assert not queue  # DeepSeek: assert WeightGradStore.funcs_queue.empty()
    return out


SIZES = [(p, n) for p in range(2, 17, 2) for n in range(2 * p, 4 * p + 1, 2)]


@pytest.mark.parametrize(("p", "n"), SIZES)
def test_the_order_is_deepseeks_step(p, n):
    schedule = validate(build_schedule("dualpipe", p, n))
    assert schedule.placement == "dual" and schedule.num_chunks == 2
    for rank in range(p):
        assert list(schedule.ranks[rank]) == deepseek_step(rank, p, n), rank


@pytest.mark.parametrize(
    ("p", "n", "words"),
    [
        (3, 12, "even number of ranks: rank r and rank p−1−r mirror each other"),
        (4, 9, "m must be even, got m = 9"),
        (4, 6, "m ≥ 2p micro-batches .* 2 × 4 = 8, got m = 6"),
    ],
)
def test_what_deepseeks_step_refuses_is_refused_with_the_reason(p, n, words):
    assert FAMILIES["dualpipe"].refuses(p, n) is not None
    with pytest.raises(ValueError, match=words):
        build_schedule("dualpipe", p, n)
    fitted = FAMILIES["dualpipe"].accepted_sizes(p, n)
    assert FAMILIES["dualpipe"].refuses(*fitted) is None and fitted >= (p, n)


def test_each_micro_batch_goes_through_one_copy_and_both_ends_start_at_once():
    schedule = build_schedule("dualpipe", 4, 8)
    assert [schedule.rank_of(s) for s in range(8)] == [0, 1, 2, 3, 3, 2, 1, 0]
    assert schedule.route(0) == range(0, 4) and schedule.route(7) == range(4, 8)
    assert schedule.block_of(4) == 0 and schedule.block_of(7) == 3  # the second copy, block by block
    assert schedule.ranks[0][0] == Action(0, Kind.F, 0) and schedule.ranks[3][0] == Action(4, Kind.F, 4)


def test_a_micro_batch_on_the_other_copy_is_refused_with_its_route():
    built = build_schedule("dualpipe", 2, 4)
    ranks = list(built.ranks)
    ranks[0] = tuple(Action(a.stage, a.kind, 2) if a == Action(0, Kind.F, 0) else a for a in ranks[0])
    with pytest.raises(ScheduleError, match="micro-batch 2 goes through stages 2..3 only"):
        validate(Schedule("hand", 2, 4, 2, "dual", tuple(ranks)))


def test_the_csv_writes_the_second_copy_as_stages_p_to_2p_and_reads_back_as_dualpipe():
    schedule = build_schedule("dualpipe", 4, 10)
    again = read_csv(schedule.to_csv(), name="dualpipe").schedule
    assert again == schedule and again.placement == "dual" and again.num_microbatches == 10


def test_at_8_ranks_and_20_micro_batches_it_holds_p_plus_1_against_1f1bs_p():
    costs = {"F": 1.0, "I": 1.0, "W": 1.0}
    dual = simulate(build_schedule("dualpipe", 8, 20), FAMILIES["dualpipe"].costs(costs))
    one = simulate(build_schedule("1f1b", 8, 20), FAMILIES["1f1b"].costs(costs))
    assert max(dual.peak_memory_per_rank()) / max(one.peak_memory_per_rank()) == pytest.approx(9 / 8)


def test_each_rank_holds_two_copies_weights_where_a_v_holds_one_share():
    """DeepSeek's "parameters per device 2×": two blocks of 1/p of the model each; a V's two chunks are halves."""
    assert build_schedule("dualpipe", 4, 8).weights_per_rank() == [2.0] * 4
    assert build_schedule("dualpipev", 4, 8).weights_per_rank() == [1.0] * 4
    assert build_schedule("interleaved-1f1b", 4, 8, 3).weights_per_rank() == pytest.approx([1.0] * 4)
    schedule = build_schedule("dualpipe", 4, 8)
    costs = FAMILIES["dualpipe"].costs({"F": 1, "I": 1, "W": 1})
    weights = FAMILIES["dualpipe"].closed_forms(schedule, costs, simulate(schedule, costs))[1]
    assert (weights.predicted, weights.simulated) == (2.0, 2.0) and weights.holds


def _idle_form(p, n, f, i, w, pair):
    family = FAMILIES["dualpipe"]
    schedule = build_schedule("dualpipe", p, n)
    costs = family.costs({"F": f, "I": i, "W": w, "F&B": pair})
    timeline = simulate(schedule, costs)
    forms = family.closed_forms(schedule, costs, timeline)
    return forms[0], max(timeline.idle_per_rank()), forms[2]


GRID = list(
    itertools.product([(2, 4), (4, 8), (4, 12), (6, 14), (8, 20)], [1, 2], [1, 2], [0.25, 0.5, 1, 2], [0, 0.5, 1])
)


@pytest.mark.parametrize(("size", "f", "i", "w", "saved"), GRID)
def test_deepseeks_bubble_holds_where_it_says_it_does(size, f, i, w, saved):
    """(PP/2 − 1)(F&B + B − 3W) against the simulated idle time of the busiest rank, F&B from F + B down."""
    p, n = size
    pair = max(f + i + w - saved, f, i + w)
    idle_form, idle, memory_form = _idle_form(p, n, f, i, w, pair)
    assert idle_form.predicted == pytest.approx((p // 2 - 1) * (pair + i + w - 3 * w))  # DeepSeek's, by hand
    assert idle_form.simulated == pytest.approx(idle)
    if not idle_form.departures:
        assert idle_form.holds, (size, f, i, w, pair, idle_form.predicted, idle)
    assert memory_form.predicted == p + 1 and memory_form.holds


def test_outside_its_conditions_deepseeks_bubble_can_miss_and_says_which_one_breaks():
    idle_form, idle, _ = _idle_form(8, 20, 2, 1, 1, 4)  # a forward twice an input-gradient backward
    assert not idle_form.holds and idle == 12 and idle_form.predicted == 9
    assert any("F = I" in departure for departure in idle_form.departures)

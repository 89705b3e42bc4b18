"""The validator: complete, well-ordered, placed right, and deadlock-free — or a grid with <-- here."""

import pytest

from engine import Schedule, ScheduleError, build_schedule, read_csv, validate
from engine.schedules import FAMILIES


def _from_rows(*rows: str, **kwargs) -> Schedule:
    return read_csv("\n".join(rows), **kwargs).schedule


def test_deadlock_is_reported_with_the_grid_and_here_marks():
    # rank 0 wants 1B0 before sending 0F1; rank 1 wants 0F1 before doing 1B0
    schedule = _from_rows("0F0,0B0,0F1,0B1", "1F1,1B1,1F0,1B0")
    with pytest.raises(ScheduleError) as caught:
        validate(schedule)
    message = str(caught.value)
    assert message.startswith("deadlock")
    marked = [line for line in message.splitlines() if "<-- here" in line]
    assert any("rank 0 0B0 waits for 1I0/1B0 (rank 1)" in line for line in marked)
    assert any("rank 1 1F1 waits for 0F1 (rank 0)" in line for line in marked)


@pytest.mark.parametrize(
    "rows, problem",
    [
        (("0F0,0B0", "1F0"), "stage 1, micro-batch 0 has no backward"),
        (("0F0,0B0,0F0", "1F0,1B0"), "0F0 appears twice"),
        (("0B0,0F0", "1F0,1B0"), "the backward comes before"),
        (("0F0,0W0,0I0", "1F0,1B0"), "W comes before"),
        (("0F0,0I0,0B0,0W0", "1F0,1B0"), "both a full backward B and a split I/W"),
        (("0F0,0I0", "1F0,1B0"), "split backward without its W"),
        (("0F0,1F0,0B0", "1B0"), "lives on rank 1"),
    ],
)
def test_structural_errors_name_the_problem(rows, problem):
    with pytest.raises(ScheduleError, match=problem):
        validate(_from_rows(*rows, placement="loop"))


def test_missing_forward_is_reported():
    schedule = Schedule("hand", 2, 2, 1, "loop", (tuple(), tuple()))
    with pytest.raises(ScheduleError, match="has no forward 0F0"):
        validate(schedule)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_every_family_validates(name):
    chunks = 3 if FAMILIES[name].takes_chunks else None
    for p, m in [(1, 2), (2, 4), (4, 8), (5, 10), (8, 16)]:
        validate(build_schedule(name, *FAMILIES[name].accepted_sizes(p, m), chunks))


def test_error_grid_is_cut_around_the_mark_for_long_schedules():
    schedule = build_schedule("gpipe", 2, 40)
    rows = [list(slots) for slots in schedule.ranks]
    rows[0] = rows[0][:30] + [rows[0][45]] + rows[0][30:45] + rows[0][46:]  # 0B5 jumps ahead of 0F30
    broken = Schedule("gpipe", 2, 40, 1, "loop", tuple(tuple(r) for r in rows))
    with pytest.raises(ScheduleError) as caught:
        validate(broken)
    message = str(caught.value)
    assert "<-- here" in message and "..." in message
    assert len(message.splitlines()) < 40


def test_missing_actions_are_marked_on_the_rank_that_should_run_them():
    with pytest.raises(ScheduleError) as caught:
        validate(_from_rows("0F0,0B0", "1F0", placement="loop"))
    message = str(caught.value)
    assert "stage 1, micro-batch 0 has no backward" in message and "on rank 1" in message
    assert "Step 0: 0F0     1F0  <-- here: rank 1 1F0" in message


def test_one_misplaced_action_in_a_loop_csv_is_marked_not_read_as_v():
    with pytest.raises(ScheduleError, match="1F0 is on rank 0 but stage 1 lives on rank 1"):
        validate(_from_rows("0F0,0B0,1F0", "1B0"))

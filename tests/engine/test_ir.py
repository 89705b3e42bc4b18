"""The IR's text forms: actions, PyTorch CSV import/export, the grid."""

from pathlib import Path

import pytest

from engine import Action, Kind, Overlap, build_schedule, read_csv, validate
from engine.ir import parse_slot
from engine.schedules import FAMILIES

FIXTURES = Path(__file__).parents[1] / "fixtures"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2F0", Action(2, Kind.F, 0)),
        ("5I3", Action(5, Kind.I, 3)),
        ("1W7", Action(1, Kind.W, 7)),
        ("12B104", Action(12, Kind.B, 104)),
    ],
)
def test_action_text_round_trip(text, expected):
    assert Action.parse(text) == expected
    assert str(expected) == text


@pytest.mark.parametrize("bad", ["", "F0", "2X0", "2F", "-1F0", "2f0x"])
def test_bad_action_text_is_a_value_error(bad):
    with pytest.raises(ValueError, match="cannot read action"):
        Action.parse(bad)


def test_overlapped_pair_text_is_pytorchs():
    slot = parse_slot("(0F7;7B3)OVERLAP_F_B")
    assert slot == Overlap(Action(0, Kind.F, 7), Action(7, Kind.B, 3))
    assert str(slot) == "(0F7;7B3)OVERLAP_F_B"
    with pytest.raises(ValueError, match="one F and one B or I"):
        parse_slot("(0B7;7F3)OVERLAP_F_B")


def _cases():
    for name, family in FAMILIES.items():
        p, m = family.accepted_sizes(*((3, 6) if name in ("zb-v", "dualpipev") else (3, 3)))
        yield name, p, m, (2 if family.takes_chunks else None)


@pytest.mark.parametrize("name, p, m, chunks", list(_cases()))
def test_csv_round_trip_for_every_family(name, p, m, chunks):
    schedule = build_schedule(name, p, m, chunks)
    again = read_csv(schedule.to_csv(), name=name).schedule
    assert again == schedule


def test_pytorch_1f1b_csv_matches_our_generator():
    imported = validate(read_csv((FIXTURES / "pytorch_1f1b_2ranks_3mb.csv").read_text(), name="1f1b").schedule)
    assert imported == build_schedule("1f1b", 2, 3)


def test_pytorch_zb_h1_csv_matches_our_generator():
    imported = read_csv((FIXTURES / "pytorch_zbh1_2ranks_3mb.csv").read_text(), name="zb-h1").schedule
    assert imported == build_schedule("zb-h1", 2, 3)


def test_pytorch_csv_with_overlapped_pairs_reads_as_v_placement():
    # written by hand from DualPipeV's eight phases for 2 ranks and 4 micro-batches
    imported = read_csv((FIXTURES / "pytorch_dualpipev_2ranks_4mb.csv").read_text(), name="dualpipev").schedule
    assert imported.placement == "v" and imported.num_chunks == 2 and imported.num_microbatches == 4
    assert isinstance(imported.ranks[0][7], Overlap)
    assert imported == build_schedule("dualpipev", 2, 4)


def test_empty_csv_cells_are_idle_steps_and_are_skipped():
    imported = read_csv((FIXTURES / "pytorch_1f1b_with_idle_cells.csv").read_text()).schedule
    assert [str(a) for a in imported.ranks[0]] == ["0F0", "0F1", "0B0", "0B1"]
    validate(imported)


def test_placement_is_inferred_from_where_stages_live():
    # stage 2 on rank 1 of 2 ranks is V placement (loop would put it on rank 0)
    schedule = read_csv("0F0,3F0,3B0,0B0\n1F0,2F0,2B0,1B0\n").schedule
    assert schedule.placement == "v"
    validate(schedule)


def test_grid_draws_ranks_as_columns_and_steps_as_rows():
    grid = build_schedule("1f1b", 2, 2).grid()
    lines = grid.splitlines()
    assert lines[0].split() == ["Rank", "0", "Rank", "1"]
    assert lines[1].split() == ["Step", "0:", "0F0", "1F0"]
    assert lines[3].split() == ["Step", "2:", "0B0", "1F1"]
    assert len(lines) == 5

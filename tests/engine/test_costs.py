"""The cost model as data ([Note: cost kinds] in engine/costs.py): one registry of cost kinds, one resolving
function for the default rules, one text grammar with its inverse, and a Costs that never rewrites itself."""

import math
import pickle
from dataclasses import FrozenInstanceError, replace

import numpy as np
import pytest

from engine import FAMILIES, Costs, build_schedule
from engine.costs import COST_KEYS, COST_KINDS, COST_OF_KIND, PAIR_KEY, Durations, resolved
from engine.ir import Kind
from engine.simulator import slot_durations


def test_every_kind_of_action_has_one_cost_and_the_pair_has_none():
    assert COST_KEYS == ("F", "B", "I", "W", "F&B")
    assert set(COST_OF_KIND) == set(Kind) and all(COST_OF_KIND[kind].key == kind.name for kind in Kind)
    assert [cost.key for cost in COST_KINDS if cost.kind is None] == [PAIR_KEY]
    assert all(cost.label.startswith(cost.key + " ") for cost in COST_KINDS)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({}, (1, 2, 1, 1, 3)),  # F = 1, B = 2F, I = W = B/2, F&B = F + B
        ({"F": 2}, (2, 4, 2, 2, 6)),
        ({"I": 1, "W": 3}, (1, 4, 1, 3, 5)),  # B = I + W
        ({"B": 3, "I": 1}, (1, 3, 1, 2, 4)),  # W = B − I
        ({"B": 3, "W": 1}, (1, 3, 2, 1, 4)),
        ({"F": 1, "B": 2, "F&B": 2.5}, (1, 2, 1, 1, 2.5)),
        ({"F": 1, "B": 2, "F&B": None}, (1, 2, 1, 1, 3)),  # None: not given
    ],
)
def test_the_default_rules(given, expected):
    durations = resolved(given)
    assert tuple(durations) == COST_KEYS and tuple(durations.values()) == expected
    assert Costs.of(given).durations == durations


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"I": 1}, "give both I and W, or B"),
        ({"B": 3, "I": 1, "W": 1}, "B must equal I + W: B=3, I=1, W=1, I+W=2"),
        ({"B": 1, "I": 2}, "B must equal I + W: B=1, I=2, W=-1"),
        ({"F": math.nan}, "cost forward must be a finite number ≥ 0, got nan"),
        ({"W": -1, "I": 1}, "cost weight-gradient backward must be a finite number ≥ 0, got -1"),
        ({"F": 1e308}, "cost B works out to inf from F=1e+308"),
        ({"X": 1}, "unknown cost kinds ['X']"),
    ],
)
def test_durations_that_do_not_add_up_are_refused_with_the_arithmetic(given, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("[", r"\[").replace("+", r"\+")):
        resolved(given)


def test_a_measured_row_keeps_zeros_for_kinds_its_stage_did_not_run():
    row = resolved({"F": 1, "B": 2, "I": 0, "W": 0}, measured=True)  # a 1F1B stage: B ran, I and W did not
    assert dict(row) == {"F": 1, "B": 2, "I": 0, "W": 0, "F&B": 3}
    with pytest.raises(ValueError, match="B must equal I"):
        resolved({"F": 1, "B": 2, "I": 0, "W": 0})


def test_costs_are_resolved_once_and_never_rewritten():
    costs = Costs.of({"F": 1, "I": 1, "W": 1}, comm=0.5)
    named = (costs.forward, costs.backward, costs.backward_input, costs.backward_weight, costs.overlapped)
    assert named == (1, 2, 1, 1, 3)  # read-only names for formulas that name a pass
    with pytest.raises(TypeError):
        costs.durations["F"] = 5  # type: ignore[index]
    with pytest.raises(FrozenInstanceError):
        costs.durations = resolved({})  # type: ignore[misc]
    with pytest.raises(ValueError, match="build it with Costs.of"):
        Costs({"F": 1.0, "B": 2.0})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="build it with Costs.of"):
        Costs(Durations({"F": 1.0}))
    with pytest.raises(ValueError, match="B must equal I \\+ W"):
        replace(costs, durations=Durations({"F": 1, "B": 5, "I": 1, "W": 1, "F&B": 2}))
    assert Costs() == Costs.of({"F": 1, "B": 2}) and hash(costs) == hash(Costs.of({"F": 1, "B": 2}, comm=0.5))
    assert pickle.loads(pickle.dumps(costs)) == costs


@pytest.mark.parametrize("text", ["F=1,B=2", "F=1,I=1,W=1,F&B=2.5", "F=0.1,B=0.30000000000000004", "f&b=2"])
def test_text_reads_back_as_the_same_costs(text):
    costs = Costs.parse(text)
    assert Costs.parse(costs.text()) == costs
    assert Costs.parse("F=1,I=1,W=1").text(("F", "I", "W")) == "F=1,I=1,W=1"


def test_the_per_stage_form_is_the_same_grammar_one_value_per_stage():
    costs = Costs.parse("F=1:2,I=1:1.5,W=0.5:1", num_stages=2, comm=0.5)
    assert costs.stage_costs is not None and costs.comm == 0.5
    assert [dict(row) for row in costs.stage_costs] == [
        {"F": 1, "B": 1.5, "I": 1, "W": 0.5, "F&B": 2.5},
        {"F": 2, "B": 2.5, "I": 1.5, "W": 1, "F&B": 4.5},
    ]
    assert Costs.parse(costs.text(), num_stages=2, comm=0.5) == costs
    measured = Costs.of(stage_costs=[{"F": 1, "B": 2, "I": 0, "W": 0}, {"F": 1, "B": 0, "I": 1, "W": 0.5}])
    assert measured.text() == "F=1:1,B=2:0,I=0:1,W=0:0.5,F&B=3:1"
    assert Costs.parse(measured.text(), num_stages=2) == measured
    with pytest.raises(ValueError, match="F has 2 values per stage, but the search has 4 stages"):
        Costs.parse("F=1:1,I=1:1,W=1:1", num_stages=4, where="the search")
    with pytest.raises(ValueError, match="is not a number"):
        Costs.parse("F=1:2")  # one value for all stages unless the caller has stages


def test_a_family_reads_b_or_i_and_w_and_f_and_b_only_when_it_overlaps():
    given = {"F": 1, "B": 3, "I": 1, "W": 2, "F&B": 2.5}
    assert tuple(FAMILIES["1f1b"].costs(given, comm=0.5).durations.values()) == (1, 3, 1.5, 1.5, 4)
    assert tuple(FAMILIES["zb-h1"].costs(given).durations.values()) == (1, 3, 1, 2, 4)
    assert tuple(FAMILIES["dualpipev"].costs(given).durations.values()) == (1, 3, 1, 2, 2.5)
    assert FAMILIES["dualpipev"].costs({**given, "F&B": None}).overlapped == 4  # None: no gain


def test_a_measured_pair_gains_the_mean_of_its_stages_f_and_b_gain():
    schedule = build_schedule("dualpipev", 4, 8)
    rows = [{"F": 1.0 + s / 4, "B": 2.0, "I": 1.0, "W": 1.0} for s in range(schedule.num_stages)]
    plain = slot_durations(schedule, Costs.of(stage_costs=rows))
    faster = slot_durations(schedule, Costs.of(stage_costs=[{**row, "F&B": row["F"] + 1.5} for row in rows]))
    difference = faster - plain
    assert np.isin(difference, [0.0, -0.5]).all() and (difference == -0.5).any()

"""The metrics registry (``app.text.metrics``): one record per metric, read by the cards and the lessons."""

import pytest

from app.text import glossary, metrics
from app.text.metrics import Metric
from engine import build_schedule, simulate


def test_every_card_is_defined_by_a_glossary_term_and_the_glossary_lists_the_cards_in_order():
    for metric in metrics.CARDS.values():
        assert metric.reads == "timeline" and metric.card
        assert metric.term in glossary.BY_NAME and metric.help == glossary.definition(metric.term)


def test_a_card_writes_its_value_in_its_format_and_the_time_unit_only_on_times():
    timeline = simulate(build_schedule("1f1b", 4, 8))
    assert metrics.CARDS["bubble_fraction"].shown(timeline, time_unit=" s") == f"{timeline.bubble_fraction:.1%}"
    assert metrics.CARDS["makespan"].shown(timeline, time_unit=" s") == f"{timeline.makespan:.4g} s"
    assert metrics.CARDS["transfers"].value(timeline) == timeline.num_transfers


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(reads="nowhere"), "reads 'nowhere'"),
        (dict(card="X", term="no such term"), "not in the glossary"),
        (dict(format="q"), "format"),
    ],
)
def test_a_malformed_metric_is_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        Metric(**({"name": "x", "reads": "timeline", "compute": lambda t: 0.0} | fields))


def test_a_name_is_unique_within_what_it_reads_and_plan_cards_are_plan_metrics():
    for source in metrics.SOURCES:
        names = [metric.name for metric in metrics.METRICS if metric.reads == source]
        assert len(names) == len(set(names)) == len(metrics.read_from(source))
    assert all(metric.reads == "plan" for metric in metrics.PLAN_CARDS.values())

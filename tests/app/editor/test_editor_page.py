"""The schedule editor through AppTest: the text simulated, a broken schedule shown with its grid."""

import pytest
from apptest_support import errors, metrics, open_app
from drawn import drawn_figures

from app.frame.lab_settings import LabSettings
from engine import Costs, build_schedule, simulate

pytestmark = pytest.mark.slow  # AppTest runs the whole app script per test


def test_editor_simulates_the_text_and_loads_a_family():
    at = open_app(page="views/editor/page.py")
    assert metrics(at)["Makespan"] == f"{simulate(build_schedule('1f1b', 4, 8)).makespan:.4g}"
    at.selectbox(key="ed_family").set_value("zb-h1")
    at.run()
    at.button(key="ed_load").click()
    at.run()
    sizes = (LabSettings().num_ranks, LabSettings().num_microbatches)  # the family at the sidebar's sizes
    assert at.text_area(key="ed_csv").value == build_schedule("zb-h1", *sizes).to_csv()
    expected = simulate(build_schedule("zb-h1", *sizes), Costs.of({"F": 1, "I": 1, "W": 1}))
    assert metrics(at)["Makespan"] == f"{expected.makespan:.4g}"


@pytest.mark.parametrize(
    "text, message",
    [
        ("0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n", "deadlock"),
        ("0F0,0B0\n1F0\n", "stage 1, micro-batch 0 has no backward"),
        ("hello\n", "cannot read"),
    ],
)
def test_editor_reports_a_broken_schedule_with_the_grid(text, message):
    at = open_app(page="views/editor/page.py")
    at.text_area(key="ed_csv").set_value(text)
    at.run()
    assert not at.exception and any(message in e for e in errors(at))
    if message != "cannot read":
        assert any("<-- here" in c.value for c in at.code)
    assert drawn_figures(at)  # the last version that ran is still drawn


def test_lab_settings_defaults_are_the_widgets_defaults():
    assert LabSettings().to_query()["costs"] == "F=1,B=2"

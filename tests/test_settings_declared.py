"""Every setting declared once (engine/options.py): the address bar, the widget and the CLI read one bound, so
a value one accepts the other cannot refuse; the app reaches the engine through its library, never its CLIs;
no function grows past a screen."""

import ast
import inspect
import re
from pathlib import Path

import pytest

from app.generator_code import generator_sources
from app.real_run_settings import RealRunSettings
from app.search_settings import SearchSettings
from app.settings import LabSettings
from app.your_run_settings import YourRunSettings
from engine import FAMILIES
from engine.options import Choice, Number, Whole
from engine.scale.request import PlanRequest

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = (LabSettings, SearchSettings, RealRunSettings, PlanRequest, YourRunSettings)
MAX_FUNCTION_LINES = 80


def _edges(codec):
    """(the highest value accepted, as text; the lowest refused above it, as text), or None without bounds."""
    if isinstance(codec, Whole):
        return str(codec.high), str(codec.high + 1)
    if isinstance(codec, Number):
        return f"{codec.high:g}", f"{codec.high * 1.5 + 1:g}"
    if isinstance(codec, Choice):
        return codec.write(codec.options[-1]), "not-an-option"
    return None


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda cls: cls.__name__)
def test_a_link_accepts_exactly_what_the_widget_offers(settings):
    """The widget draws ``option.codec``'s bounds (app/widgets.py); the link reads the same codec: its top
    value comes through, one past it is refused with the bound named, and the widget's check agrees."""
    for name, option in settings.options():
        edges = _edges(option.codec)
        if edges is None:
            continue
        top, beyond = edges
        taken, problems = settings.from_query({option.key: top})
        assert problems == [] and option.codec.write(getattr(taken, name)) == top, (option.key, problems)
        kept, problems = settings.from_query({option.key: beyond})
        assert len(problems) == 1 and problems[0].startswith(f"{option.key}=`{beyond}`: expected"), problems
        assert getattr(kept, name) == getattr(settings(), name)
        with pytest.raises(ValueError):
            option.codec.check(option.read(beyond) if not isinstance(option.codec, Choice) else beyond)


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda cls: cls.__name__)
def test_a_value_round_trips_through_the_link_and_the_widgets(settings):
    value = settings()
    again, problems = settings.from_query(value.to_query())
    assert (again.to_query(), problems) == (value.to_query(), [])  # a link carries what it shows
    back, problems = settings.from_widgets(value.widget_values())
    assert (back, problems) == (value, [])


def test_the_plan_limits_disagreement_is_gone():
    """A sequence above the old link bound (131,072) that the old widget allowed (1,000,000) now comes through a
    link, and the widget's bound is the link's."""
    taken, problems = PlanRequest.from_query({"seq": "200000", "global_batch": "5000000"})
    assert problems == [] and (taken.seq, taken.global_batch) == (200_000, 5_000_000)
    option = PlanRequest.option("seq")
    assert isinstance(option.codec, Whole) and option.widget == "number"


def test_non_ascii_digits_are_refused_not_read_as_ascii():
    taken, problems = SearchSettings.from_query({"ranks": "\u0663"})  # Arabic-Indic three
    assert taken.num_ranks == 4 and problems and "expected a whole number" in problems[0]


def test_no_app_module_imports_a_command_line_module():
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in (ROOT / "app").rglob("*.py")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"engine\.[a-z_.]*cli\b", line)
    ]
    assert offenders == []


def test_no_function_is_longer_than_a_screen():
    long = [
        f"{path.relative_to(ROOT)}:{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for folder in ("engine", "app")
        for path in (ROOT / folder).rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert long == []


@pytest.mark.parametrize("name", list(FAMILIES))
def test_the_code_toggle_shows_each_familys_own_generator_first(name):
    family = FAMILIES[name]
    sources = generator_sources(family)
    assert sources[0][1] == inspect.getsource(family.build)
    assert all("def " in source for _, source in sources) and len({n for n, _ in sources}) == len(sources)


def test_a_links_chunks_warn_only_for_a_family_that_takes_chunks():
    """Issue 36: /?schedule=gpipe&chunks=1 warned "expected 2 to 8; using 2" about a value GPipe does not use."""
    from app.settings import LabSettings

    assert LabSettings.from_query({"schedule": "gpipe", "chunks": "1"})[1] == []
    assert LabSettings.from_query({"schedule": "1f1b", "chunks": "99"})[1] == []
    problems = LabSettings.from_query({"schedule": "interleaved-1f1b", "chunks": "1"})[1]
    assert problems == ["chunks=`1`: expected a whole number from 2 to 8; using 2"]

"""Every setting declared once (engine/options.py): the address bar, the widget and the CLI read one bound, so
a value one accepts the other cannot refuse; the app reaches the engine through its library, never its CLIs;
no function grows past a screen."""

import argparse
import ast
import inspect
import re
from pathlib import Path

import pytest

from app.frame.lab_settings import LabSettings
from app.views.playground.generator_code import generator_sources
from app.views.real_run.settings import RealRunSettings
from app.views.search.settings import SearchSettings
from app.views.your_run.settings import YourRunSettings
from engine import FAMILIES
from engine.cli import build_parser
from engine.options import EXTRAS, Choice, Number, Whole
from engine.runtime.settings import RunSettings
from engine.scale.cli import SWITCHED_OFF, PlanStart
from engine.scale.request import PlanRequest
from engine.search.request import REQUIRED as SEARCH_REQUIRED
from engine.search.request import SearchRequest
from engine.settings import SimulateSettings
from engine.terminal import UsageError
from engine.traces.settings import TraceSettings

ROOT = Path(__file__).resolve().parents[2]
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
    """The widget draws ``option.codec``'s bounds (app/frame/widgets.py); the link reads the same codec: its top
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


def test_a_plan_link_takes_what_the_plan_widgets_take():
    """A sequence of 200,000 and a global batch of 5,000,000 come through a link, and the widget's bound is the
    link's."""
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
    """/?schedule=gpipe&chunks=1 says nothing about chunks, which GPipe does not use (no "expected 2 to 8; using
    2"); a family that interleaves still hears about a value below its bound."""
    from app.frame.lab_settings import LabSettings

    assert LabSettings.from_query({"schedule": "gpipe", "chunks": "1"})[1] == []
    assert LabSettings.from_query({"schedule": "1f1b", "chunks": "99"})[1] == []
    problems = LabSettings.from_query({"schedule": "interleaved-1f1b", "chunks": "1"})[1]
    assert problems == ["chunks=`1`: expected a whole number from 2 to 8; using 2"]


# -- the command line: every flag from a declaration --------------------------------------------------------------
COMMANDS = {"simulate": SimulateSettings, "run": RunSettings, "search": SearchRequest, "trace": TraceSettings}
"""Each command and the settings class its flags derive from (``plan``'s: ``PlanRequest``, tested below)."""
NEEDED = {"search": ["--ranks", "1", "--microbatches", "1", "--memory", "1"], "trace": ["rank0.json"]}
"""What a command must be given besides the flag under test, for argparse to get as far as that flag."""


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {action.dest: action for action in parser._actions if not isinstance(action, argparse._HelpAction)}


@pytest.mark.parametrize("command", COMMANDS)
def test_each_declared_setting_is_a_flag_with_the_declared_default(command):
    settings, actions = COMMANDS[command], _actions(_subparsers()[command])
    required = set(SEARCH_REQUIRED) if command == "search" else set()
    for name, option in settings.options():
        action = actions[name]
        assert action.option_strings == [option.cli_flag], name
        assert action.required == (name in required), name
        assert action.default == (None if name in required else settings.default(name)), name
        if isinstance(option.codec, Choice) and action.choices is not None:
            assert list(action.choices) == [option.codec.write(value) for value in option.codec.options], name


@pytest.mark.parametrize("command", [*COMMANDS, "plan"])
def test_a_command_takes_nothing_but_its_settings_and_the_shared_extras(command):
    """No hand-written flag: every argument is a declared setting or one of ``EXTRAS``, with its help."""
    settings = [PlanRequest, PlanStart] if command == "plan" else [COMMANDS[command]]
    declared_names = {name for cls in settings for name, _ in cls.options()}
    for name, action in _actions(_subparsers()[command]).items():
        if name not in declared_names:
            assert name in EXTRAS and action.help == EXTRAS[name].help, (command, name)


def test_plan_has_a_flag_for_every_setting_of_its_request_and_none_takes_a_default():
    """``plan`` starts from a preset: a flag left out is None, never the declaration's default."""
    actions = _actions(_subparsers()["plan"])
    for name, option in PlanRequest.options():
        assert actions[name].default is None, name
        flag = option.cli_flag if name not in SWITCHED_OFF else "--no-" + option.cli_flag.removeprefix("--")
        assert actions[name].option_strings == [flag], name


def test_add_argument_is_called_only_where_flags_are_derived():
    """Every command's flags come from ``engine.options``' two helpers (``add_flags``, ``add_extras``)."""
    calls = {
        str(path.relative_to(ROOT)): path.read_text().count("add_argument(")
        for path in (ROOT / "engine").rglob("*.py")
        if "add_argument(" in path.read_text()
    }
    assert calls == {"engine/options.py": 2}


@pytest.mark.parametrize("command", COMMANDS)
def test_a_flag_takes_its_bound_and_refuses_one_past_it_naming_the_bound(command):
    settings, parser = COMMANDS[command], build_parser()
    for name, option in settings.options():
        codec = option.codec
        if not isinstance(codec, Whole | Number):
            continue
        given = [command, *NEEDED.get(command, []), option.cli_flag]
        if codec.high == float("inf"):  # an Amount: any finite number from its low end
            top, beyond = "1e300", "inf"
        else:
            top, beyond = _edges(codec)
        assert getattr(parser.parse_args([*given, top]), name) == option.read(top), name
        for refused in (beyond, "x"):
            with pytest.raises(UsageError) as error:
                parser.parse_args([*given, refused])
            assert str(error.value) == f"argument {option.cli_flag}: {codec.expected()}, got {refused}", name


def test_the_search_commands_defaults_are_the_search_pages_but_for_its_chunks():
    """One declaration per setting (``engine.search.options``), read by the Search page and the command line; the
    defaults agree too, except where the command line starts its chunks (at the placement's own, where the page
    starts at auto, which would set ``--placement`` aside and refuse per-stage ``--costs``)."""
    page, command = SearchSettings(), _actions(_subparsers()["search"])
    for name, option in SearchSettings.options():
        assert SearchRequest.option(name).key == option.key, name
        assert SearchRequest.option(name).cli_flag == command[name].option_strings[0], name
        if name not in (*SEARCH_REQUIRED, "chunks"):
            assert command[name].default == getattr(page, name), name
    assert SearchRequest.option("chunks").codec.options == SearchSettings.option("chunks").codec.options
    assert (page.chunks, command["chunks"].default) == ("auto", None)

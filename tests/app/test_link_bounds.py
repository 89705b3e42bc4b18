"""No link makes any page show an exception. Every URL key of every page is driven out of its bounds
(below, above, a non-ASCII digit, a Markdown payload); each comes back as a warning naming the key, the page
draws with the default, and nothing is rendered as markup."""

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app.frame.lab_settings import LabSettings
from app.frame.state import PROJECTOR_KEY
from app.views.real_run.settings import RealRunSettings
from app.views.search.settings import SearchSettings
from app.views.your_run.settings import YourRunSettings
from engine.codecs import Choice, Flag, Number, Whole
from engine.scale.request import PlanRequest

APP = str(Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py")
PAGES = {
    "views/playground/page.py": LabSettings,
    "views/compare/page.py": LabSettings,
    "views/search/page.py": SearchSettings,
    "views/plan/page.py": PlanRequest,
    "views/your_run/page.py": YourRunSettings,
    "views/real_run/page.py": RealRunSettings,
}
ARABIC_THREE = "\u0663"
MARKUP = "**bold**[x](http://e.example)"
BAD_PROJECTOR = {"below": "-1", "above": "2", "digit": "\u0661", "markup": MARKUP}
"""The projector switch takes 1, 0, true or false; Arabic-Indic one is not 1."""


def bad_value(codec, kind: str) -> str | None:
    """A value outside ``codec``'s bounds of the given kind, or None where the kind does not apply."""
    if kind == "markup":
        return MARKUP
    if kind == "digit":
        return ARABIC_THREE if isinstance(codec, (Whole, Number)) else None
    if isinstance(codec, Whole):
        return str(codec.low - 1) if kind == "below" else str(codec.high + 1)
    if isinstance(codec, Number):
        return ("-1" if codec.low <= 0 else f"{codec.low / 2:g}") if kind == "below" else "1e308"
    if isinstance(codec, (Choice, Flag)):
        return "nonsense" if kind == "below" else None
    return None


def opened(page: str, query: dict[str, str]) -> AppTest:
    """A visitor following a link: to the default page directly, to another page from the default one."""
    at = AppTest.from_file(APP, default_timeout=120)
    if page == "views/playground/page.py":
        at.query_params.update(query)
        at.run()
        return at
    at.run()
    at.query_params.clear()
    at.query_params.update(query)
    at.switch_page(page)
    at.run()
    return at


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(PAGES))
@pytest.mark.parametrize("kind", ["below", "above", "digit", "markup"])
def test_every_key_of_every_page_out_of_bounds_is_a_warning_never_an_exception(page, kind):
    settings = PAGES[page]
    query = {}
    for _, option in settings.options():
        if page == "views/compare/page.py" and option.key == "schedule":
            continue  # Compare reads "schedules" instead (its own key, tested in test_app)
        value = bad_value(option.codec, kind)
        if value is not None:
            query[option.key] = value
    query[PROJECTOR_KEY] = BAD_PROJECTOR[kind]  # every page reads it
    at = opened(page, query)
    assert not at.exception, [e.value for e in at.exception]
    warned = " ".join(w.value for w in at.warning)
    quiet = [key for key in query if f"{key}=`" not in warned and f"{key}=" not in warned]
    assert not quiet, f"no warning names {quiet}: {warned[:600]}"
    assert_no_markup(at)


def assert_no_markup(at: AppTest) -> None:
    for element in [*at.markdown, *at.warning, *at.error, *at.caption, *at.info]:
        outside_code = re.sub(r"`[^`]*`", "", str(element.value))
        assert "[x](http" not in outside_code and "**bold**" not in outside_code, element.value  # never markup


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["below", "above", "digit", "markup"])
def test_the_lessons_and_the_editors_keys_out_of_bounds_are_warnings(kind):
    lesson = {"below": "0", "above": "99", "digit": ARABIC_THREE, "markup": MARKUP}[kind]
    at = opened("views/lessons/page.py", {"lesson": lesson, "step": lesson, PROJECTOR_KEY: BAD_PROJECTOR[kind]})
    assert not at.exception, [e.value for e in at.exception]
    warned = " ".join(w.value for w in at.warning)
    assert "does not exist; showing the first lesson" in warned and f"{PROJECTOR_KEY}=" in warned, warned
    assert at.sidebar.radio[0].value == 1  # lesson 1, not lesson 3 read from an Arabic-Indic digit
    assert_no_markup(at)
    at = opened("views/editor/page.py", {PROJECTOR_KEY: BAD_PROJECTOR[kind]})
    assert not at.exception, [e.value for e in at.exception]
    assert f"{PROJECTOR_KEY}=" in " ".join(w.value for w in at.warning)
    assert_no_markup(at)

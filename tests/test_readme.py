"""The docs are a contract: the table of link keys (docs/links.md) and the table of families (docs/schedules.md)
must name what the code has."""

import re
from pathlib import Path

from app.frame.lab_settings import LAB_KEYS
from app.frame.state import PROJECTOR_KEY
from app.views.compare.settings import COMPARE_KEYS
from app.views.real_run.settings import RUN_KEYS
from app.views.search.settings import SEARCH_KEYS
from app.views.your_run.settings import YOUR_RUN_KEYS
from engine import FAMILIES
from engine.scale.request import PLAN_KEYS

DOCS = Path(__file__).parents[1] / "docs"
LINKS = (DOCS / "links.md").read_text()
SCHEDULES = (DOCS / "schedules.md").read_text()


def section(title: str) -> str:
    """The text under the heading ``title`` up to the next heading of any level."""
    start = LINKS.index(title)
    following = re.search(r"^#{1,6} ", LINKS[start + len(title) :], flags=re.MULTILINE)
    return LINKS[start : start + len(title) + following.start()] if following else LINKS[start:]


def test_every_link_key_of_every_page_is_in_the_links_table():
    table = section("# Links you can share")
    named = set(re.findall(r"`([a-z0-9_]+)`", table))
    keys = {
        *LAB_KEYS,
        *COMPARE_KEYS,
        *RUN_KEYS,
        *SEARCH_KEYS,
        *PLAN_KEYS,
        *YOUR_RUN_KEYS,
        "lesson",
        "step",
        PROJECTOR_KEY,
    }
    assert keys - named == set(), "keys missing from the links table (docs/links.md)"


def test_every_family_has_a_row_in_the_family_table():
    first_cells = re.findall(r"^\| ([^|]+) \|", SCHEDULES, flags=re.MULTILINE)
    rows = {name for cell in first_cells for name in re.findall(r"`([a-z0-9-]+)`", cell)}
    assert set(FAMILIES) - rows == set(), "families missing from the family table (docs/schedules.md)"

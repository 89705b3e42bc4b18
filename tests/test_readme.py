"""The README is a contract: its table of link keys and its table of families must name what the code has."""

import re
from pathlib import Path

from app.real_run_settings import RUN_KEYS
from app.search_settings import SEARCH_KEYS
from app.settings import COMPARE_KEYS, LAB_KEYS
from app.state import PROJECTOR_KEY
from app.your_run_settings import YOUR_RUN_KEYS
from engine import FAMILIES
from engine.scale.request import PLAN_KEYS

README = (Path(__file__).parents[1] / "README.md").read_text()


def section(title: str) -> str:
    """The text under the heading ``title`` up to the next heading of any level."""
    start = README.index(title)
    following = re.search(r"^#{1,6} ", README[start + len(title) :], flags=re.MULTILINE)
    return README[start : start + len(title) + following.start()] if following else README[start:]


def test_every_link_key_of_every_page_is_in_the_links_table():
    table = section("### Links you can share")
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
    assert keys - named == set(), "keys missing from the README's links table"


def test_every_family_has_a_row_in_the_family_table():
    first_cells = re.findall(r"^\| ([^|]+) \|", README, flags=re.MULTILINE)
    rows = {name for cell in first_cells for name in re.findall(r"`([a-z0-9-]+)`", cell)}
    assert set(FAMILIES) - rows == set(), "families missing from the README's family table"

"""The app's pages, and the sidebar links between them: each link carries the page's last query (its
settings), so following it is one history entry and the page opens as the visitor left it."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import streamlit as st

from app.frame import state
from app.frame.lab_settings import LabSettings
from app.frame.projector import PROJECTOR, projector_query
from app.text import glossary
from app.views.compare.settings import CompareSettings
from app.views.real_run.settings import RealRunSettings
from app.views.search.settings import SearchSettings
from app.views.your_run.settings import YourRunSettings
from engine.scale.request import PlanRequest


@dataclass(frozen=True)
class PageEntry:
    key: str
    """The page's state prefix (``pg``, ``ls``…), also the key its last query is kept under."""
    folder: str
    """The page's folder under ``app/views/``: its ``page.py`` is the script the router runs."""
    title: str
    icon: str
    url_path: str
    """The page's address ("" for the Playground, the default page)."""
    default_query: Callable[[], dict[str, str]]
    """What a link to the page carries before the visitor has been there."""

    @property
    def path(self) -> str:
        """The page's script, relative to the entry script (``app/``), as Streamlit's router names it."""
        return f"views/{self.folder}/page.py"

    def streamlit_page(self) -> st.Page:
        """The page for the router, without an icon: a page's Material icon becomes the browser tab's icon,
        which the browser fetches from fonts.gstatic.com — a request to another host on every visit. The
        sidebar's links keep their icons (drawn from the bundled icon font)."""
        if not self.url_path:
            return st.Page(self.path, title=self.title, default=True)
        return st.Page(self.path, title=self.title, url_path=self.url_path)


def defaults_of(settings: Callable[[], Any]) -> Callable[[], dict[str, str]]:
    """A link to a page the visitor has not opened yet: its settings class's defaults."""
    return lambda: settings().to_query()


def lessons_start() -> dict[str, str]:
    return {"lesson": "1", "step": "1"}


# The page registry: one line per page, in the sidebar's order. The router, the sidebar's links and the tests
# that visit every page all read it.
# fmt: off
PAGES = (
    PageEntry("pg", "playground", "Playground", ":material/science:", "", defaults_of(LabSettings)),
    PageEntry("ls", "lessons", "Lessons", ":material/school:", "lessons", lessons_start),
    PageEntry("cp", "compare", "Compare", ":material/compare_arrows:", "compare", defaults_of(CompareSettings)),
    PageEntry("ed", "editor", "Schedule editor", ":material/edit_note:", "editor", dict),
    PageEntry("sr", "search", "Search a schedule", ":material/manage_search:", "search", defaults_of(SearchSettings)),
    PageEntry("pl", "plan", "Plan at real scale", ":material/dns:", "plan", defaults_of(PlanRequest)),
    PageEntry("yr", "your_run", "Your run", ":material/upload_file:", "your-run", defaults_of(YourRunSettings)),
    PageEntry("rr", "real_run", "Real run", ":material/memory:", "real-run", defaults_of(RealRunSettings)),
)
# fmt: on
BY_KEY = {page.key: page for page in PAGES}


def sidebar_links() -> None:
    """One link per page, with the settings it last showed (and the projector switch as it is now), then the
    glossary."""
    projector = bool(st.session_state.get(PROJECTOR, False))
    with st.sidebar:
        for page in PAGES:
            query = {k: v for k, v in state.page_query(page.key, page.default_query()).items() if k != "projector"}
            st.page_link(page.path, label=page.title, icon=page.icon, query_params=query | projector_query(projector))
        glossary_panel()
        st.divider()


def glossary_panel() -> None:
    """The glossary, one click away on every page (``app/text/glossary.py``: each term in one sentence)."""
    with st.expander("Glossary", icon=":material/menu_book:"):
        st.markdown(glossary.as_markdown())


APP_LINK = re.compile(r"\]\((/[^)\s?#]*)(\?[^)\s#]*)?\)")
"""A Markdown link to a page of the app: ``[Your run](/your-run)``, ``[a lesson](/lessons?lesson=2)``."""


def keep_projector(markdown: str) -> str:
    """``markdown`` with its links to the app's pages opening them in projector mode where this page is in it, as
    ``link_to`` does: a lesson's text may link a page in its words."""
    if not st.session_state.get(PROJECTOR, False):
        return markdown

    def projected(match: re.Match) -> str:
        path, query = match.group(1), match.group(2) or ""
        return f"]({path}{query}{'&' if query else '?'}{urlencode(projector_query(True))})"

    return APP_LINK.sub(projected, markdown)


def link_to(page_key: str, query: dict[str, str], label: str, icon: str | None = None) -> None:
    """A link to another page of the app that opens it with ``query`` (in this session, as one history entry), in
    projector mode where this page is (a teacher following a lesson's link stays on the projected layout)."""
    page = BY_KEY[page_key]
    projector = projector_query(bool(st.session_state.get(PROJECTOR, False)))
    st.page_link(page.path, label=label, icon=icon, query_params=query | projector)

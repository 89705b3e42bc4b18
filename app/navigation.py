"""The app's pages, and the sidebar links between them: each link carries the page's last query (its
settings), so following it is one history entry and the page opens as the visitor left it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

from engine.scale.request import PlanRequest

from . import glossary, state
from .controls import PROJECTOR, projector_query
from .real_run_settings import RealRunSettings
from .search_settings import SearchSettings
from .settings import CompareSettings, LabSettings
from .your_run_settings import YourRunSettings


@dataclass(frozen=True)
class PageEntry:
    key: str
    """The page's state prefix (``pg``, ``ls``…), also the key its last query is kept under."""
    path: str
    """The page's file, relative to the entry script."""
    title: str
    icon: str
    url_path: str
    """The page's address ("" for the Playground, the default page)."""
    default_query: Callable[[], dict[str, str]]
    """What a link to the page carries before the visitor has been there."""

    def streamlit_page(self) -> st.Page:
        """The page for the router, without an icon: a page's Material icon becomes the browser tab's icon,
        which the browser fetches from fonts.gstatic.com — a request to another host on every visit. The
        sidebar's links keep their icons (drawn from the bundled icon font)."""
        if not self.url_path:
            return st.Page(self.path, title=self.title, default=True)
        return st.Page(self.path, title=self.title, url_path=self.url_path)


PAGES = (
    PageEntry("pg", "views/playground.py", "Playground", ":material/science:", "", lambda: LabSettings().to_query()),
    PageEntry(
        "ls", "views/lessons.py", "Lessons", ":material/school:", "lessons", lambda: {"lesson": "1", "step": "1"}
    ),
    PageEntry(
        "cp",
        "views/compare.py",
        "Compare",
        ":material/compare_arrows:",
        "compare",
        lambda: CompareSettings().to_query(),
    ),
    PageEntry("ed", "views/editor.py", "Schedule editor", ":material/edit_note:", "editor", dict),
    PageEntry(
        "sr",
        "views/search.py",
        "Search a schedule",
        ":material/manage_search:",
        "search",
        lambda: SearchSettings().to_query(),
    ),  # fmt: skip
    PageEntry("pl", "views/plan.py", "Plan at real scale", ":material/dns:", "plan", lambda: PlanRequest().to_query()),
    PageEntry(
        "yr",
        "views/your_run.py",
        "Your run",
        ":material/upload_file:",
        "your-run",
        lambda: YourRunSettings().to_query(),
    ),
    PageEntry(
        "rr", "views/real_run.py", "Real run", ":material/memory:", "real-run", lambda: RealRunSettings().to_query()
    ),
)
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
    """The glossary, one click away on every page (``app/glossary.py``: each term in one sentence)."""
    with st.expander("Glossary", icon=":material/menu_book:"):
        st.markdown(glossary.as_markdown())


def link_to(page_key: str, query: dict[str, str], label: str, icon: str | None = None) -> None:
    """A link to another page of the app that opens it with ``query`` (in this session, as one history entry)."""
    page = BY_KEY[page_key]
    st.page_link(page.path, label=label, icon=icon, query_params=query)

"""Entry point: a thin router; every page lives in app/views/ (a page's body is one function, bind → engine →
render). The sidebar's links carry each page's last settings, so moving between pages is one history entry
and Back returns to the previous view in one step ([Note: the URL follows the widgets] in app/frame/state.py).

Not app/pages/: Streamlit treats a pages/ folder beside the entry script as its older automatic multipage
layout, and a direct link such as /real-run then runs the page without this router (seen on 1.67)."""

import streamlit as st

from app.charts.style import PAGE_CSS, PAGE_CSS_ID
from app.frame.clicker import clicker_script
from app.frame.phone import phone_script
from app.views.navigation import PAGES, sidebar_links
from engine.fast_walk import server_mode
from engine.runtime.workdirs import sweep


@st.cache_resource
def folders_of_killed_runs_removed() -> list[str]:
    """Once per server: a run killed by SIGKILL (or the out-of-memory killer) could not remove its folder; the
    next run would sweep it, but a server that never runs again should not keep it either."""
    return sweep()


server_mode()  # a server walks many schedules: Numba's compiled walk from the first large one (engine.fast_walk)

# no page_icon: a Material icon is fetched from fonts.gstatic.com, a request to another host on every visit
st.set_page_config(page_title="Pipeline-parallelism lab", layout="wide")
current = st.navigation([page.streamlit_page() for page in PAGES], position="hidden")
st.html(
    f'<style id="{PAGE_CSS_ID}">{PAGE_CSS}</style>{clicker_script()}{phone_script()}', unsafe_allow_javascript=True
)  # + keys, drawer
sidebar_links()
folders_of_killed_runs_removed()
current.run()

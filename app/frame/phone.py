"""A phone's sidebar is a drawer over the page (300 of 390 px): Streamlit leaves it open after a page link in it is
tapped, so the page the visitor asked for stays covered. This script closes the drawer after such a tap, as a
phone's navigation drawer does; on a wider screen the sidebar sits beside the page and is left alone.

A script in the page's own document (``st.html`` with JavaScript allowed), registered once per browser tab, like
``clicker.py``'s."""

import json

DRAWER_BELOW_PX = 700
"""Below this width Streamlit draws the sidebar over the page (``app.charts.style.PAGE_CSS``'s phone layout)."""

_SCRIPT = """
(() => {
  if (window.__pplabPhone) return;
  window.__pplabPhone = true;
  document.addEventListener('click', (event) => {
    if (window.innerWidth >= %(below)s) return;
    const link = event.target.closest && event.target.closest('[data-testid="stSidebar"] a[href]');
    if (!link) return;
    // after the link has done its work: the collapse button closes the drawer
    setTimeout(() => {
      const close = document.querySelector('[data-testid="stSidebarCollapseButton"] button');
      if (close) close.click();
    }, 50);
  }, true);
})();
"""


def phone_script() -> str:
    """The ``<script>`` element to put in the page once per run."""
    return "<script>" + _SCRIPT % {"below": json.dumps(DRAWER_BELOW_PX)} + "</script>"

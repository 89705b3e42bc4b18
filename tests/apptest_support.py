"""What the pages' AppTests share: opening the app as a visitor opens a link, switching pages as the browser
does, and reading the page's errors, cards and figures."""

import base64
import re
from pathlib import Path

import numpy as np
from drawn import drawn_figures
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py")


def figure(at, index=0) -> dict:
    return drawn_figures(at)[index]


def values(array) -> list:
    """Plotly sends numeric arrays as {"dtype": "i8", "bdata": base64}; lists stay lists."""
    if isinstance(array, dict) and "bdata" in array:
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=np.dtype(array["dtype"])).tolist()
    return list(array)


def errors(at) -> list[str]:
    """The page's error messages as the visitor reads them (the Markdown escapes of app/codec.plain removed)."""
    return [re.sub(r"\\(.)", r"\1", e.value).replace("\u200b", "") for e in at.error]


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def go_to(at: AppTest, page: str) -> AppTest:
    """Switch page as the browser does: Streamlit's navigation clears the address bar's query."""
    at.query_params.clear()
    at.switch_page(page)
    return at.run()


def open_app(query: dict | None = None, page: str | None = None) -> AppTest:
    """A visitor opening a link: ``/?query`` or, with ``page``, ``/<page>?query`` (AppTest starts on the default
    page, so the link is followed from there, as a link to another page is)."""
    at = AppTest.from_file(APP, default_timeout=60)
    if query and not page:
        at.query_params.update(query)
    at.run()
    if page:
        at.query_params.clear()
        at.query_params.update(query or {})
        at.switch_page(page)
        at.run()
    assert not at.exception, at.exception
    return at


def expected_cards(timeline) -> dict[str, str]:
    summary = timeline.summary()
    return {
        "Makespan": f"{summary['makespan']:.4g}",
        "Bubble fraction": f"{summary['bubble_fraction']:.1%}",
        "Bubble ratio": f"{summary['bubble_ratio']:.3f}",
        "Peak memory": f"{max(summary['peak_memory']):.3g}",
        "Transfers": f"{summary['transfers']:,}",
    }

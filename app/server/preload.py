"""What the pages import, imported once when the server starts (``app/serve.py``), not by the first visitor.

Streamlit runs a page as a script on the first visit, and that visit paid for the lab's imports — pandas,
Plotly's figure classes, the engine — 0.77 s on this host, which the first chart of a visit to a server just
started waited for. The list is read from the pages' own import lines, so a page that gains an import gains it here;
the pages themselves are not imported (importing one would run it).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

APP = Path(__file__).resolve().parents[1]
ENTRY = APP / "streamlit_app.py"
VIEWS = APP / "views"


def imported_by(path: Path) -> list[str]:
    """The modules ``path`` imports at its top level (``import a.b`` and ``from a.b import c``), in order."""
    names: list[str] = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return list(dict.fromkeys(names))


def page_modules() -> list[str]:
    """Every module the router and the pages import, once each."""
    scripts = [ENTRY, *sorted(VIEWS.glob("*/page.py"))]
    return list(dict.fromkeys(name for script in scripts for name in imported_by(script)))


def preload() -> list[str]:
    """Import them all; returns their names."""
    names = page_modules()
    for name in names:
        importlib.import_module(name)
    return names

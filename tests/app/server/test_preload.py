"""app/server/preload.py: the server imports what the pages import before it listens, read from the pages' own
import lines, without running a page."""

import re
import subprocess
import sys
from pathlib import Path

from app.server.preload import VIEWS, imported_by, page_modules

ROOT = Path(__file__).resolve().parents[3]


def test_top_level_imports_are_read_in_order_once(tmp_path):
    script = tmp_path / "page.py"
    script.write_text(
        "import json\nimport a.b as c, os\nfrom x.y import z\nfrom . import near\nfrom json import loads\n"
        "def later():\n    import inside\n"
    )
    assert imported_by(script) == ["json", "a.b", "os", "x.y"]


def test_every_module_a_page_names_is_listed():
    """Against the pages' text, read with a regular expression rather than the parser."""
    listed = set(page_modules())
    for page in VIEWS.glob("*/page.py"):
        named = re.findall(r"^(?:from ([\w.]+) import|import ([\w.]+))", page.read_text(), re.MULTILINE)
        assert {a or b for a, b in named} <= listed, page.parent.name
    assert not any(name.endswith(".page") for name in listed)  # a page is a script, run by the router only


def test_preloading_imports_the_pages_libraries_and_runs_no_page():
    code = (
        "import sys\nfrom app.server.preload import preload\nnames = preload()\n"
        "print(all(n in sys.modules for n in names), 'plotly.graph_objects' in sys.modules, 'pandas' in sys.modules,"
        " any(m.startswith('app.views') and m.endswith('.page') for m in sys.modules), 'torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["True", "True", "True", "False", "False"], done.stderr[-2000:]
    assert "ScriptRunContext" not in done.stderr  # no page ran (a page outside a server run warns so)

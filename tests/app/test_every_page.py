"""Every page through AppTest: opening one never imports torch into the server."""

from pathlib import Path

import pytest
from apptest_support import APP

from app.views.navigation import PAGES

pytestmark = pytest.mark.slow  # AppTest runs the whole app script per test


PAGE_FILES = [page.path for page in PAGES]  # the page registry: a new page is checked as soon as it is registered
TORCH_CHECK = """
import sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({app!r}, default_timeout=60)
at.run()
if {page!r} != {default!r}:
    at.switch_page({page!r})
    at.run()
assert not at.exception, at.exception
print("torch" in sys.modules)
"""


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGE_FILES)
def test_opening_a_page_does_not_import_torch_into_the_server(page):
    """Only pressing Run loads PyTorch, and then in a child process (app/server/real_run_jobs.py)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", TORCH_CHECK.format(app=APP, page=page, default=PAGES[0].path)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=Path(APP).parents[1],
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "False", f"{page} imported torch"

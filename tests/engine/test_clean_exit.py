"""A process that used the library exits normally. A CP-SAT thread still running when pytest's process
ended aborted it ("terminate called without an active exception", status 134) after every test had passed, so
a clean clone's CI failed; here the timing tier's in-process searches run together in a subprocess exactly as
``make test`` runs that tier, and its exit status is the assertion."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IN_PROCESS_SEARCHES = ["tests/engine/search/test_search.py", "tests/engine/search/test_search_interrupts.py"]
"""The timing tier's files whose tests run CP-SAT inside the pytest process, each stopped at its time limit."""


@pytest.mark.slow
@pytest.mark.timing  # its searches are timed: run alone, like the tier it repeats
def test_the_timing_tiers_searches_run_together_and_the_process_exits_with_status_0():
    command = [sys.executable, "-m", "pytest", "-p", "no:xdist", "-m", "timing", "-q", *IN_PROCESS_SEARCHES]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert "terminate called" not in output and "Aborted" not in output, output[-3000:]
    assert done.returncode == 0, output[-3000:]
    assert " passed" in done.stdout.strip().splitlines()[-1]

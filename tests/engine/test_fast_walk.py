"""The compiled walk (engine.fast_walk) against the Python walk it replaces: the same starts, ends and visiting
order to the last bit, for every family, random costs, transfer times and per-hop delays; a deadlock still named
by the Python walk."""

import numpy as np
import pytest

from engine import FAMILIES, build_schedule
from engine import walk as walks
from engine.dependencies import ScheduleError, compiled
from engine.fast_walk import FIRST_USE_SLOTS, fast_walk, load
from engine.ir import Action, Schedule
from engine.simulator import hop_delays
from engine.walk import walk

pytestmark = pytest.mark.skipif(not load(), reason="Numba cannot load here")


def python_walk(schedule, durations, comm):
    saved = walks.fast_walk
    walks.fast_walk = lambda *args: None
    try:
        return walk(schedule, durations, comm)
    finally:
        walks.fast_walk = saved


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_compiled_walk_is_the_python_walk(family):
    rng = np.random.default_rng(7)
    for p, m in ((2, 4), (4, 8), (3, 9)):
        chunks = 2 if FAMILIES[family].takes_chunks else None
        try:
            schedule = build_schedule(family, p, m, chunks)
        except ValueError:
            continue  # a family that does not take this size (said elsewhere)
        c = compiled(schedule)
        durations = rng.random(c.num_slots)
        for comm in (0.0, 0.37, hop_delays(schedule, tuple(rng.random(p)))):
            delay = c.neighbour_is_remote * np.asarray(comm, dtype=float)
            fast = fast_walk(c, durations, delay)
            slow = python_walk(schedule, durations, comm)
            assert fast is not None
            for got, expected in zip(fast, slow, strict=True):
                assert np.array_equal(got, expected)


def test_a_large_schedule_takes_the_compiled_walk_and_a_deadlock_the_python_one():
    schedule = build_schedule("zb-h1", 32, 1056)
    assert compiled(schedule).num_slots >= FIRST_USE_SLOTS
    durations = np.ones(compiled(schedule).num_slots)
    assert np.array_equal(walk(schedule, durations).ends, python_walk(schedule, durations, 0.0).ends)
    order = (("0B0", "0F0"), ("1F0", "1B0"))  # rank 0's backward first: it waits on rank 1, which waits on it
    two_wait = Schedule("stuck", 2, 1, 1, "loop", tuple(tuple(Action.parse(a) for a in rank) for rank in order))
    assert fast_walk(compiled(two_wait), np.ones(4), np.zeros(4)) is None
    with pytest.raises(ScheduleError, match="deadlock"):
        walk(two_wait)


def test_a_one_shot_process_walks_in_python_until_numba_would_pay_its_load():
    """A fresh process: the command line's ZB-H1 at 32 × 1,024 (98,304 slots, under ``FIRST_USE_SLOTS``) walks in
    Python without importing Numba; a second walk of it brings the process past the threshold and loads it. A
    server (``server_mode``) loads it at its first schedule of 20,000 slots."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from engine import UNIT, build_schedule, simulate\n"
        "from engine import fast_walk\n"
        "if sys.argv[1] == 'server':\n"
        "    fast_walk.server_mode()\n"
        "schedule = build_schedule('zb-h1', 32, int(sys.argv[2]))\n"
        "simulate(schedule, UNIT)\n"
        "once = 'numba' in sys.modules\n"
        "simulate(schedule, UNIT)\n"
        "print(once, 'numba' in sys.modules)\n"
    )

    def loaded(mode: str, microbatches: int) -> str:
        done = subprocess.run([sys.executable, "-c", probe, mode, str(microbatches)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert loaded("cli", 1024) == "False True"  # 98,304 slots: Python, then 196,608 walked in all: Numba
    assert loaded("server", 256) == "True True"  # 24,576 slots ≥ 20,000
    assert loaded("cli", 16) == "False False"  # 1,536 slots, twice

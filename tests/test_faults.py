"""Faults a hostile visitor (or a bad day) brings to a distributed run, each seen on this machine before:
a rank stopped or killed mid-run must be named, within the time-out, and every process must be gone after;
Ctrl-C is one line and status 130."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.slow

# long enough to signal a rank mid-run (about 16 s here): 2 ranks on 2 cores, 100 measured steps
RUN = [
    sys.executable,
    "-m",
    "engine",
    "run",
    "--backend",
    "distributed",
    "--ranks",
    "2",
    "--microbatches",
    "8",
    "--layers",
    "8",
    "--hidden",
    "512",
    "--batch",
    "512",
    "--repeats",
    "100",
    "--quiet",
]


def rank_processes(parent: int) -> list[int]:
    """The spawned rank processes of ``parent``, in rank order (started one after another: increasing pids)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                command = handle.read().decode(errors="replace")
        except (OSError, ValueError):
            continue
        if ppid == parent and "spawn_main" in command and "resource_tracker" not in command:
            found.append(int(entry))
    return sorted(found)


def alive(pids: list[int]) -> list[int]:
    living = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                if handle.read().rsplit(")", 1)[1].split()[0] != "Z":
                    living.append(pid)
        except OSError:
            pass
    return living


def start(extra: list[str]) -> tuple[subprocess.Popen, list[int]]:
    process = subprocess.Popen(
        RUN + extra, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    deadline = time.monotonic() + 90
    while len(ranks := rank_processes(process.pid)) < 2:
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.2)
    time.sleep(6)  # past PyTorch's import and the rendezvous: the ranks are running steps
    assert process.poll() is None, "the run ended before the fault could be injected"
    return process, ranks


@pytest.mark.parametrize("victim", [0, 1])
def test_a_killed_rank_is_named_and_nothing_is_left(victim):
    process, ranks = start([])
    os.kill(ranks[victim], signal.SIGKILL)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 1, err
    assert err.startswith(f"error: rank {victim} died") and "killed by signal SIGKILL" in err, err
    assert "Expecting value" not in err and err.count("\n") == 1
    time.sleep(1)
    assert alive(ranks) == []


def test_a_stopped_rank_is_named_within_the_timeout():
    process, ranks = start(["--timeout", "5"])
    os.kill(ranks[1], signal.SIGSTOP)
    stopped = time.monotonic()
    _, err = process.communicate(timeout=60)
    took = time.monotonic() - stopped
    assert process.returncode == 1 and "error: rank 1 stopped responding" in err, err
    assert took < 5 + 5, took
    time.sleep(1)
    assert alive(ranks) == []


def test_ctrl_c_is_one_line_and_status_130():
    process, ranks = start([])
    os.killpg(process.pid, signal.SIGINT)  # what a terminal does: the whole process group
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert err == "interrupted\n", err
    time.sleep(1)
    assert alive(ranks) == []


def test_a_model_too_big_for_this_machine_is_refused_at_once():
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "engine", "run", "--hidden", "65536", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert "this run needs about" in result.stderr and "free" in result.stderr and "GiB" in result.stderr
    assert result.stderr.count("\n") == 1 and time.monotonic() - started < 10
    json.dumps(result.stderr)  # one plain line

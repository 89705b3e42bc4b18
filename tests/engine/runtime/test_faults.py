"""Faults a hostile visitor (or a bad day) brings to a distributed run, each seen on this machine before:
a rank stopped or killed mid-run must be named, within the time-out, and every process must be gone after;
Ctrl-C is one line and status 130. Whatever stops the run's own process — SIGINT, SIGTERM, SIGHUP, even
SIGKILL — leaves no process in its process group, no file in /dev/shm or the temporary folder, and no run
folder once the next run has swept."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from process_checks import group_members

pytestmark = [pytest.mark.slow, pytest.mark.timing]  # timeouts, and /dev/shm is machine-wide

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


def start(extra: list[str], env: dict | None = None, running: bool = True) -> tuple[subprocess.Popen, list[int]]:
    """The run, once both ranks exist (``running``: and are past PyTorch's import and the rendezvous)."""
    process = subprocess.Popen(
        RUN + extra, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, env=env
    )
    deadline = time.monotonic() + 90
    while len(ranks := rank_processes(process.pid)) < 2:
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    if running:
        time.sleep(6)  # past PyTorch's import and the rendezvous: the ranks are running steps
        assert process.poll() is None, "the run ended before the fault could be injected"
    return process, ranks


def shared_memory_in_use() -> set[str]:
    """/dev/shm files some live process has mapped (other programs' semaphores, not leaks)."""
    used = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/maps") as handle:
                    used.update(line.split()[-1] for line in handle if "/dev/shm/" in line)
            except OSError:
                continue
    return used


class Leftovers:
    """A run with its own temporary folder and run-folder base, and what was in /dev/shm before it."""

    def __init__(self, tmp_path):
        self.runs, self.temporary = tmp_path / "runs", tmp_path / "tmp"
        self.temporary.mkdir()
        self.env = {**os.environ, "PPLAB_RUN_DIR": str(self.runs), "TMPDIR": str(self.temporary)}
        self.shm = set(os.listdir("/dev/shm"))

    def folders(self) -> list[str]:
        return sorted(os.listdir(self.runs)) if self.runs.exists() else []

    def check_none_after(self, process: subprocess.Popen, folders: bool = True) -> None:
        deadline = time.monotonic() + 15
        while group_members(process.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert group_members(process.pid) == [], "a process of the run's group is still running"
        assert sorted(os.listdir(self.temporary)) == [], "the run left files in the temporary folder"
        new = set(os.listdir("/dev/shm")) - self.shm
        assert {name for name in new if f"/dev/shm/{name}" not in shared_memory_in_use()} == set()
        if folders:
            assert self.folders() == [], "the run left its folder"


@pytest.mark.parametrize("victim", [0, 1])
def test_a_killed_rank_is_named_and_nothing_is_left(tmp_path, victim):
    """No process, no file in the temporary folder or /dev/shm, no run folder: the launcher cleans up after a
    rank it did not stop itself."""
    leftovers = Leftovers(tmp_path)
    process, ranks = start([], env=leftovers.env)
    os.kill(ranks[victim], signal.SIGKILL)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 1, err
    assert err.startswith(f"error: rank {victim} died") and "killed by signal SIGKILL" in err, err
    assert "Expecting value" not in err and err.count("\n") == 1
    leftovers.check_none_after(process)
    assert alive(ranks) == []


def test_a_stopped_rank_is_named_within_the_timeout(tmp_path):
    leftovers = Leftovers(tmp_path)
    process, ranks = start(["--timeout", "5"], env=leftovers.env)
    os.kill(ranks[1], signal.SIGSTOP)
    stopped = time.monotonic()
    _, err = process.communicate(timeout=60)
    took = time.monotonic() - stopped
    assert process.returncode == 1 and "error: rank 1 stopped responding" in err, err
    assert took < 5 + 5, took
    leftovers.check_none_after(process)
    assert alive(ranks) == []


def test_ctrl_c_is_one_line_and_status_130():
    process, ranks = start([])
    os.killpg(process.pid, signal.SIGINT)  # what a terminal does: the whole process group
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert err == "interrupted\n", err
    time.sleep(1)
    assert alive(ranks) == []


@pytest.mark.parametrize(
    "name, to_group, status, line",
    [
        ("SIGTERM", False, 143, "interrupted by SIGTERM\n"),
        ("SIGHUP", True, 129, "interrupted by SIGHUP\n"),  # a closed terminal: the whole group hears it
        ("SIGINT", False, 130, "interrupted\n"),  # Ctrl-C sent to the run's process alone
    ],
)
def test_a_stop_signal_ends_the_run_and_leaves_nothing(tmp_path, name, to_group, status, line):
    leftovers = Leftovers(tmp_path)
    process, ranks = start([], env=leftovers.env)
    assert len(leftovers.folders()) == 1 and leftovers.folders()[0].startswith(f"run-{process.pid}-")
    number = getattr(signal, name)
    os.killpg(process.pid, number) if to_group else os.kill(process.pid, number)
    _, err = process.communicate(timeout=60)
    assert process.returncode == status and err == line, (process.returncode, err)
    leftovers.check_none_after(process)
    assert alive(ranks) == []


@pytest.mark.parametrize("when", ["importing", "starting the ranks"])
def test_ctrl_c_early_is_one_line_without_a_traceback(tmp_path, when):
    """Ctrl-C while python -m engine imports, or while the ranks start (each importing PyTorch), to the whole
    group as a terminal sends it."""
    leftovers = Leftovers(tmp_path)
    if when == "importing":
        process = subprocess.Popen(
            RUN, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, env=leftovers.env
        )
        time.sleep(0.3)
        assert rank_processes(process.pid) == []  # still importing, before any rank
    else:
        process, _ = start([], env=leftovers.env, running=False)
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130 and err == "interrupted\n", (process.returncode, err)
    leftovers.check_none_after(process)


def test_a_killed_launcher_takes_its_ranks_along_and_the_next_run_sweeps_its_folder(tmp_path, monkeypatch):
    """SIGKILL (the out-of-memory killer's signal) cannot be handled: the ranks notice their parent is gone and
    exit; the folder stays until the next run, which removes the folders of dead owners, never a live one's."""
    from engine.runtime import workdirs

    leftovers = Leftovers(tmp_path)
    process, ranks = start([], env=leftovers.env)
    (dead,) = leftovers.folders()
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)
    leftovers.check_none_after(process, folders=False)
    assert alive(ranks) == []
    assert leftovers.folders() == [dead]  # nobody could remove it yet
    monkeypatch.setenv("PPLAB_RUN_DIR", str(leftovers.runs))
    mine = workdirs.make("run")  # what the next run does first
    assert leftovers.folders() == [os.path.basename(mine)]
    workdirs.sweep()
    assert leftovers.folders() == [os.path.basename(mine)]  # a live owner's folder stays
    os.rmdir(mine)


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

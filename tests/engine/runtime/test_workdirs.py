"""Run folders ([Note: run folders], engine/runtime/workdirs.py): under a private base a stray clean-up of
/tmp/pplab-* does not reach, named by their owner, swept only when the owner is gone."""

import os
import stat
import subprocess
import sys
import tempfile

import pytest

from engine.runtime import workdirs


@pytest.fixture
def home(tmp_path, monkeypatch):
    base = tmp_path / "runs"
    monkeypatch.setenv("PPLAB_RUN_DIR", str(base))
    return base


def dead_pid() -> int:
    """The process id of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def folder(home, kind, pid, started, namespace=None):
    namespace = workdirs.pid_namespace() if namespace is None else namespace
    path = home / f"{kind}-{pid}-{started}-{namespace}-abc123"
    path.mkdir(parents=True)
    (path / "store").write_text("x")
    return path


def test_the_base_is_private_and_outside_the_shared_temporary_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("PPLAB_RUN_DIR", raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    base = workdirs.base()
    assert base == tmp_path / "cache" / "pplab" / "runs"
    assert stat.S_IMODE(os.stat(base).st_mode) == 0o700
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "runtime"))
    assert workdirs.base() == tmp_path / "runtime" / "pplab"
    # the last resort is a dot folder: `rm -rf /tmp/pplab-*` and `rm -rf /tmp/*` both pass it by
    last = workdirs.candidates()[-1]
    assert last.parent == type(last)(tempfile.gettempdir()) and last.name.startswith(".pplab-")


def test_a_base_that_is_a_link_or_not_a_folder_is_passed_over(monkeypatch, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "link")
    monkeypatch.setenv("PPLAB_RUN_DIR", str(tmp_path / "link"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "runtime"))
    assert workdirs.base() == tmp_path / "runtime" / "pplab"
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("PPLAB_RUN_DIR", str(tmp_path / "file"))
    assert workdirs.base() == tmp_path / "runtime" / "pplab"


def test_a_folder_names_its_owner(home):
    path = workdirs.make("isolated")
    name = os.path.basename(path)
    assert name.startswith(f"isolated-{os.getpid()}-{workdirs.process_start(os.getpid())}-")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o700


def test_the_sweep_removes_only_folders_whose_owner_is_gone(home):
    me, started = os.getpid(), workdirs.process_start(os.getpid())
    live = folder(home, "run", me, started)
    dead = folder(home, "run", dead_pid(), 12345)
    dead_isolated = folder(home, "isolated", dead_pid(), 0)
    reused = folder(home, "run", me, started + 1)  # our pid, someone else's start time: its owner died
    elsewhere = folder(home, "run", dead_pid(), 1, namespace=1)  # another pid namespace: not ours to judge
    unrelated = home / "notes"
    unrelated.mkdir()
    removed = workdirs.sweep()
    assert sorted(removed) == sorted(map(str, (dead, dead_isolated, reused)))
    assert live.exists() and elsewhere.exists() and unrelated.exists()
    assert not dead.exists() and not reused.exists()


def test_a_new_run_sweeps_first(home):
    dead = folder(home, "run", dead_pid(), 1)
    mine = workdirs.make("run")
    assert not dead.exists() and os.path.isdir(mine)


def test_owner_alive():
    me = os.getpid()
    assert workdirs.owner_alive(me, workdirs.process_start(me))
    assert workdirs.owner_alive(me, 0)  # no start time recorded: the pid alone decides
    assert not workdirs.owner_alive(me, workdirs.process_start(me) + 1)
    assert not workdirs.owner_alive(dead_pid(), 0)


@pytest.mark.parametrize("kind", ["upload", "mp"])
def test_a_servers_upload_and_fork_server_folders_are_swept_once_it_is_gone(home, kind):
    """A server stopped by a signal leaves its visitors' uploads and multiprocessing's socket folder; the next
    server's sweep at start-up removes them, and never a live server's."""
    mine = workdirs.make(kind)
    dead = folder(home, kind, dead_pid(), 1)
    assert workdirs.sweep() == [str(dead)] and os.path.isdir(mine)


def test_the_fork_server_keeps_its_socket_in_a_folder_of_this_process(home):
    code = (
        "import os, multiprocessing.util as u\n"
        "from engine.runtime.fork_server import own_temporary_folder\n"
        "own_temporary_folder()\n"
        "print(u.get_temp_dir())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    folder_used = done.stdout.strip()
    assert done.returncode == 0, done.stderr
    assert os.path.dirname(folder_used) == str(home) and os.path.basename(folder_used).startswith("mp-")
    assert not os.path.exists(folder_used)  # removed at the child's exit

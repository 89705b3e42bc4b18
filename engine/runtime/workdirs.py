"""Where a run keeps its files while it runs, and clearing what runs that died left behind (torch-free).

[Note: run folders]
A distributed run keeps the ranks' rendezvous store, the reference gradients and the results in a folder of
its own (``run-…``); a run in a child process for the app keeps its outcome in another (``isolated-…``); a
visitor's uploaded traces wait in a third (``upload-…``, owned by the server process), and multiprocessing's
fork-server socket in a fourth (``mp-…``).

* **Where**: under a private base folder, created 0700 and owned by this user, not in the shared temporary
  folder: on a shared machine another program cleaning ``/tmp`` (``rm -rf /tmp/pplab-*``, an age-based
  tmp cleaner) removed a run's folder under it while it ran. The base is ``$PPLAB_RUN_DIR`` if set, else
  ``$XDG_RUNTIME_DIR/pplab`` (a per-user tmpfs on most Linux desktops), else ``$XDG_CACHE_HOME/pplab/runs``
  (``~/.cache/pplab/runs``), else ``<tempdir>/.pplab-<uid>`` (a dot folder: shell globs skip it).
* **Whose**: a folder's name carries its owner's process id, the owner's start time (clock ticks since boot,
  ``/proc/<pid>/stat``, so a reused pid is not mistaken for the owner) and its pid namespace (a container
  sharing the folder sees other pids): ``run-<pid>-<start>-<namespace>-<random>``.
* **Clearing**: a run that ends in any way Python sees (success, failure, Ctrl-C, SIGTERM, SIGHUP) removes its
  folder itself. One that cannot — its process killed by SIGKILL, as the out-of-memory killer does — leaves
  it, and ``sweep()`` removes it later: every new run sweeps (and the app can at start-up). It removes only
  folders whose owner is gone, in this pid namespace; never a live run's, and nothing it cannot attribute.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

KINDS = ("run", "isolated", "upload", "mp")
_NAME = re.compile(r"^(run|isolated|upload|mp)-(\d+)-(\d+)-(\d+)-[A-Za-z0-9_]+$")


def process_start(pid: int) -> int:
    """When process ``pid`` started, in clock ticks since boot (``/proc/<pid>/stat`` field 22); 0 if unknown."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return 0


def pid_namespace() -> int:
    """This process's pid namespace (the inode number of ``/proc/self/ns/pid``); 0 if unknown."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _private(folder: Path) -> bool:
    """Create ``folder`` (0700) if needed; True when it is a real folder (not a link) that only this user can
    enter. Refuses a folder someone else made for us."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        status = os.lstat(folder)
        if not stat.S_ISDIR(status.st_mode) or (hasattr(os, "getuid") and status.st_uid != os.getuid()):
            return False
        if stat.S_IMODE(status.st_mode) & 0o077:
            os.chmod(folder, 0o700)
        return os.access(folder, os.W_OK | os.X_OK)
    except OSError:
        return False


def candidates() -> list[Path]:
    """The base folders to try, in order (see [Note: run folders])."""
    found = []
    if os.environ.get("PPLAB_RUN_DIR"):
        found.append(Path(os.environ["PPLAB_RUN_DIR"]))
    if os.environ.get("XDG_RUNTIME_DIR"):
        found.append(Path(os.environ["XDG_RUNTIME_DIR"]) / "pplab")
    cache = os.environ.get("XDG_CACHE_HOME") or (os.path.join(Path.home(), ".cache") if "HOME" in os.environ else "")
    if cache:
        found.append(Path(cache) / "pplab" / "runs")
    uid = os.getuid() if hasattr(os, "getuid") else 0
    found.append(Path(tempfile.gettempdir()) / f".pplab-{uid}")
    return found


def base() -> Path:
    """The first private base folder that works here."""
    tried = candidates()
    for folder in tried:
        if _private(folder):
            return folder
    raise OSError(f"no private folder for a run's files: tried {', '.join(map(str, tried))}")


def make(kind: str) -> str:
    """A new, empty folder of ``kind`` (one of ``KINDS``) owned by this process, after sweeping
    away the folders of processes that died."""
    assert kind in KINDS, kind
    home = base()
    sweep(home)
    pid = os.getpid()
    return tempfile.mkdtemp(prefix=f"{kind}-{pid}-{process_start(pid)}-{pid_namespace()}-", dir=home)


def owner_alive(pid: int, started: int) -> bool:
    """Is process ``pid``, started at ``started`` ticks (0: unknown), still running?"""
    now = process_start(pid)
    if now:
        return not started or now == started
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    except OSError:
        return True
    return not started  # alive, but /proc says nothing of its start: only a folder that recorded none is its


def sweep(home: Path | None = None) -> list[str]:
    """Remove the run folders under ``home`` (default: ``base()``) whose owner is no longer running, in this
    pid namespace; return their paths. Folders of live runs, of other namespaces and other names stay."""
    home = base() if home is None else home
    namespace = pid_namespace()
    removed: list[str] = []
    try:
        entries = list(os.scandir(home))
    except OSError:
        return removed
    for entry in entries:
        match = _NAME.match(entry.name)
        if match is None or not entry.is_dir(follow_symlinks=False):
            continue
        pid, started, their_namespace = int(match[2]), int(match[3]), int(match[4])
        if their_namespace != namespace or owner_alive(pid, started):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(entry.path)
    return removed

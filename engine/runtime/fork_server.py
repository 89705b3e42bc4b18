"""The app's one fork server: a fresh interpreter that imported the engine's heavy modules once, from which the
server's searches and trace readings fork their children (a threaded server must not fork itself, and a fresh
interpreter per request would spend seconds importing). multiprocessing has one fork server per process and one
preload list, so the modules every user of it needs are named here, once: a second ``set_forkserver_preload``
would replace the first."""

from __future__ import annotations

import atexit
import multiprocessing as mp
import shutil
from multiprocessing import forkserver, util

from .lifetime import main_script_left_out
from .workdirs import make

PRELOAD = ["engine.search.isolated", "ortools.sat.python.cp_model", "engine.traces.isolated"]
"""The search (and OR-Tools: a child importing it itself spent its limit on that) and the trace reader."""
FORK_SERVER = mp.get_context("forkserver")
FORK_SERVER.set_forkserver_preload(PRELOAD)


def start_fork_server() -> None:
    """Start the fork server if it is not running (once per server process; a second or more on a busy host),
    leaving the page script out of it (``main_script_left_out``)."""
    own_temporary_folder()
    with main_script_left_out():
        forkserver.ensure_running()


def own_temporary_folder() -> None:
    """Where multiprocessing keeps the fork server's socket: a run folder of this process (``workdirs``, kind
    "mp"), not a ``pymp-…`` folder in the shared temporary folder. multiprocessing removes its own folder at a
    normal exit only, so a server stopped by a signal left one behind on every stop; a run folder goes at exit
    too, and otherwise with the next sweep, once this process is gone. ``util.get_temp_dir`` reads the folder
    from the process's ``_config["tempdir"]`` (CPython 3.8–3.14) and makes one only when none is set."""
    config = mp.current_process()._config  # type: ignore[attr-defined]
    if config.get("tempdir") is None:
        folder = make("mp")
        config["tempdir"] = folder
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
    assert util.get_temp_dir() == config["tempdir"]

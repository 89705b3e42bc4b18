"""The app's one fork server: a fresh interpreter that imported the engine's heavy modules once, from which the
server's searches and trace readings fork their children (a threaded server must not fork itself, and a fresh
interpreter per request would spend seconds importing). multiprocessing has one fork server per process and one
preload list, so the modules every user of it needs are named here, once: a second ``set_forkserver_preload``
would replace the first."""

from __future__ import annotations

import multiprocessing as mp
from multiprocessing import forkserver

from .lifetime import main_script_left_out

PRELOAD = ["engine.search.isolated", "ortools.sat.python.cp_model", "engine.traces.isolated"]
"""The search (and OR-Tools: a child importing it itself spent its limit on that) and the trace reader."""
FORK_SERVER = mp.get_context("forkserver")
FORK_SERVER.set_forkserver_preload(PRELOAD)


def start_fork_server() -> None:
    """Start the fork server if it is not running (once per server process; a second or more on a busy host),
    leaving the page script out of it (``main_script_left_out``)."""
    with main_script_left_out():
        forkserver.ensure_running()

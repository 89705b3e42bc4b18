"""Stop signals and child processes ([Note: stop signals], engine/runtime/lifetime.py), and the lazy packages
that let ``python -m engine`` install its handlers before the heavy imports."""

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
import types

import pytest

from engine.runtime import lifetime
from engine.runtime.lifetime import Stopped, shielded, stop_signals


@pytest.mark.parametrize(
    "name, status, message", [("SIGTERM", 143, "interrupted by SIGTERM"), ("SIGINT", 130, "interrupted")]
)
def test_a_stop_signal_raises_stopped_and_the_handlers_come_back(name, status, message):
    number = getattr(signal, name)
    before = signal.getsignal(number)
    with pytest.raises(Stopped) as caught, stop_signals():
        os.kill(os.getpid(), number)
        time.sleep(1)  # interrupted by the handler well before
    assert caught.value.exit_status == status and caught.value.message == message
    assert isinstance(caught.value, KeyboardInterrupt)  # whatever unwinds for Ctrl-C unwinds for it
    assert signal.getsignal(number) is before


def test_a_stop_waits_for_the_clean_up_and_a_second_one_is_dropped():
    finished = []
    with pytest.raises(Stopped) as caught, stop_signals():
        with shielded():
            os.kill(os.getpid(), signal.SIGHUP)
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)
            finished.append("clean-up")
    assert finished == ["clean-up"] and caught.value.signum == signal.SIGHUP


def test_ignored_signals_stay_ignored_inside():
    with stop_signals(ignore=(signal.SIGHUP,)):
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(0.1)


def _report_signals() -> None:
    """In a child started by ``start_child``: what it sees."""
    print(signal.getsignal(signal.SIGINT) == signal.SIG_IGN, signal.getsignal(signal.SIGHUP) == signal.SIG_IGN)
    print(sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])), flush=True)


@pytest.mark.slow
def test_a_child_ignores_ctrl_c_and_sighup_and_starts_with_nothing_blocked(capfd):
    context = multiprocessing.get_context("spawn")
    child = lifetime.start_child(context, _report_signals, (), death_signal=signal.SIGTERM, name="t")
    child.join(timeout=60)
    out = capfd.readouterr().out.split("\n")
    assert child.exitcode == 0 and out[0] == "True True" and out[1] == "[]"
    assert not set(signal.pthread_sigmask(signal.SIG_BLOCK, [])) & set(lifetime.STOP_SIGNALS)  # ours unblocked


@pytest.mark.slow
@pytest.mark.parametrize("start_method", ["spawn", "forkserver"])
def test_a_child_dies_with_its_parent_even_by_sigkill(tmp_path, start_method):
    """The parent (a stand-in for the app's server) starts a child that would sleep a minute, then is killed. A
    fork server's child (the app's searches) is the fork server's, which outlives the parent while the child
    lives: the child watches the parent itself."""
    script = tmp_path / "parent.py"
    script.write_text(
        "import multiprocessing, signal, time\n"
        "from engine.runtime import lifetime\n"
        "if __name__ == '__main__':\n"
        f"    child = lifetime.start_child(multiprocessing.get_context({start_method!r}), time.sleep, (60,),\n"
        "                                 death_signal=signal.SIGKILL, name='sleeper')\n"
        "    print(child.pid, flush=True)\n"
        "    time.sleep(60)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.getcwd()}
    )
    child = int(parent.stdout.readline())
    time.sleep(1)  # bound to the parent by now (it printed after start)
    assert not gone(child)  # still sleeping: it ends because the parent does, not on its own
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while not gone(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert gone(child)


def gone(pid: int) -> bool:
    """Exited (a zombie waiting for its new parent to reap it counts)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_python_m_engine_installs_its_handlers_before_the_heavy_imports():
    code = (
        "import sys, engine, engine.runtime, engine.runtime.lifetime; "
        "print(sorted({'pandas', 'numpy', 'torch'} & set(sys.modules)))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_the_lazy_package_keeps_its_names():
    import engine
    import engine.simulator  # the modules are named apart from the functions they export (no shadowing)
    import engine.validation
    from engine import FAMILIES, Costs, Timeline, simulate, validate
    from engine.runtime import GRADIENT_TOLERANCE, RunConfig, RunResult, run

    assert callable(simulate) and callable(validate) and engine.simulate is simulate is engine.simulator.simulate
    assert Costs and FAMILIES and Timeline and RunConfig and RunResult and run and GRADIENT_TOLERANCE
    assert set(engine.__all__) <= set(dir(engine))
    with pytest.raises(AttributeError):
        engine.no_such_name  # noqa: B018


def test_a_child_does_not_run_the_parents_page_script_again(tmp_path, monkeypatch):
    """Streamlit installs the page it runs as ``__main__``; multiprocessing would run it again in every child."""
    marker = tmp_path / "ran"
    script = tmp_path / "page.py"
    script.write_text(f"open({str(marker)!r}, 'w').write('the page ran in the child')\n")
    page = types.ModuleType("__main__")
    page.__file__, page.__spec__ = str(script), None
    monkeypatch.setitem(sys.modules, "__main__", page)
    context = multiprocessing.get_context("spawn")
    child = lifetime.start_child(context, time.sleep, (0,), death_signal=signal.SIGTERM, name="t")
    child.join(timeout=60)
    assert child.exitcode == 0 and not marker.exists()
    assert sys.modules["__main__"] is page  # put back after the start


def test_a_commands_age_is_its_process_age_only_when_it_is_the_whole_process(monkeypatch):
    """A search called in a long-lived process (this test worker, the app) must not see its limit spent by the
    process's age; ``python -m engine`` counts its imports."""
    monkeypatch.setitem(lifetime._command, "whole_process", False)
    assert lifetime.command_age_s() == 0.0
    monkeypatch.setitem(lifetime._command, "whole_process", True)
    assert lifetime.command_age_s() > 0 and abs(lifetime.command_age_s() - lifetime.process_age_s()) < 0.5


def test_a_stop_that_comes_while_a_child_starts_is_raised_after_and_the_child_goes_too(monkeypatch):
    """A stop just before ``start_child`` used to be raised inside ``os.fork``'s at-fork hooks, where Python drops
    an exception ("Exception ignored in: _releaseLock"), and the handler then dropped every later stop: a search
    told to stop ran on to its limit (CI, twice). Here the start swallows what is raised inside it, as the hooks
    do; the stop must still come out, once the child is there, and take the child with it."""
    context = multiprocessing.get_context("fork")
    real_start = context.Process.start

    go, sent = threading.Event(), threading.Event()

    def send() -> None:  # started before start_child blocks the stop signals in this thread: it takes the signal
        go.wait(10)
        os.kill(os.getpid(), signal.SIGTERM)
        sent.set()

    threading.Thread(target=send, daemon=True).start()

    def start_in_a_place_that_drops_exceptions(self):
        try:  # as in os.fork's at-fork hooks, what is raised here is dropped
            go.set()
            sent.wait(10)
            time.sleep(0.05)  # Python runs the handler in this thread at its next step: here
        except KeyboardInterrupt:
            pass
        real_start(self)

    monkeypatch.setattr(context.Process, "start", start_in_a_place_that_drops_exceptions)
    started = []
    real_kill = context.Process.kill
    monkeypatch.setattr(context.Process, "kill", lambda self: started.append(self) or real_kill(self))
    with pytest.raises(Stopped), stop_signals():
        lifetime.start_child(context, time.sleep, (30,), death_signal=signal.SIGKILL, name="pplab-test-child")
    assert len(started) == 1 and started[0].exitcode is not None  # started, then killed and reaped


def _exit_with_the_shield() -> None:
    os._exit(lifetime._State.shield)


def test_a_forked_child_hears_stops_though_its_parent_was_shielded_when_it_forked():
    """``start_child`` forks inside ``shielded()``: the child must not inherit the shield (it would never raise)."""
    child = lifetime.start_child(
        multiprocessing.get_context("fork"), _exit_with_the_shield, (), death_signal=signal.SIGKILL, name="t"
    )
    child.join(timeout=30)
    assert child.exitcode == 0

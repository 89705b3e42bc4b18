"""Real runs as the app makes them: in a child process, one at a time per server, bounded in time."""

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from types import SimpleNamespace

import pytest
from process_checks import group_members

import app.server.real_run_jobs as real_run_jobs
from engine.model_config import ModelConfig
from engine.runtime import RunConfig, RunFailed, isolated, run
from engine.runtime.budget import activation_bytes, check_budget, estimate, parameter_count
from engine.runtime.isolated import TAIL_CHARS, TAIL_LINES, Ending, _Tail, explain, run_isolated

pytestmark = pytest.mark.slow  # each test starts a process and runs a real model

SMALL = RunConfig(
    family="1f1b",
    num_ranks=2,
    num_microbatches=4,
    repeats=1,
    warmup_steps=0,
    model=ModelConfig(kind="mlp", layers=2, hidden=16, batch=8),
)


def test_an_isolated_run_reports_progress_and_returns_the_result():
    seen = []
    result = run_isolated(SMALL, progress=lambda done, total, note: seen.append((done, total)))
    assert result.summary()["gradients_match"]
    assert seen and seen[-1][0] == seen[-1][1]


def test_an_isolated_run_that_fails_says_where_and_one_past_its_limit_is_ended():
    with pytest.raises(RunFailed, match="rank 1 failed during 1F2"):
        run_isolated(replace(SMALL, fail_at="1:1F2"))
    started = time.monotonic()
    with pytest.raises(RunFailed, match="took longer than its limit of 1 s"):
        run_isolated(replace(SMALL, repeats=100, model=ModelConfig(kind="gpt")), time_limit_s=1)
    assert time.monotonic() - started < 30


class _EndedChild:
    """A child that was already gone when first polled, ended by SIGTERM (as a run at its limit is)."""

    exitcode = -signal.SIGTERM

    def is_alive(self) -> bool:
        return False

    def join(self, timeout=None) -> None:
        pass


def test_a_run_whose_child_ends_as_its_limit_passes_is_reported_over_its_limit(monkeypatch):
    # the clock: started at 0, polled once at 0.5 s (the child is gone: its pipe says so), checked at 2 s
    readings = iter([0.0, 0.5, 2.0, 2.0, 2.0])
    monkeypatch.setattr(isolated, "time", SimpleNamespace(monotonic=lambda: next(readings)))
    monkeypatch.setattr(isolated, "start_child", lambda *args, **kwargs: _EndedChild())
    with pytest.raises(RunFailed, match="took longer than its limit of 1 s"):
        run_isolated(SMALL, time_limit_s=1)


def test_one_real_run_at_a_time_and_the_second_visitor_is_told_to_wait(monkeypatch):
    monkeypatch.setattr(real_run_jobs, "run_isolated", lambda config, **_: time.sleep(1.5) or "done")
    told, results = [], []
    first = threading.Thread(
        target=lambda: results.append(real_run_jobs.run_one(SMALL, progress=None, waiting=lambda text: None))
    )
    first.start()
    time.sleep(0.2)
    results.append(real_run_jobs.run_one(SMALL, progress=None, waiting=told.append))
    first.join()
    assert results == ["done", "done"]
    assert told and told[0].startswith("Waiting for another visitor's real run (1f1b on 2 ranks for ")


@pytest.mark.parametrize(
    "model",
    [
        ModelConfig(kind="mlp", layers=3, hidden=24, batch=6),
        ModelConfig(kind="gpt", layers=2, hidden=32, batch=4, seq_len=8, vocab=50, heads=2),
    ],
)
def test_the_estimate_counts_parameters_exactly_and_bounds_activations(model):
    import torch

    from engine.models import ToyModel, make_batch

    network = ToyModel(model)
    assert parameter_count(model) == sum(p.numel() for p in network.parameters())
    saved = []
    x, target = make_batch(model)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        network(x, target)
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in saved}
    weights = {p.untyped_storage().data_ptr() for p in network.parameters()}
    measured = sum(size for pointer, size in storages.items() if pointer not in weights)
    assert measured <= activation_bytes(model) <= 2 * measured


def test_the_budget_refuses_with_the_arithmetic():
    config = RunConfig(family="1f1b", model=ModelConfig(kind="mlp", hidden=8192, layers=32, batch=128))
    needed = estimate(config).total
    check_budget(config, available=4 * needed)  # fits in half of twice... of four times itself
    refusal = r"this run needs about .* GiB .* a run may use .* \(50% of the .* this machine has free\)"
    with pytest.raises(ValueError, match=refusal):
        check_budget(config, available=needed)


def test_the_servers_memory_does_not_keep_what_a_run_allocated():
    """The run happens in a child process: the server's own memory barely moves however big the run."""
    import psutil

    config = RunConfig(
        family="gpipe",
        num_ranks=2,
        num_microbatches=8,
        repeats=1,
        warmup_steps=0,
        model=ModelConfig(kind="gpt", layers=4, hidden=256, batch=64, seq_len=64),
    )
    before = psutil.Process().memory_info().rss
    result = run_isolated(config)
    after = psutil.Process().memory_info().rss
    assert sum(result.summary()["peak_memory_bytes"]) > 100 * 2**20  # the run itself held over 100 MiB
    assert after - before < 40 * 2**20


# -- a run that ends without a result says what the evidence says ----------------------------------
@pytest.mark.parametrize(
    "exitcode, output, before, after, says, not_says",
    [
        (-9, "", {"machine": 3}, {"machine": 4}, "killed by signal SIGKILL): the kernel's out-of-memory killer", None),
        (-9, "", {"machine": 3}, {"machine": 3}, "another program killed it (the kernel counted no", "ran out"),
        (-9, "", {}, {}, "another program, or the out-of-memory killer, killed it (this machine does not say", None),
        (
            1,
            "Traceback …\nMemoryError: 8 GiB",
            {},
            {},
            "(exit code 1): it ran out of memory (it printed a MemoryError)",
            None,
        ),
        (
            1,
            "Traceback …\nFileNotFoundError: outcome.partial",
            {},
            {},
            "(exit code 1): it ended before sending",
            "memory",
        ),
        (-11, "", {}, {}, "(killed by signal SIGSEGV): a signal ended it; it printed nothing", "memory"),
    ],
)
def test_a_missing_result_is_explained_from_the_evidence(exitcode, output, before, after, says, not_says):
    message = explain(Ending(exitcode, output, before, after))
    assert message.startswith("the real run's process ended without a result (") and says in message, message
    assert not_says is None or not_says not in message
    for line in output.splitlines():
        assert f"\n  {line}" in message  # its last output, quoted


def test_the_childs_last_output_is_kept_bounded_and_passed_on(capfd):
    import multiprocessing

    reader, writer = multiprocessing.Pipe(duplex=False)
    tail = _Tail(reader)
    for number in range(50):
        os.write(writer.fileno(), f"line {number} {'x' * 150}\n".encode())
    os.write(writer.fileno(), b"last words without a newline")
    writer.close()
    text = tail.text()
    assert len(text) <= TAIL_CHARS + 1 and text.count("\n") <= TAIL_LINES - 1
    assert text.endswith("last words without a newline") and "line 49" in text and "line 30" not in text
    assert "line 0 " in capfd.readouterr().err  # the server's log still gets everything


def children_named(name: str) -> list:
    import multiprocessing

    return [child for child in multiprocessing.active_children() if child.name == name]


@pytest.mark.slow
def test_a_run_process_killed_mid_run_is_named_and_not_blamed_on_memory(monkeypatch):
    monkeypatch.setattr(isolated, "oom_kills", lambda: {"machine": 7})  # the kernel counted no OOM kill
    errors = []

    def start():
        try:
            run_isolated(replace(SMALL, repeats=100, model=ModelConfig(kind="gpt")))
        except RunFailed as error:
            errors.append(str(error))

    thread = threading.Thread(target=start)
    thread.start()
    deadline = time.monotonic() + 60
    while not children_named("pplab-real-run") and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(3)
    os.kill(children_named("pplab-real-run")[0].pid, signal.SIGKILL)
    thread.join(timeout=60)
    (message,) = errors
    assert message.startswith(
        "the real run's process ended without a result (killed by signal SIGKILL): another program"
    ), message
    assert "ran out of memory" not in message and "most often" not in message


@pytest.mark.slow
def test_a_distributed_runs_folder_removed_mid_run_is_named(tmp_path, monkeypatch):
    """Another program cleaning up removes the run's folder: the run stops at once, and its error says so, not
    "out of memory"."""
    monkeypatch.setenv("PPLAB_RUN_DIR", str(tmp_path))
    errors = []
    model = ModelConfig(kind="mlp", layers=8, hidden=512, batch=512)  # 100 steps: about 16 s on 2 cores
    config = replace(SMALL, backend="distributed", repeats=100, num_microbatches=8, model=model)

    def start():
        try:
            run(config)
        except RunFailed as error:
            errors.append(str(error))

    thread = threading.Thread(target=start)
    thread.start()
    deadline = time.monotonic() + 90
    while not (folders := os.listdir(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.05)
    while "store" not in os.listdir(tmp_path / folders[0]) and time.monotonic() < deadline:
        time.sleep(0.05)  # the ranks are meeting
    time.sleep(2)
    assert thread.is_alive(), "the run ended before its folder could be removed"
    shutil.rmtree(tmp_path / folders[0])
    removed = time.monotonic()
    thread.join(timeout=90)
    # the launcher stops the ranks when it sees the folder gone, not when their 100 steps are done (14 s more here)
    assert time.monotonic() - removed < 10, "the run went on after its folder was removed"
    (message,) = errors
    assert f"the run's folder {tmp_path / folders[0]} was removed while the run was in progress" in message
    assert "memory" not in message


@pytest.mark.slow
def test_a_server_killed_by_sigkill_leaves_no_run_behind(tmp_path):
    """The app's server is killed outright mid-run (the out-of-memory killer's way): its run process and that
    run's rank processes end, and the run's folder goes with them."""
    script = tmp_path / "server.py"
    script.write_text(
        "from engine.model_config import ModelConfig\n"
        "from engine.runtime import RunConfig\n"
        "from engine.runtime.isolated import run_isolated\n"
        "if __name__ == '__main__':\n"
        "    run_isolated(RunConfig(num_ranks=2, num_microbatches=16, backend='distributed', repeats=100,\n"
        "                           model=ModelConfig(kind='mlp', layers=8, hidden=512, batch=16)))\n"
    )
    runs = tmp_path / "runs"
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "PPLAB_RUN_DIR": str(runs)}
    server = subprocess.Popen([sys.executable, str(script)], env=env, start_new_session=True)
    deadline = time.monotonic() + 90
    while not (runs.exists() and os.listdir(runs)) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(5)  # the ranks are running
    assert server.poll() is None and len(group_members(server.pid)) >= 3  # server, run process, ranks
    server.kill()
    server.wait()
    deadline = time.monotonic() + 20
    while (group_members(server.pid) or os.listdir(runs)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert group_members(server.pid) == [] and os.listdir(runs) == []

"""Real runs as the app makes them: in a child process, one at a time per server, bounded in time."""

import threading
import time
from dataclasses import replace

import pytest

import app.real_runs as real_runs
from engine.model_config import ModelConfig
from engine.runtime import RunConfig, RunFailed
from engine.runtime.budget import activation_bytes, check_budget, estimate, parameter_count
from engine.runtime.isolated import run_isolated

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


def test_one_real_run_at_a_time_and_the_second_visitor_is_told_to_wait(monkeypatch):
    monkeypatch.setattr(real_runs, "run_isolated", lambda config, **_: time.sleep(1.5) or "done")
    told, results = [], []
    first = threading.Thread(
        target=lambda: results.append(real_runs.run_one(SMALL, progress=None, waiting=lambda text: None))
    )
    first.start()
    time.sleep(0.2)
    results.append(real_runs.run_one(SMALL, progress=None, waiting=told.append))
    first.join()
    assert results == ["done", "done"]
    assert told and told[0].startswith("Waiting for the run in progress (1f1b on 2 ranks")


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
    with pytest.raises(ValueError, match=r"this run needs about .* GiB .* a run may use 50% of it"):
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

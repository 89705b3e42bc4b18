"""How much memory a real run will need, estimated before anything is built, and the budget this machine
allows — so a run that cannot fit is refused with the arithmetic instead of taking the machine down.

The estimate is an upper bound (torch-free):

* parameters P from the model's shapes (exact: ``tests/test_real_runs.py`` counts them in PyTorch);
* activations A of the whole batch through the whole model — what GPipe holds at its peak and what the
  unsplit reference saves — from per-layer counts that overestimate what autograd saves by 1.2–1.5×;
* each process that imports PyTorch costs about ``PROCESS_BYTES`` before any tensor.

    emulated      PROCESS + 5·P·b + 2·A            (model, its copy split into stages, gradients, reference)
    distributed   launcher PROCESS + 2·P·b + A     (the reference, computed once)
                  + p × (PROCESS + 2·P·b + 2·A/p)  (each rank builds the model, keeps its stages)

with b bytes per value. The budget is ``BUDGET_SHARE`` of the memory available now.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model_config import ModelConfig

PROCESS_BYTES = 450 * 2**20
BUDGET_SHARE = 0.5


def parameter_count(model: ModelConfig) -> int:
    h, layers = model.hidden, model.layers
    if model.kind == "mlp":
        return (layers + 2) * (h * h + h)  # embed, blocks and head are each one Linear(H, H)
    # GPT: token and position embeddings, 12H²+13H per block (attention 4H²+4H, MLP 8H²+5H, two norms 4H),
    # the final norm and the output layer
    return 2 * model.vocab * h + model.seq_len * h + layers * (12 * h * h + 13 * h) + 2 * h


def activation_bytes(model: ModelConfig) -> int:
    """Upper estimate of what autograd saves for the whole batch through the whole model."""
    b, h, n = model.bytes_per_value, model.hidden, model.batch
    if model.kind == "mlp":
        return b * n * h * (3 * model.layers + 4)
    tokens = n * model.seq_len
    per_token = model.layers * (19 * h + 3 * model.heads * model.seq_len) + 3 * h + 2 * model.vocab
    return b * tokens * per_token


@dataclass(frozen=True)
class Estimate:
    total: int
    parts: dict[str, int]

    def describe(self) -> str:
        return " + ".join(f"{name} {human_bytes(value)}" for name, value in self.parts.items())


def estimate(config) -> Estimate:
    """The memory ``config`` (a RunConfig) needs, an upper estimate."""
    model = config.model
    weights = parameter_count(model) * model.bytes_per_value
    activations = activation_bytes(model)
    if config.backend == "emulated":
        parts = {
            "PyTorch process": PROCESS_BYTES,
            "model, stages, gradients and reference (5 × weights)": 5 * weights,
            "activations of the batch, pipeline and reference (2×)": 2 * activations,
        }
    else:
        p = config.num_ranks
        parts = {
            f"{p + 1} PyTorch processes": (p + 1) * PROCESS_BYTES,
            f"launcher's reference and {p} ranks' models (2 × weights each)": 2 * weights * (p + 1),
            "activations (reference, and the ranks' share twice)": 3 * activations,
        }
    return Estimate(sum(parts.values()), parts)


def available_bytes() -> int:
    import psutil

    return int(psutil.virtual_memory().available)


def check_budget(config, available: int | None = None) -> Estimate:
    """Refuse, with the arithmetic, a run whose estimate exceeds ``BUDGET_SHARE`` of the free memory."""
    needed = estimate(config)
    available = available_bytes() if available is None else available
    allowed = int(BUDGET_SHARE * available)
    if needed.total > allowed:
        raise ValueError(
            f"this run needs about {human_bytes(needed.total)} ({needed.describe()}); this machine has "
            f"{human_bytes(available)} free and a run may use {BUDGET_SHARE:.0%} of it, "
            f"{human_bytes(allowed)}: use a smaller model, batch or fewer ranks"
        )
    return needed


def human_bytes(value: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover

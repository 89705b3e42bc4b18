"""How much memory a real run will need, estimated before anything is built, and the budget this machine
allows — so a run that cannot fit is refused with the arithmetic instead of taking the machine down.

The estimate is an upper bound (torch-free):

* parameters P from the model's shapes (exact: ``tests/app/real_run/test_real_runs.py`` counts them in PyTorch);
* activations A of the whole batch through the whole model — what GPipe holds at its peak and what the
  unsplit reference saves — from per-layer counts that overestimate what autograd saves by 1.2–1.5×;
* each process that imports PyTorch costs about ``PROCESS_BYTES`` before any tensor.

    emulated      PROCESS + 5·P·b + 2·A            (model, its copy split into stages, gradients, reference)
    distributed   launcher PROCESS + 2·P·b + A     (the reference, computed once)
                  + p × (PROCESS + 2·P·b + 2·A/p)  (each rank builds the model, keeps its stages)

with b bytes per value. The budget is ``BUDGET_SHARE`` of the least of: the memory this machine has free
now, what is left under this container's memory limit (cgroup v2 ``memory.max``, or v1), and what is left
under this process's address-space limit (``ulimit -v``, which children inherit) — a run that would pass the
first and die on the others is refused before it starts, with the limit named.
"""

from __future__ import annotations

import resource
from dataclasses import dataclass
from pathlib import Path

from ..model_config import ModelConfig

PROCESS_BYTES = 450 * 2**20
BUDGET_SHARE = 0.5
CGROUP_ROOT = Path("/sys/fs/cgroup")
UNLIMITED_CGROUP = 2**60
"""cgroup v1 writes "no limit" as a number near 2^63."""


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
    """The memory this machine has free now (other programs' use and the page cache already counted)."""
    import psutil

    return int(psutil.virtual_memory().available)


def _read_bytes(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # cgroup v2 writes "max" for no limit


def container_left() -> tuple[int, int] | None:
    """(bytes left under this container's memory limit, the limit), or None without a limit."""
    v1 = ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes")
    for limit_file, usage_file in (("memory.max", "memory.current"), v1):
        limit, usage = _read_bytes(CGROUP_ROOT / limit_file), _read_bytes(CGROUP_ROOT / usage_file)
        if limit is not None and usage is not None and limit < UNLIMITED_CGROUP:
            return max(limit - usage, 0), limit
    return None


def address_space_left() -> tuple[int, int, int] | None:
    """(bytes this process may still map under ``ulimit -v``, the limit, what it maps now), or None."""
    import psutil

    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    mapped = int(psutil.Process().memory_info().vms)
    return max(soft - mapped, 0), soft, mapped


@dataclass(frozen=True)
class Allowance:
    """What a run may use here, and why: the smallest of the limits, in words with the arithmetic."""

    allowed: int
    reason: str


def allowance(available: int | None = None) -> Allowance:
    """``BUDGET_SHARE`` of the least of the machine's free memory, the container's and the address space's
    room (``available`` stands for the machine's free memory alone, for tests)."""
    share = f"{BUDGET_SHARE:.0%}"
    if available is not None:
        return Allowance(
            int(BUDGET_SHARE * available), f"{share} of the {human_bytes(available)} this machine has free"
        )
    free = available_bytes()
    room = [(free, f"{share} of the {human_bytes(free)} this machine has free")]
    if (container := container_left()) is not None:
        left, limit = container
        room.append((left, f"{share} of the {human_bytes(left)} left under this container's memory limit of "
                           f"{human_bytes(limit)}"))  # fmt: skip
    if (address := address_space_left()) is not None:
        left, limit, mapped = address
        room.append((left, f"{share} of the {human_bytes(left)} left under this process's address-space limit "
                           f"(ulimit -v {human_bytes(limit)}, {human_bytes(mapped)} already mapped)"))  # fmt: skip
    least, reason = min(room)
    return Allowance(int(BUDGET_SHARE * least), reason)


def check_budget(config, available: int | None = None) -> Estimate:
    """Refuse, with the arithmetic, a run whose estimate exceeds what it may use here (``allowance``)."""
    needed = estimate(config)
    room = allowance(available)
    if needed.total > room.allowed:
        raise ValueError(
            f"this run needs about {human_bytes(needed.total)} ({needed.describe()}); a run may use "
            f"{human_bytes(room.allowed)} here ({room.reason}): use a smaller model, batch or fewer ranks"
        )
    return needed


def human_bytes(value: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover

"""What one visitor of the public app may ask for where it is less than the engine accepts: the engine's bounds
(``engine/limits.py``, their one home) narrowed to what a browser draws quickly and a shared server can afford,
each derived from or checked against the engine's own, so the app never offers what the engine refuses. A page
whose settings need no narrowing (the Plan page) reads the engine's bounds through its settings class."""

from __future__ import annotations

from engine import limits as engine
from engine import settings as shared
from engine.model_config import MODEL_BOUNDS
from engine.options import real, whole

MAX_RANKS = min(32, engine.MAX_RANKS)
"""p on the simulated pages: 32 rows still read as a Gantt."""
MAX_MICROBATCHES = min(256, engine.MAX_MICROBATCHES)
MIN_CHUNKS, MAX_CHUNKS = 2, min(8, engine.MAX_CHUNKS)
"""v for the families that take chunks."""
MAX_PAIRS = engine.MAX_PAIRS // 8
"""ranks × micro-batches × chunks: 16,384 (32 × 256 × 2 fits, 32 × 256 × 8 does not), an eighth of the
engine's, so one visitor's request draws in about a second."""
MAX_COST = 100.0
"""Largest cost (F, B, I, W, transfer, stage multiplier) a visitor types."""
MAX_OVERLAPPED = 2 * MAX_COST
"""DualPipeV's F&B pair is at most an F plus a B."""

MAX_MEMORY_BUDGET = 2.0 * MAX_RANKS
"""The Search page's budget, in micro-batches of a rank's share: 2p is more than any family holds (ZB-H2 holds
2p − 1), so a larger budget constrains nothing."""
MAX_FRONTIER_BUDGETS = 9
"""Budgets evenly spread on the frontier (each one a search; p and 2p − 1 are added: ``frontier_budgets``)."""
MAX_SEARCH_SECONDS = 30.0
"""The longest one search may run on the server (the page never blocks longer)."""

REAL_RUN_MAX_RANKS = 8
"""Ranks on the Real run page: each is a real set of stages on this server."""
REAL_RUN_MICROBATCHES = (1, 2, 4, 8, 16, 32)
REAL_RUN_MAX_CHUNKS = 4
REAL_RUN_MAX_LAYERS = min(32, MODEL_BOUNDS["layers"])
REAL_RUN_HIDDEN = (32, 64, 128, 256, 512)
REAL_RUN_MAX_REPEATS = 10

for _name, _value, _bound in (
    ("REAL_RUN_MAX_RANKS", REAL_RUN_MAX_RANKS, engine.MAX_RANKS),
    ("REAL_RUN_MICROBATCHES", max(REAL_RUN_MICROBATCHES), engine.MAX_MICROBATCHES),
    ("REAL_RUN_MAX_CHUNKS", REAL_RUN_MAX_CHUNKS, engine.MAX_CHUNKS),
    ("REAL_RUN_HIDDEN", max(REAL_RUN_HIDDEN), MODEL_BOUNDS["hidden"]),
):
    assert _value <= _bound, f"{_name} ({_value}) exceeds the engine's limit ({_bound})"


# -- the settings several pages share: the engine's declarations (``engine.settings``, which the command line reads)
# narrowed to these bounds, or the app's own where its widget differs (chunks from 2 on a slider, a stepped transfer)
RANKS = shared.RANKS.narrowed(high=MAX_RANKS)
MICROBATCHES = shared.MICROBATCHES.narrowed(high=MAX_MICROBATCHES)
CHUNKS = whole(
    "chunks",
    MIN_CHUNKS,
    MAX_CHUNKS,
    "Chunks per rank, v",
    "Model chunks each rank holds (interleaved schedules only).",
    widget="slider",
)
COMM = real(
    "comm",
    0.0,
    MAX_COST,
    "Transfer between ranks",
    "Time from the end of an action to its output's arrival on another rank.",
    step=0.25,
)
EXPERT_COMM = real(
    "a2a",
    0.0,
    MAX_COST,
    "All-to-all inside each F and B",
    "Communication inside each forward and each backward (an expert all-to-all's dispatch and combine, as in "
    "DeepSeek-V3's MoE layers). A lone action waits for it; an overlapped F&B pair (DualPipe, DualPipeV) runs "
    "each half's under the other half's compute.",
    step=0.25,
)
FAMILY = shared.SCHEDULE

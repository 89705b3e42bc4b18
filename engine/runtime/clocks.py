"""The clocks a run can time its actions with: their names, and what each measures in words (torch-free, so the
command line and the results can name a run's clock without importing PyTorch; ``timing.py`` reads them)."""

from __future__ import annotations

THREAD_CPU = "thread_cpu"
CUDA_EVENTS = "cuda_events"
WALL = "wall"

CLOCKS = {
    THREAD_CPU: "CPU time of the thread that ran the action (time.thread_time_ns), one intra-op thread",
    CUDA_EVENTS: "CUDA events on the device's stream",
    WALL: "wall clock (time.perf_counter)",
}
"""How a run's actions were timed (``engine.runtime.timing``), in words for the output."""

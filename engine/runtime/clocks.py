"""The clocks a run can time its actions with: their names, and what each measures in words (torch-free, so the
command line and the results can name a run's clock without importing PyTorch; ``timing.py`` reads them)."""

from __future__ import annotations

THREAD_CPU = "thread_cpu"
CUDA_EVENTS = "cuda_events"
WALL = "wall"
INSTRUCTIONS = "instructions"

CLOCKS = {
    THREAD_CPU: "CPU time of the thread that ran the action (time.thread_time_ns), one intra-op thread",
    CUDA_EVENTS: "CUDA events on the device's stream",
    WALL: "wall clock (time.perf_counter)",
    INSTRUCTIONS: (
        "instructions retired by the thread that ran the action (perf_event_open), one intra-op thread, in "
        "milliseconds at the fastest rate a calibration loop ran this run"
    ),
}
"""How a run's actions were timed (``engine.runtime.timing``), in words for the output."""

CLOCK_CHOICES = ("auto", INSTRUCTIONS)
"""What a run may ask for: "auto" (thread CPU time on the CPU, CUDA events on a GPU, wall clock on the distributed
backend) or the instructions counter (emulated backend on the CPU, where ``perf_event_open`` is allowed)."""

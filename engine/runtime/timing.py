"""Timing one action by what it costs the device, not by how long the operating system let it run.

* CPU (emulated backend): the thread's CPU time (``time.thread_time_ns``) with one intra-op thread, so every
  operation runs on the calling thread and is counted, and time the thread spends descheduled is not. A busy
  machine barely moves it (FIELD-NOTES: a 3.3 ms matmul stays ≤ 3.9 ms under two busy loops while its wall
  time reaches 8.5 ms).
* CUDA: CUDA events on the device's stream, read after one synchronise per step.
* wall: ``perf_counter`` — what the distributed backend keeps, since waiting for other ranks is its point.

Summaries over repeated steps: the median per action, and the spread (min and max).
"""

from __future__ import annotations

import contextlib
import time

import numpy as np
import torch

from .result import CLOCKS  # noqa: F401 - the clocks' names live with the results that report them


class ActionClock:
    """``start()``/``stop(token)`` around an action; ``milliseconds(handle)`` once the step has finished."""

    def __init__(self, device: torch.device, kind: str | None = None):
        self.kind = kind or ("cuda_events" if device.type == "cuda" else "thread_cpu")
        self.device = device

    def start(self):
        if self.kind == "cuda_events":
            event = torch.cuda.Event(enable_timing=True)
            event.record(torch.cuda.current_stream(self.device))
            return event
        return time.thread_time_ns() if self.kind == "thread_cpu" else time.perf_counter_ns()

    def stop(self, token):
        if self.kind == "cuda_events":
            event = torch.cuda.Event(enable_timing=True)
            event.record(torch.cuda.current_stream(self.device))
            return (token, event)
        now = time.thread_time_ns() if self.kind == "thread_cpu" else time.perf_counter_ns()
        return (now - token) / 1e6

    def finish(self) -> None:
        if self.kind == "cuda_events":
            torch.cuda.synchronize(self.device)

    def milliseconds(self, handle) -> float:
        if self.kind == "cuda_events":
            start, end = handle
            return float(start.elapsed_time(end))
        return float(handle)


@contextlib.contextmanager
def one_intra_op_thread():
    """Run PyTorch's operations on the calling thread (so its CPU time counts all of them); restore after."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def median_and_spread(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column of ``samples`` (repeats × actions): median, min and max."""
    samples = np.atleast_2d(np.asarray(samples, dtype=float))
    return np.median(samples, axis=0), samples.min(axis=0), samples.max(axis=0)

"""Timing one action by what it costs the device, not by how long the operating system let it run.

* CPU (emulated backend): the thread's CPU time (``time.thread_time_ns``) with one intra-op thread, so every
  operation runs on the calling thread and is counted, and time the thread spends descheduled is not. A busy
  machine barely moves it (FIELD-NOTES: a 3.3 ms matmul stays ≤ 3.9 ms under two busy loops while its wall
  time reaches 8.5 ms).
* CUDA: CUDA events on the device's stream, read after one synchronise per step.
* wall: ``perf_counter`` — what the distributed backend keeps, since waiting for other ranks is its point
  (``StepClock``: timestamps since the step began, so ranks' events can be laid side by side).

Both clocks are used the same way by the execution loop (``execute.py``): ``token = clock.start()`` before
an action, ``handle = clock.stop(token)`` after it; what a handle holds is the backend's to read.

Summaries over repeated steps: the median per action, and the spread (min and max).
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Protocol

import numpy as np
import torch

from .clocks import CUDA_EVENTS, THREAD_CPU, WALL


class Clock(Protocol):
    """What the execution loop needs of a clock."""

    def start(self) -> Any: ...

    def stop(self, token: Any) -> Any: ...


class ActionClock:
    """Durations (emulated backend): ``start()``/``stop(token)`` around an action; ``milliseconds(handle)``
    once the step has finished."""

    def __init__(self, device: torch.device, kind: str | None = None):
        self.kind = kind or (CUDA_EVENTS if device.type == "cuda" else THREAD_CPU)
        self.device = device

    def start(self) -> Any:
        if self.kind == CUDA_EVENTS:
            event = torch.cuda.Event(enable_timing=True)
            event.record(torch.cuda.current_stream(self.device))
            return event
        return time.thread_time_ns() if self.kind == THREAD_CPU else time.perf_counter_ns()

    def stop(self, token: Any) -> Any:
        if self.kind == CUDA_EVENTS:
            event = torch.cuda.Event(enable_timing=True)
            event.record(torch.cuda.current_stream(self.device))
            return (token, event)
        now = time.thread_time_ns() if self.kind == THREAD_CPU else time.perf_counter_ns()
        return (now - token) / 1e6

    def finish(self) -> None:
        if self.kind == CUDA_EVENTS:
            torch.cuda.synchronize(self.device)

    def milliseconds(self, handle: Any) -> float:
        if self.kind == CUDA_EVENTS:
            start, end = handle
            return float(start.elapsed_time(end))
        return float(handle)


class StepClock:
    """Timestamps (distributed backend): wall-clock seconds since the step began, each action's end read after
    its device has finished it. ``stop`` gives the action's (start, end)."""

    kind = WALL

    def __init__(self, device: torch.device):
        self.device = device
        self.origin = time.perf_counter()
        """``perf_counter`` at the start of the step (``begin``); every timestamp counts from it."""

    def begin(self) -> None:
        self.origin = time.perf_counter()

    def now(self) -> float:
        return time.perf_counter() - self.origin

    def start(self) -> float:
        return self.now()

    def stop(self, token: float) -> tuple[float, float]:
        if self.device.type == "cuda":  # the kernels run asynchronously: the action ends when they do
            torch.cuda.synchronize(self.device)
        return token, self.now()


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

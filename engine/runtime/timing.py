"""Timing one action by what it costs the device, not by how long the operating system let it run.

* CPU (emulated backend): the thread's CPU time (``time.thread_time_ns``) with one intra-op thread, so every
  operation runs on the calling thread and is counted, and time the thread spends descheduled is not. A busy
  machine barely moves it (a 3.3 ms matmul stays ≤ 3.9 ms under two busy loops while its wall time reaches
  8.5 ms).
* CUDA: CUDA events on the device's stream, read after one synchronise per step.
* instructions (``--clock instructions``, CPU, where Linux allows ``perf_event_open``): instructions the thread
  retired, which other work on the machine does not change (``perf.py``), turned into milliseconds at the
  fastest rate a short calibration loop ran (``calibrate_instructions``).
* wall: ``perf_counter`` — what the distributed backend keeps, since waiting for other ranks is its point
  (``StepClock``: timestamps since the step began, so ranks' events can be laid side by side).

Both clocks are used the same way by the execution loop (``execute.py``): ``token = clock.start()`` before
an action, ``handle = clock.stop(token)`` after it; what a handle holds is the backend's to read.

Summaries over repeated steps: each action's estimate (its fastest repeat by default, see [Note: interference
only slows] in ``interference.py``), its median, and the spread (min and max).
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any, Protocol

import numpy as np
import torch

from .clocks import CUDA_EVENTS, INSTRUCTIONS, THREAD_CPU, WALL
from .perf import open_counter, read_counter


class Clock(Protocol):
    """What the execution loop needs of a clock."""

    def start(self) -> Any: ...

    def stop(self, token: Any) -> Any: ...


class ActionClock:
    """Durations (emulated backend): ``start()``/``stop(token)`` around an action; ``milliseconds(handle)``
    once the step has finished. ``kind``: the device's own clock when None, or ``INSTRUCTIONS`` (one counter
    shared by every rank's clock: they all run on this thread)."""

    def __init__(self, device: torch.device, kind: str | None = None, counter: InstructionCounter | None = None):
        self.kind = kind or (CUDA_EVENTS if device.type == "cuda" else THREAD_CPU)
        self.device = device
        self.counter = counter
        assert (self.kind == INSTRUCTIONS) == (counter is not None), "the instructions clock reads a counter"

    def start(self) -> Any:
        if self.kind == CUDA_EVENTS:
            event = torch.cuda.Event(enable_timing=True)
            event.record(torch.cuda.current_stream(self.device))
            return event
        if self.counter is not None:
            return self.counter.read()
        return time.thread_time_ns() if self.kind == THREAD_CPU else time.perf_counter_ns()

    def stop(self, token: Any) -> Any:
        if self.kind == CUDA_EVENTS:
            event = torch.cuda.Event(enable_timing=True)
            event.record(torch.cuda.current_stream(self.device))
            return (token, event)
        if self.counter is not None:
            return self.counter.read() - token
        now = time.thread_time_ns() if self.kind == THREAD_CPU else time.perf_counter_ns()
        return (now - token) / 1e6

    def finish(self) -> None:
        if self.kind == CUDA_EVENTS:
            torch.cuda.synchronize(self.device)

    def milliseconds(self, handle: Any) -> float:
        if self.kind == CUDA_EVENTS:
            start, end = handle
            return float(start.elapsed_time(end))
        if self.counter is not None:
            return float(handle) * self.counter.ns_per_instruction / 1e6
        return float(handle)


class InstructionCounter:
    """The calling thread's instructions-retired counter (``perf.py``) and its calibration: nanoseconds per
    instruction at the fastest rate a matrix-multiply loop ran (the least disturbed of a few trials)."""

    CALIBRATION_TRIALS = 7

    def __init__(self) -> None:
        self.descriptor = open_counter()
        self.ns_per_instruction = self.calibrate()

    def read(self) -> int:
        return read_counter(self.descriptor)

    def calibrate(self) -> float:
        a = torch.randn(96, 96)
        rates = []
        for _ in range(self.CALIBRATION_TRIALS):
            began, counted = time.thread_time_ns(), self.read()
            for _ in range(50):
                torch.relu(a @ a).sum()
            instructions = self.read() - counted
            rates.append((time.thread_time_ns() - began) / max(instructions, 1))
        return min(rates)

    def close(self) -> None:
        os.close(self.descriptor)


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

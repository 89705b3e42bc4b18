"""Timing one action: perf_counter on the CPU, CUDA events on a GPU (read after one synchronise per step)."""

from __future__ import annotations

import sys
import time

import torch


class ActionClock:
    """``start()``/``stop(token)`` around an action; ``milliseconds(handle)`` once the step has finished."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.device = device

    def start(self):
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record(torch.cuda.current_stream(self.device))
            return event
        return time.perf_counter()

    def stop(self, token):
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record(torch.cuda.current_stream(self.device))
            return (token, event)
        return (time.perf_counter() - token) * 1e3

    def finish(self) -> None:
        if self.cuda:
            torch.cuda.synchronize(self.device)

    def milliseconds(self, handle) -> float:
        if self.cuda:
            start, end = handle
            return float(start.elapsed_time(end))
        return float(handle)


class Progress:
    """A one-line progress bar on stderr (quiet when disabled)."""

    def __init__(self, total: int, label: str, enabled: bool):
        self.total, self.label, self.enabled = max(total, 1), label, enabled
        self.shown = -1

    def update(self, done: int, note: str = "") -> None:
        if not self.enabled:
            return
        percent = int(100 * done / self.total)
        if percent == self.shown and done != self.total:
            return
        self.shown = percent
        bar = "#" * (percent // 5)
        sys.stderr.write(f"\r{self.label} [{bar:<20}] {percent:3d}% {note}")
        if done >= self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()

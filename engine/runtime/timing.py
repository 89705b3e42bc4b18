"""Timing one action: perf_counter on the CPU, CUDA events on a GPU (read after one synchronise per step)."""

from __future__ import annotations

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

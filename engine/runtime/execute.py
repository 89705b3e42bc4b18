"""One execution loop for both backends: walk a list of actions; for each, take its input from the transport,
run it on its rank's worker timed by that rank's clock, record the memory, hand the output to the transport.

The backends differ only in what they pass in:

                 actions                   transport                            clock
    emulated     every rank's, in the      ``InProcess``: an inbox, and a       thread CPU time or CUDA events,
                 untimed walk's order      timed copy to the consumer's device  one per rank (``ActionClock``)
    distributed  this rank's list          ``ProcessGroup``: recv (a recorded   wall clock since the step began
                                           wait), isend, an inbox for           (``StepClock``)
                                           same-rank hand-offs

Who hands what to whom is [Note: hand-off rules] in ``engine.dependencies``; the transports only move it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..dependencies import CompiledSchedule
from .errors import ActionFailed
from .stage import RankWorker
from .timing import ActionClock, Clock


class Transport(ABC):
    """Hands each action's output to the action that needs it, for one step.

    A product whose consumer is on the same rank (the last stage's F→B, V placement's turn) waits in the
    inbox; subclasses move what crosses ranks."""

    def __init__(self, c: CompiledSchedule):
        self.c = c
        self.inbox: dict[int, torch.Tensor] = {}
        """Hand-off key → tensor waiting for its consumer."""
        # the hand-off columns as lists: read once per action run, and a list costs a fraction of a numpy
        # array per element read
        self.needs, self.remote = c.from_neighbour.tolist(), c.neighbour_is_remote.tolist()
        self.makes, self.receivers, self.ranks = c.makes.tolist(), c.receiving_rank.tolist(), c.rank.tolist()

    def receive(self, i: int) -> torch.Tensor | None:
        """What action ``i`` needs from its neighbour stage (the activation for F, the output gradient for B
        and I), or None when it needs nothing."""
        key = self.needs[i]
        if key < 0:
            return None
        return self.receive_remote(i, key) if self.remote[i] else self.inbox.pop(key)

    def send(self, i: int, output: torch.Tensor | None) -> None:
        """Hand action ``i``'s output to the rank that needs it (nothing to hand on: W, the model's ends)."""
        receiver = self.receivers[i]
        if receiver < 0 or output is None:
            return
        if receiver == self.ranks[i]:
            self.inbox[self.makes[i]] = output
        else:
            self.send_remote(i, self.makes[i], output, receiver)

    @abstractmethod
    def receive_remote(self, i: int, key: int) -> torch.Tensor:
        """Product ``key``, made on another rank, for action ``i``."""

    @abstractmethod
    def send_remote(self, i: int, key: int, output: torch.Tensor, receiver: int) -> None:
        """Move action ``i``'s product ``key`` to rank ``receiver``."""

    def finish(self) -> None:  # noqa: B027 - optional: only the process group has sends in flight
        """Wait until everything sent this step has left (nothing to wait for unless a subclass says so)."""


class InProcess(Transport):
    """Emulated: every rank in this process. A product for another rank is copied to that rank's device — a
    real copy, timed by the producer's clock, whose median stands in for the transfer time."""

    def __init__(self, c: CompiledSchedule, devices: list[torch.device], clocks: Mapping[int, ActionClock]):
        super().__init__(c)
        self.devices, self.clocks = devices, clocks
        self.copies: list[Any] = []
        """Clock readings of this step's copies (read them with ``ActionClock.milliseconds``)."""

    def receive_remote(self, i: int, key: int) -> torch.Tensor:
        return self.inbox.pop(key)  # copied there by its producer

    def send_remote(self, i: int, key: int, output: torch.Tensor, receiver: int) -> None:
        clock = self.clocks[self.ranks[i]]
        token = clock.start()
        self.inbox[key] = output.to(self.devices[receiver], copy=True)
        self.copies.append(clock.stop(token))


class Watch:
    """What a backend hears as the loop goes; this default hears nothing."""

    def starting(self, i: int) -> None:
        """Action ``i`` is next: it is about to take its input, then run."""

    def finished(self, i: int) -> None:
        """Action ``i`` has run and handed its output on."""


@dataclass
class Measured:
    """What the loop measured, per action in compiled order (actions it did not run keep zeros)."""

    readings: dict[int, Any]
    """Action index → its clock's reading, for the backend to read once the step is over."""
    memory: np.ndarray
    """Bytes the action's rank held after it."""
    peak: np.ndarray
    """The most it held during it (a recomputing backward rebuilds activations first; else 0)."""


def execute(
    c: CompiledSchedule,
    actions: Iterable[int],
    workers: Mapping[int, RankWorker],
    clocks: Mapping[int, Clock],
    transport: Transport,
    watch: Watch | None = None,
) -> Measured:
    """Run ``actions`` (compiled indices, in an order their inputs allow) on the workers of their ranks.

    Raises ActionFailed naming the rank and the action when an action raises."""
    watch = watch or Watch()
    measured = Measured({}, np.zeros(c.num_actions), np.zeros(c.num_actions))
    ranks = c.rank.tolist()  # read once per action: a list costs less per read than an array
    for i in actions:
        rank, action = ranks[i], c.action(i)
        worker, clock = workers[rank], clocks[rank]
        watch.starting(i)
        incoming = transport.receive(i)
        token = clock.start()
        try:
            output = worker.perform(action, incoming)
            measured.readings[i] = clock.stop(token)
        except Exception as error:
            raise ActionFailed(rank, action, error) from error
        transport.send(i, output)
        measured.memory[i], measured.peak[i] = worker.memory_bytes(), worker.peak_during
        watch.finished(i)
    return measured

"""The process-group transport: one rank's hand-offs with ``torch.distributed`` (``execute.py`` runs the loop).

Before an action the rank receives what it needs from the rank that made it; the time blocked in ``recv`` is
recorded as a wait, apart from compute, and the heartbeat says whom the rank waits for (``status.py``). After
it, the output leaves with ``isend``, which never blocks; ``finish`` waits until every send has left. Messages
are matched by their hand-off key (``engine.dependencies``), used as the tag.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import torch
import torch.distributed as dist

from ...dependencies import CompiledSchedule
from ..execute import Transport
from ..timing import StepClock
from .status import COMPUTING, RECEIVING, RankStatus


class Peers(Protocol):
    """The point-to-point calls the transport makes: ``torch.distributed`` itself, or a stand-in in tests."""

    recv: Callable[..., Any]
    """``recv(tensor, src=rank, tag=key)``: blocks until the tensor has arrived."""
    isend: Callable[..., Any]
    """``isend(tensor, dst=rank, tag=key)``: returns at once, with a request to wait on."""


class ProcessGroup(Transport):
    """Distributed: this rank's hand-offs for one step; ``waits`` lists (start, end, key, action) of every
    blocking receive, in seconds on the step's clock."""

    def __init__(
        self,
        c: CompiledSchedule,
        boundary: torch.Tensor,
        clock: StepClock,
        status: RankStatus,
        peers: Peers = dist,
    ):
        super().__init__(c)
        self.boundary = boundary
        """An empty tensor of the shape, type and device of what crosses a stage boundary: each receive gets
        one like it."""
        self.clock, self.status, self.peers = clock, status, peers
        self.waits: list[tuple[float, float, int, str]] = []
        self.pending: list[tuple[Any, torch.Tensor]] = []
        """Sends in flight, with their tensors (kept alive until sent)."""

    def receive_remote(self, i: int, key: int) -> torch.Tensor:
        incoming = torch.empty_like(self.boundary)
        producer = self.c.producer_rank(key)
        self.status.set(RECEIVING, i, producer)
        began = self.clock.now()
        self.peers.recv(incoming, src=producer, tag=key)
        self.waits.append((began, self.clock.now(), key, self.c.label(i)))
        self.status.set(COMPUTING, i)
        return incoming

    def send_remote(self, i: int, key: int, output: torch.Tensor, receiver: int) -> None:
        tensor = output.contiguous()
        self.pending.append((self.peers.isend(tensor, dst=receiver, tag=key), tensor))

    def finish(self) -> None:
        for work, _ in self.pending:
            work.wait()
        self.pending.clear()

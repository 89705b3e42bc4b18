"""Heavy work admitted like a queue at a counter: a bounded number of jobs at once per server process, the others
waiting in arrival order with their place shown, and a refusal that says when to retry once the queue is full.
Real runs (one at a time, so timings are not disturbed) and searches (one at a time: CP-SAT takes both cores)
share it. Module state: one queue per server process, whatever the sessions (pure Python, no Streamlit)."""

from __future__ import annotations

import bisect
import contextlib
import ctypes
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field


class Refused(RuntimeError):
    """The queue is full, or the wait would be too long: the message says so and when to retry."""


@dataclass
class Admission:
    """``slots`` jobs at once; at most ``max_waiting`` more wait, each at most ``wait_limit_s``."""

    name: str
    """What the jobs are, in the messages ("search", "real run")."""
    slots: int
    max_waiting: int
    wait_limit_s: float
    typical_s: float
    """How long a job usually takes: what a refusal says to wait."""
    _lock: threading.Condition = field(default_factory=threading.Condition, repr=False)
    _queue: list = field(default_factory=list, repr=False)
    """(priority, ticket) of the jobs waiting, in the order they will run: by priority, then arrival."""
    _running: dict = field(default_factory=dict, repr=False)
    """ticket → (what, since, kind) of the jobs running now."""
    _tickets: Iterator[int] = field(default_factory=itertools.count, repr=False)

    def running(self) -> list[tuple[str, float]]:
        """What runs now and for how long (seconds)."""
        with self._lock:
            return [(what, time.monotonic() - since) for what, since, _ in self._running.values()]

    def waiting(self) -> int:
        with self._lock:
            return len(self._queue)

    @contextlib.contextmanager
    def admitted(
        self, what: str, tell: Callable[[str], object] = lambda text: None, *, priority: int = 0, kind: str = ""
    ) -> Iterator[float]:
        """Wait for a slot (``tell`` is told the visitor's place every half second), then hold it for the block;
        yields the seconds waited. ``Refused`` when the queue is full or the wait passes ``wait_limit_s``.
        ``priority``: a larger number waits behind every job of a smaller one that is waiting (then by arrival);
        ``kind``: what the job is called in other visitors' messages (default: the queue's ``name``)."""
        started = time.monotonic()
        kind = kind or self.name
        with self._lock:
            if len(self._queue) >= self.max_waiting:
                raise Refused(
                    f"{len(self._running)} {self.name}(es) running and {len(self._queue)} waiting, the most this "
                    f"server queues: try again in about {self.typical_s * (len(self._queue) + 1):.0f} s"
                )
            ticket = next(self._tickets)
            place = (priority, ticket)
            bisect.insort(self._queue, place)
            try:
                while not (self._queue[0] == place and len(self._running) < self.slots):
                    waited = time.monotonic() - started
                    if waited > self.wait_limit_s:
                        raise Refused(
                            f"waited {waited:.0f} s for another visitor's {self.name} to end, the most this server "
                            f"waits: try again in about {self.typical_s:.0f} s"
                        )
                    ahead = self._queue.index(place)
                    now = time.monotonic()
                    jobs = list(self._running.values())
                    running = "; ".join(f"{job} for {now - since:.0f} s" for job, since, _ in jobs)
                    other = jobs[0][2] if jobs else self.name
                    tell(
                        f"Waiting for another visitor's {other} ({running or 'ending'}), {ahead} more ahead of "
                        f"yours ({waited:.0f} s so far): this server runs {self.slots} at a time, so that each gets "
                        f"the machine's cores and its time limit or timings mean what they say."
                    )
                    self._lock.wait(0.5)
            except BaseException:
                self._queue.remove(place)
                self._lock.notify_all()
                raise
            self._queue.pop(0)
            self._running[ticket] = (what, time.monotonic(), kind)
        try:
            yield time.monotonic() - started
        finally:
            with self._lock:
                del self._running[ticket]
                self._lock.notify_all()
            give_memory_back()


def give_memory_back() -> None:
    """Return freed heap pages to the system (glibc keeps them otherwise: a server that ran a search held
    its peak for good). Linux with glibc only; elsewhere nothing."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


SEARCHES = Admission("search", slots=1, max_waiting=8, wait_limit_s=120.0, typical_s=10.0)
"""CP-SAT takes both cores: one search at a time per server (six at once made each 30 s search take 41–51 s and
the health check 4 s). A visitor's trace reading takes the same queue at a lower priority (``READING``): four
read at once took 76–79 s each, and each took the cores from the searches and the pages."""
READING = 1
"""The priority of a trace reading in ``SEARCHES``: it waits behind every search that waits."""
REAL_RUNS = Admission("real run", slots=1, max_waiting=8, wait_limit_s=600.0, typical_s=60.0)
"""One real run at a time, so that another's work does not disturb its timings."""

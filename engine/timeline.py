"""The Timeline: one row per action, shared by simulated and measured runs, and the metrics read from it.

Two bubble conventions, both common in the literature:

* ``bubble_fraction`` = idle / (p × makespan): the share of device time that is wasted (GPipe §2.3 writes
  it (p−1)/(m+p−1) for equal stages).
* ``bubble_ratio`` = idle / busy: Megatron-LM's convention, (p−1)/m for 1F1B and (p−1)/(v·m) interleaved.

The Zero Bubble papers count a third way: idle time *inside each rank's own span* (first start to last
end), because in training the next step's warm-up overlaps this step's tail (see ``span_idle``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from .dependencies import compiled
from .ir import Kind, Schedule

KIND_LETTERS = np.array([kind.name for kind in Kind])


def before_on_rank(values, ranks) -> np.ndarray:
    """Each row's value just before it on its rank (0 before a rank's first row); rows in rank-then-list order."""
    values, ranks = np.asarray(values, dtype=float), np.asarray(ranks)
    before = np.r_[0.0, values[:-1]]
    before[np.r_[True, ranks[1:] != ranks[:-1]]] = 0.0
    return before


def _snap(idle: float, scale: float) -> float:
    """Sums of float durations leave ±1e-16 crumbs; an idle time that small is zero."""
    return 0.0 if abs(idle) <= 1e-9 * max(scale, 1.0) else idle


@dataclass(frozen=True, eq=False)
class Timeline:
    """A pandas DataFrame with the columns below, plus how many ranks ran (a rank may have no work).

    Frozen: build a new one rather than change one (``from_slots`` builds it from a schedule's slot times)."""

    frame: pd.DataFrame
    num_ranks: int
    name: str = ""
    waits: pd.DataFrame | None = None
    """Measured runs on separate processes: time each rank spent blocked on a receive, one row per wait
    (rank, start, end, waiting_for); kept apart from compute, so busy time is compute only."""
    made_transfers: pd.DataFrame | Callable[[], pd.DataFrame] | None = None
    """The hand-offs (``transfers``), or how to make them when first read: a simulation's labels for its hand-offs
    were a fifth of its time, and most readers (metrics, searches, sweeps) never look at them."""

    @cached_property
    def transfers(self) -> pd.DataFrame | None:
        """One row per hand-off between ranks (``TRANSFER_COLUMNS``): when the producer ended (``made``), when the
        product left (``depart``: at ``made``, or later when it waited for a shared link) and arrived ``comm``
        later; an action on the same rank as its producer needs no transfer."""
        made = self.made_transfers
        return made() if callable(made) else made

    def __getstate__(self) -> dict:
        """Pickled (a run's timelines, sent back from its child process), a Timeline carries its hand-offs made."""
        return self.__dict__ | {"made_transfers": self.transfers}

    COLUMNS = (
        "rank",  # device index
        "stage",  # model stage index
        "chunk",  # which of the rank's stages (0 = nearer the input)
        "microbatch",
        "kind",  # "F", "B", "I" or "W"
        "start",  # time units (simulated) or milliseconds (measured)
        "end",
        "memory_after",  # activation memory on the rank after the action (see engine.simulator)
        "memory_peak",  # the most it held during the action (a recomputing backward rebuilds activations)
        "step",  # position in the rank's list; both actions of an overlapped pair share it
        "overlapped",  # True for the two halves of an overlapped F&B pair
        "source",  # "simulated" or "measured"
        "recompute",  # time at the start of a B or I spent re-running the forward (0 without recomputation)
    )
    TRANSFER_COLUMNS = ("from_rank", "to_rank", "depart", "arrive", "what", "for", "needed_at", "made")
    """A transfer of ``what`` (the producer's label) for ``for`` (the consumer's), which starts at ``needed_at``;
    ``depart`` − ``made`` is the time it waited for its link (0 where transfers are pure delays)."""

    @classmethod
    def from_columns(
        cls,
        columns: dict,
        num_ranks: int,
        *,
        source: str,
        name: str = "",
        waits: pd.DataFrame | None = None,
        transfers: pd.DataFrame | Callable[[], pd.DataFrame] | None = None,
    ) -> Timeline:
        # one DataFrame built in column order from numpy arrays (building it column by column was most of a
        # simulation's time)
        rows = len(columns["rank"])
        given = {key: np.broadcast_to(np.asarray(value), rows) for key, value in columns.items()}
        after = given["memory_after"].astype(float)
        # the most held during an action: what was reported, and never less than before and after it
        reported = np.broadcast_to(given.get("memory_peak", 0.0), rows)
        ordered = {
            **{key: given[key] for key in cls.COLUMNS if key in given},
            "source": np.full(rows, source, dtype=object),
            "recompute": given["recompute"].astype(float) if "recompute" in given else np.zeros(rows),
            "memory_peak": np.maximum.reduce([reported, after, before_on_rank(after, given["rank"])]),
        }
        frame = pd.DataFrame({key: ordered[key] for key in cls.COLUMNS})
        extras = [key for key in given if key not in cls.COLUMNS]
        if extras:
            frame = pd.concat([frame, pd.DataFrame({key: given[key] for key in extras})], axis=1)
        return cls(frame, num_ranks, name, waits, transfers)

    @classmethod
    def from_slots(
        cls,
        schedule: Schedule,
        starts,
        ends,
        memory_after,
        *,
        source: str,
        comm: float = 0.0,
        waits: pd.DataFrame | None = None,
        transfer_times: tuple[np.ndarray, np.ndarray] | None = None,
        **extra,
    ) -> Timeline:
        """The Timeline of a schedule whose slots ran at ``starts``/``ends`` (flat slot order); ``memory_after``
        per action in the compiled (rank-then-list) order. The simulator and the runtime both build theirs here;
        ``comm`` is the transfer time between ranks (a transfer leaves when its producer ends), unless
        ``transfer_times`` gives each action's input departure and arrival (shared links, ``engine.links``);
        ``extra`` adds per-action columns."""
        c = compiled(schedule)
        start = np.asarray(starts, dtype=float)[c.slot]
        end = np.asarray(ends, dtype=float)[c.slot]
        columns = {
            "rank": c.rank,
            "stage": c.stage,
            "chunk": c.stage // schedule.num_ranks,
            "microbatch": c.microbatch,
            "kind": KIND_LETTERS[c.kind],
            "start": start,
            "end": end,
            "memory_after": np.asarray(memory_after, dtype=float),
            "step": c.step,
            "overlapped": c.overlapped,
            **extra,
        }
        remote = np.flatnonzero(c.neighbour_is_remote)
        producer = c.producer_of_neighbour[remote]
        depart, arrive = (end[producer], end[producer] + comm) if transfer_times is None else (
            np.asarray(transfer_times[0])[remote], np.asarray(transfer_times[1])[remote])  # fmt: skip

        def transfers() -> pd.DataFrame:  # made when first read (``made_transfers``)
            return pd.DataFrame(
                {
                    "from_rank": c.rank[producer],
                    "to_rank": c.rank[remote],
                    "depart": depart,
                    "arrive": arrive,
                    "what": c.labels(producer),
                    "for": c.labels(remote),
                    "needed_at": start[remote],
                    "made": end[producer],
                },
                columns=list(cls.TRANSFER_COLUMNS),
            )

        return cls.from_columns(
            columns, schedule.num_ranks, source=source, name=schedule.name, waits=waits, transfers=transfers
        )

    # -- metrics ----------------------------------------------------------------------------------------
    # Metrics are computed once per Timeline (it is frozen) and kept, as functools.cached_property keeps them:
    # a page reads the same figures several times.
    @cached_property
    def _slot_frame(self) -> pd.DataFrame:
        """One row per occupied interval (an overlapped pair counts once), sorted by rank and start."""
        return self.frame.drop_duplicates(["rank", "step"]).sort_values(["rank", "start"])

    @cached_property
    def _per_rank(self) -> dict[str, np.ndarray]:
        """Busy time, first start and last end of every rank (ranks without work: 0, nan, nan)."""
        # the first row of each (rank, step): an overlapped pair counts once, as in _slot_frame (numpy, not pandas'
        # drop_duplicates: this runs once per simulation)
        rank_all, step_all = self.frame["rank"].to_numpy(dtype=np.int64), self.frame["step"].to_numpy(dtype=np.int64)
        _, first_rows = np.unique(rank_all * (int(step_all.max(initial=0)) + 1) + step_all, return_index=True)
        rank = rank_all[first_rows]
        start, end = self.frame["start"].to_numpy()[first_rows], self.frame["end"].to_numpy()[first_rows]
        busy = np.bincount(rank, weights=end - start, minlength=self.num_ranks)
        first, last = np.full(self.num_ranks, np.nan), np.full(self.num_ranks, np.nan)
        np.fmin.at(first, rank, start)
        np.fmax.at(last, rank, end)
        return {"busy": busy, "first": first, "last": last}

    @cached_property
    def makespan(self) -> float:
        if self.frame.empty:
            return 0.0
        return float(self.frame["end"].max() - self.frame["start"].min())

    def busy_per_rank(self) -> list[float]:
        return [float(b) for b in self._per_rank["busy"]]

    def idle_per_rank(self) -> list[float]:
        makespan = self.makespan
        return [_snap(makespan - busy, makespan) for busy in self.busy_per_rank()]

    @property
    def bubble_fraction(self) -> float:
        """idle / (ranks × makespan)."""
        total = self.num_ranks * self.makespan
        return 0.0 if total == 0 else sum(self.idle_per_rank()) / total

    @property
    def bubble_ratio(self) -> float:
        """idle / busy (Megatron's (p−1)/m convention)."""
        busy = sum(self.busy_per_rank())
        return 0.0 if busy == 0 else sum(self.idle_per_rank()) / busy

    def span_idle_per_rank(self) -> list[float]:
        """Idle time between each rank's first start and last end (the Zero Bubble papers' count)."""
        per_rank = self._per_rank
        span = np.nan_to_num(per_rank["last"] - per_rank["first"])
        return [_snap(float(s - b), self.makespan) if s else 0.0 for s, b in zip(span, per_rank["busy"], strict=True)]

    @property
    def period(self) -> float:
        """The longest rank span, first start to last end: what a repeated step costs when the next step's
        warm-up may start while this one drains (the Zero Bubble paper's "largest execution time of any stage",
        §3, with its post-validation of the optimizer step, §4)."""
        per_rank = self._per_rank
        spans = np.nan_to_num(per_rank["last"] - per_rank["first"])
        return float(spans.max()) if len(spans) else 0.0

    @property
    def period_bubble_rate(self) -> float:
        """The Zero Bubble paper's bubble rate, (cost − work) / cost with cost = ``period`` and work the busiest
        rank's (m·(T_F + T_B + T_W) when the stages are equal, §5.3)."""
        period = self.period
        busiest = max(self.busy_per_rank(), default=0.0)
        return 0.0 if period == 0 else _snap(period - busiest, period) / period

    @cached_property
    def _idle_intervals(self) -> pd.DataFrame:
        slots = self._slot_frame
        origin, makespan = (self.frame["start"].min(), self.frame["end"].max()) if len(self.frame) else (0.0, 0.0)
        rows = []
        for rank in range(self.num_ranks):
            mine = slots[slots["rank"] == rank]
            starts = np.r_[mine["start"].to_numpy(), makespan]
            ends = np.r_[origin, mine["end"].to_numpy()]
            keep = starts - ends > 1e-9 * max(makespan - origin, 1.0)
            rows.append(pd.DataFrame({"rank": rank, "start": ends[keep], "end": starts[keep]}))
        return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=["rank", "start", "end"])

    def idle_intervals(self) -> pd.DataFrame:
        """Every stretch a rank sits idle between 0 and the makespan (columns rank, start, end): the bubble,
        drawn as its own blocks."""
        return self._idle_intervals.copy()

    @property
    def span_idle_fraction(self) -> float:
        """Idle time inside each rank's span / (ranks × makespan): the Zero Bubble papers' count as a share."""
        total = self.num_ranks * self.makespan
        return 0.0 if total == 0 else sum(self.span_idle_per_rank()) / total

    @cached_property
    def expert_comm(self) -> dict[str, float] | None:
        """The expert all-to-all inside the actions (``engine.simulator.expert_overlap``): its total time, the part
        that ran under another micro-batch's compute, and that part's share; None when the costs had none."""
        if "expert_comm" not in self.frame:
            return None
        total = float(self.frame["expert_comm"].sum())
        hidden = float(self.frame["expert_hidden"].sum())
        return {"total": total, "hidden": hidden, "exposed": total - hidden,
                "hidden_fraction": hidden / total if total else 0.0}  # fmt: skip

    @property
    def num_transfers(self) -> int:
        """Hand-offs that cross from one rank to another (each pays the transfer time once)."""
        return 0 if self.transfers is None else len(self.transfers)

    def link_waits(self) -> np.ndarray:
        """Per transfer, the time its product waited for a busy link before leaving (``depart`` − ``made``): all
        0 when transfers are pure delays, positive where a shared link queued it (``engine.links``)."""
        if self.transfers is None or self.transfers.empty:
            return np.zeros(0)
        return np.maximum((self.transfers["depart"] - self.transfers["made"]).to_numpy(float), 0.0)

    @cached_property
    def _memory_curves(self) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        """Per rank, the activation memory over time as one step series (x, level): 0 from the start; while a
        slot runs, the most it holds (``memory_peak``: a recomputing backward's rebuilt activations count);
        after it, ``memory_after``. The chart draws this series and the peak is its maximum, so the two agree."""
        # numpy, not a pandas groupby: the closed-form panel and the sweeps ask for thousands of these
        frame = self.frame
        if frame.empty:
            return tuple((np.zeros(1), np.zeros(1)) for _ in range(self.num_ranks))
        rank, step = frame["rank"].to_numpy(), frame["step"].to_numpy()
        order = np.lexsort((np.arange(len(frame)), step, rank))  # by rank, then step, then row order
        rank, step = rank[order], step[order]
        first = np.flatnonzero(np.r_[True, (rank[1:] != rank[:-1]) | (step[1:] != step[:-1])])
        last = np.r_[first[1:], len(order)] - 1
        starts = np.minimum.reduceat(frame["start"].to_numpy()[order], first)
        ends = np.maximum.reduceat(frame["end"].to_numpy()[order], first)
        peaks = np.maximum.reduceat(frame["memory_peak"].to_numpy()[order], first)
        afters = frame["memory_after"].to_numpy()[order][last]
        slot_rank = rank[first]
        curves = []
        for r in range(self.num_ranks):
            mine = np.flatnonzero(slot_rank == r)
            if not len(mine):
                curves.append((np.zeros(1), np.zeros(1)))
                continue
            mine = mine[np.argsort(starts[mine], kind="stable")]
            x = np.r_[0.0, np.column_stack([starts[mine], ends[mine]]).ravel()]
            y = np.r_[0.0, np.column_stack([peaks[mine], afters[mine]]).ravel()]
            curves.append((x, y))
        return tuple(curves)

    def memory_curve(self, rank: int) -> tuple[np.ndarray, np.ndarray]:
        """Rank ``rank``'s activation memory as a step series (x, level), drawn with the level held to the
        next x (Plotly's line shape "hv")."""
        return self._memory_curves[rank]

    @cached_property
    def _peaks(self) -> tuple[float, ...]:
        return tuple(round(float(levels.max()), 9) for _, levels in self._memory_curves)

    def peak_memory_per_rank(self) -> list[float]:
        return list(self._peaks)

    def summary(self) -> dict:
        """The figures the CLI's --json and the app show."""
        return {
            "name": self.name,
            "ranks": self.num_ranks,
            "makespan": self.makespan,
            "bubble_fraction": self.bubble_fraction,
            "bubble_ratio": self.bubble_ratio,
            "busy": self.busy_per_rank(),
            "idle": self.idle_per_rank(),
            "span_idle": self.span_idle_per_rank(),
            "span_idle_fraction": self.span_idle_fraction,
            "period": self.period,
            "period_bubble_rate": self.period_bubble_rate,
            "peak_memory": self.peak_memory_per_rank(),
            "num_actions": int(len(self.frame)),
            "transfers": self.num_transfers,
        } | ({} if self.expert_comm is None else {"expert_comm": self.expert_comm})

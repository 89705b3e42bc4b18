"""Each rank's heartbeat, in memory the launcher shares with the rank processes: what it is doing, since
when, and for whom it waits — so a run that stalls names the rank that went silent, not the ones waiting.

Row per rank: [state, action index, peer rank, last update (time.time()), actions done].
"""

from __future__ import annotations

import time

STARTING, COMPUTING, RECEIVING, BETWEEN_STEPS, FINISHED = range(5)
FIELDS = 5


class RankStatus:
    """One rank's row of the shared array (``array`` None: report nothing, e.g. under torchrun)."""

    def __init__(self, array, rank: int):
        self.array, self.base = array, rank * FIELDS

    def set(self, state: int, action: int = -1, peer: int = -1, done: int | None = None) -> None:
        if self.array is None:
            return
        row = self.array
        row[self.base], row[self.base + 1], row[self.base + 2] = state, action, peer
        row[self.base + 3] = time.time()
        if done is not None:
            row[self.base + 4] = done


def read(array, num_ranks: int) -> list[dict]:
    rows = []
    for rank in range(num_ranks):
        state, action, peer, updated, done = array[rank * FIELDS : (rank + 1) * FIELDS]
        rows.append(
            {
                "rank": rank,
                "state": int(state),
                "action": int(action),
                "peer": int(peer),
                "updated": updated,
                "done": int(done),
            }
        )
    return rows


def process_state(pid: int) -> str:
    """The kernel's one-letter state of a process ("T": stopped by a signal), "" when unknown."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def silent_rank(rows: list[dict]) -> int | None:
    """The rank the others (transitively) wait for: follow "receiving from" until a rank that is not."""
    by_rank = {row["rank"]: row for row in rows}
    waiting = [row for row in rows if row["state"] == RECEIVING]
    if not waiting:
        return None
    rank, seen = waiting[0]["rank"], set()
    while by_rank[rank]["state"] == RECEIVING and by_rank[rank]["peer"] in by_rank and rank not in seen:
        seen.add(rank)
        rank = by_rank[rank]["peer"]
    return rank

"""How the schedule search does on a few sizes: the time to a proven optimum and to a 1 % gap, and its step
time against the best hand-made family whose peak memory stays within the same budget.

Small sizes run CP-SAT (exact), large ones the greedy (heuristic). Times are wall-clock seconds on this
machine (CP-SAT with 2 workers): to a 1 % gap, to a proven optimum ("—": not within the time limit), and in
all (the search stops early when a lower bound proves its schedule optimal).
--table-5: the Zero Bubble paper's Table 5 from its profiled timings (``engine.search.zero_bubble_paper``), the
period objective: the lab's ZB-H1 and the search at memory p, the search at 2p, next to the paper's ZB-1p/ZB-2p.
Run: .venv/bin/python benchmarks/search.py [--time-limit S] [--table-5] [--method auto|exact|heuristic]
"""

from __future__ import annotations

import argparse

from engine import UNIT, Costs, build_schedule, simulate
from engine.search import OPTIMAL, SearchProblem, SearchResult, search
from engine.search.frontier import family_points
from engine.search.zero_bubble_paper import TABLE_5

UNEVEN = Costs.of({"F": 1, "I": 2, "W": 1}, comm=0.5)
SLOW_W = Costs.of({"F": 2, "I": 2, "W": 1})
HEAVY_W = Costs.of({"F": 1, "I": 1, "W": 2}, comm=1)
CASES = [  # (ranks, micro-batches, placement, costs name, costs, budget)
    (2, 4, "loop", "F=I=W=1", UNIT, 2),
    (4, 8, "loop", "F=I=W=1", UNIT, 3),
    (4, 8, "loop", "F=I=W=1", UNIT, 4),
    (4, 8, "loop", "F=1,I=2,W=1,comm=0.5", UNEVEN, 4),
    (4, 8, "loop", "F=2,I=2,W=1", SLOW_W, 3),
    (4, 8, "v", "F=I=W=1", UNIT, 3),
    (4, 8, "v", "F=2,I=2,W=1", SLOW_W, 4),
    (4, 8, "v", "F=1,I=2,W=1,comm=0.5", UNEVEN, 2),
    (8, 32, "loop", "F=1,I=2,W=1,comm=0.5", UNEVEN, 8),
    (16, 64, "v", "F=2,I=2,W=1", SLOW_W, 16),
    (32, 256, "loop", "F=I=W=1", UNIT, 32),
    (32, 256, "v", "F=I=W=1", UNIT, 32),
    (32, 256, "loop", "F=1,I=2,W=1,comm=0.5", UNEVEN, 32),
    (32, 256, "v", "F=1,I=2,W=1,comm=0.5", UNEVEN, 32),
    (32, 256, "v", "F=1,I=1,W=2,comm=1", HEAVY_W, 32),
    (32, 256, "loop", "F=I=W=1", UNIT, 16),
]


def seconds_to_gap(result: SearchResult, gap: float) -> float | None:
    """When the best found came within ``gap`` of the best bound known then (None: never)."""
    own = max(value for name, value in result.lower_bounds.items() if name != "cp-sat")
    if not result.progress:
        return result.wall_time_s if result.gap <= gap else None
    for moment in result.progress:
        bound = max(own, moment.bound)
        if moment.makespan is not None and moment.makespan <= bound * (1 + gap) + 1e-9:
            return moment.seconds
    return result.wall_time_s if result.gap <= gap else None


def shown(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def versus(result: SearchResult, families: list, width: int) -> str:
    """The best of ``families`` and the searched makespan's ratio to it."""
    family = min(families, key=lambda f: f.makespan, default=None)
    if family is None:
        return f"{'none fits':{width}} {'':>5}"
    return f"{f'{family.name} {family.makespan:g}':{width}} {result.makespan / family.makespan:>5.3f}"


def table_5(time_limit: float, method: str, ranks: int | None = None) -> None:
    """Each row (only those with ``ranks`` when given): the lab's ZB-H1 against the paper's ZB-H1 = ZB-1p, the
    search at p, the search at 2p against ZB-2p (the paper's bubble rate on the period), and the seconds the 2p
    search took. One stage per rank, as the paper's schedules."""
    print(f"{'row':<24}{'ZB-H1 lab':>10}{'paper':>8}{'search p':>10}{'search 2p':>11}{'ZB-2p':>8}{'2p took':>9}"
          "  method at 2p")  # fmt: skip
    for row in TABLE_5:
        if ranks is not None and row.ranks != ranks:
            continue
        p, m, costs = row.ranks, row.microbatches, row.costs
        zb_h1 = simulate(build_schedule("zb-h1", p, m), costs).period_bubble_rate
        at_p, at_2p = (
            search(SearchProblem(p, m, costs, budget, objective="period", time_limit_s=time_limit), method)
            for budget in (p, 2 * p)
        )
        verdict = "at or below" if round(at_2p.period_bubble_rate, 4) <= row.zb_2p else "ABOVE"
        print(
            f"{row.label:<24}{zb_h1:>10.4f}{row.zb_h1:>8.4f}{at_p.period_bubble_rate:>10.4f}"
            f"{at_2p.period_bubble_rate:>11.4f}{row.zb_2p:>8.4f}{at_2p.wall_time_s:>8.1f}s  {at_2p.method} "
            f"({at_2p.status}); {verdict} ZB-2p"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--time-limit", type=float, default=20.0, help="seconds per search")
    parser.add_argument("--table-5", action="store_true", help="the Zero Bubble paper's Table 5 instead")
    parser.add_argument("--method", default="auto", help="the search method (auto, exact, heuristic)")
    parser.add_argument("--ranks", type=int, default=None, help="with --table-5: only the rows with this many ranks")
    args = parser.parse_args()
    if args.table_5:
        table_5(args.time_limit, args.method, args.ranks)
        return
    header = (
        f"{'p':>3} {'m':>4} {'place':5} {'costs':22} {'B':>3}  {'method':9} {'status':8} {'makespan':>8} "
        f"{'bound':>7} {'gap':>6}  {'to 1%':>6} {'to opt':>6} {'wall':>6}  "
        f"{'best family, same placement':27} {'ratio':>5}  {'best family, any':22} {'ratio':>5}"
    )
    print(header)
    print("-" * len(header))
    for p, m, placement, costs_name, costs, budget in CASES:
        result = search(SearchProblem(p, m, costs, budget, placement, time_limit_s=args.time_limit))
        within = [f for f in family_points(p, m, costs) if f.peak_memory <= budget + 1e-9]
        same = [f for f in within if f.placement == placement and f.num_chunks == (2 if placement == "v" else 1)]
        optimal = result.wall_time_s if result.status == OPTIMAL else None
        print(
            f"{p:>3} {m:>4} {placement:5} {costs_name:22} {budget:>3g}  {result.method:9} "
            f"{'optimal' if result.status == OPTIMAL else 'feasible':8} {result.makespan:>8g} "
            f"{result.lower_bound:>7g} {result.gap:>6.1%}  {shown(seconds_to_gap(result, 0.01)):>6} "
            f"{shown(optimal):>6} {result.wall_time_s:>6.2f}  {versus(result, same, 27)}  {versus(result, within, 22)}",
            flush=True,
        )
    print(
        "\nratio: searched makespan / the best hand-made family's whose peak stays within the budget B "
        "(micro-batches of a rank's share):\nfirst among the families the search could have returned (same "
        "placement, same chunks), then among all (ZB-V beside a loop search, the interleaved ones)."
    )


if __name__ == "__main__":
    main()

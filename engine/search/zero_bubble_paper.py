"""The Zero Bubble paper's own numbers (Qi, Wan, Huang and Lin, "Zero Bubble Pipeline Parallelism", ICLR 2024,
arXiv 2401.10241): its profiled F, B, W and transfer times (arXiv Table 9, ICLR Table 6; units not stated) and
the bubble rates it reports for them (Table 5), so the lab's simulator and search can be held to the paper.

The bubble rate is the paper's (§5.3): (cost − m(T_F + T_B + T_W)) / cost, with cost the largest execution time
of any stage — ``Timeline.period_bubble_rate``. The paper's B is the lab's I.
"""

from __future__ import annotations

from typing import NamedTuple

from ..costs import Costs


class ProfiledRow(NamedTuple):
    """One row of Table 9 and the same setting's rates in Table 5."""

    model: str
    ranks: int
    microbatches: int
    forward: float
    backward: float
    """T_B, the input-gradient pass (the lab's I)."""
    weight: float
    comm: float
    one_f_one_b: float
    zb_h1: float
    zb_h2: float
    zb_2p: float
    """Table 5's bubble rates: 1F1B, ZB-H1 (= ZB-1p in every row), ZB-H2 and the automatic ZB-2p."""

    @property
    def costs(self) -> Costs:
        return Costs.of({"F": self.forward, "I": self.backward, "W": self.weight}, comm=self.comm)

    @property
    def label(self) -> str:
        return f"{self.model}, p = {self.ranks}, m = {self.microbatches}"


TABLE_5 = (
    ProfiledRow("1.5B", 8, 24, 18.522, 18.086, 9.337, 0.601, 0.2431, 0.1585, 0.1083, 0.0433),
    ProfiledRow("1.5B", 8, 32, 18.513, 18.086, 9.331, 0.626, 0.1985, 0.1242, 0.0837, 0.0039),
    ProfiledRow("1.5B", 8, 64, 18.546, 18.097, 9.321, 0.762, 0.1240, 0.0674, 0.0444, 0.0026),
    ProfiledRow("6.2B", 8, 24, 29.718, 29.444, 19.927, 0.527, 0.2347, 0.1323, 0.0698, 0.0029),
    ProfiledRow("6.2B", 8, 32, 29.802, 29.428, 19.530, 0.577, 0.1898, 0.1045, 0.0559, 0.0022),
    ProfiledRow("6.2B", 8, 64, 29.935, 29.621, 19.388, 0.535, 0.1091, 0.0554, 0.0294, 0.0010),
    ProfiledRow("14.6B", 16, 48, 11.347, 11.248, 8.132, 0.377, 0.2552, 0.1397, 0.0672, 0.0066),
    ProfiledRow("14.6B", 16, 64, 11.307, 11.254, 8.101, 0.379, 0.2082, 0.1088, 0.0516, 0.0054),
    ProfiledRow("14.6B", 16, 128, 11.325, 11.308, 8.109, 0.378, 0.1251, 0.0576, 0.0266, 0.0028),
    ProfiledRow("28.3B", 32, 96, 10.419, 10.207, 7.715, 0.408, 0.2646, 0.1421, 0.0641, 0.0038),
    ProfiledRow("28.3B", 32, 128, 10.408, 10.204, 7.703, 0.408, 0.2168, 0.1106, 0.0490, 0.0029),
    ProfiledRow("28.3B", 32, 256, 10.402, 10.248, 7.698, 0.460, 0.1352, 0.0594, 0.0257, 0.0018),
)
"""Every row of Table 5, with Table 9's profiled times for it."""

"""How fast flash attention runs next to a GEMM: the causal mask's and the backward's measured cost.

The planner counts a causal kernel's FLOPs as half the s × s square (``operations.CAUSAL_SHARE``) and its backward's
as 2.5 × the forward's (``operations.FLASH_BACKWARD_FACTOR``). Neither runs at the rate of the full square's
forward: a causal kernel masks part of its diagonal blocks and its rows carry uneven work, and the backward sums dQ
across thread blocks and does more non-matrix work per product. Both costs shrink as the sequence grows.

The rates are read from one paper's figures, not fitted to any run the planner is compared with: Shah et al. 2024,
"FlashAttention-3", Figure 5 (forward) and Figure 6 (backward), H100 SXM5, BF16, head size 128, the same total
tokens (16k) at each sequence length. FlashAttention-2's bars on the same GPU give the same backward ratio at 4k
(310 ÷ 368 = 0.84 against 542 ÷ 638 = 0.85): the cost is the algorithm's, not one kernel's. The paper draws no
causal backward; the causal rate is taken to apply to the backward too.
"""

from __future__ import annotations

import bisect
import math

SEQUENCES = (512, 1024, 2048, 4096, 8192, 16384)
"""The figures' sequence lengths."""
FORWARD = (467, 565, 625, 638, 646, 648)
"""TFLOP/s, forward, no mask (Figure 5)."""
FORWARD_CAUSAL = (292, 423, 521, 579, 602, 616)
"""TFLOP/s, forward, causal mask (Figure 5)."""
BACKWARD = (316, 424, 501, 542, 559, 561)
"""TFLOP/s, backward, no mask (Figure 6)."""


def _at(rows: float, values: tuple[float, ...]) -> float:
    """``values`` at ``rows`` tokens a sequence, linear in log2 of the length between the figures' lengths and
    held at the ends."""
    if rows <= SEQUENCES[0]:
        return values[0]
    if rows >= SEQUENCES[-1]:
        return values[-1]
    upper = bisect.bisect_right(SEQUENCES, rows)
    lower = upper - 1
    part = (math.log2(rows) - math.log2(SEQUENCES[lower])) / (math.log2(SEQUENCES[upper]) - math.log2(SEQUENCES[lower]))
    return values[lower] + part * (values[upper] - values[lower])


def causal_rate(rows: float) -> float:
    """A causal forward's FLOP rate ÷ the unmasked forward's, for sequences of ``rows`` queries (0.91 at 4k)."""
    return _at(rows, FORWARD_CAUSAL) / _at(rows, FORWARD)


def backward_rate(rows: float) -> float:
    """The backward's FLOP rate ÷ the forward's, both unmasked (0.85 at 4k)."""
    return _at(rows, BACKWARD) / _at(rows, FORWARD)

"""Which GPU kernels communicate, and how much of their time ran while compute kernels ran: the measure of
DualPipe's point, read from a profiler trace (``engine.traces.chunks``).

DeepSeek-V3 overlaps each MoE layer's all-to-all (the experts' *dispatch* and *combine*) with the computation
of another micro-batch's chunk, so that "both all-to-all and PP communication can be fully hidden during
execution" (DeepSeek-V3 technical report, §3.2.1, DualPipe and computation-communication overlap); its
all-to-all kernels are DeepEP's, on a stream of their own, and the compute kernels take the remaining SMs. The
share of the communication kernels' time during which compute kernels also ran is what the overlap hid.

[Note: communication kernels] A kernel communicates when its own name (the function's qualified name, before
its template arguments and parameters: ``dpsk::ep::internode::dispatch`` in
``void dpsk::ep::internode::dispatch<false, 8, true, 8>(int4*, …, dpsk::ep::internode::SourceMeta*, …)``) is

* a DeepEP kernel of its ``intranode``, ``internode`` or ``internode_ll`` namespace — ``dispatch``,
  ``combine``, ``notify_dispatch``, ``cached_notify``, ``cached_notify_dispatch``, ``cached_notify_combine``,
  ``barrier``, ``clean_low_latency_buffer``: each reads or writes other ranks' buffers over NVLink or RDMA
  (deepseek-ai/DeepEP ``csrc/kernels/legacy/{intranode,internode,internode_ll}.cu``), under the open-source
  library's ``deep_ep::`` (or ``deep_ep::legacy::``) or DeepSeek's internal ``dpsk::ep::``, the namespace of
  the kernels in DeepSeek's published ``train.json`` (deepseek-ai/profile-data);
* or an NCCL kernel (``ncclKernel_…``, ``ncclDevKernel_…``).

Every other kernel computes. The name decides, not the stream: DeepEP also runs local work on its stream
(``get_dispatch_layout``, in its ``layout`` namespace, counts each rank's tokens from the routing without
touching another rank; the profile's communication stream also runs FP8 casts), and a kernel's parameters may
name DeepEP's types (``SourceMeta``) without the kernel communicating — hence the kernel's own name only.
A communication kernel's time includes its waiting for the other ranks (a combine spins until their tokens
arrive): the GPU is busy with it all the same, which is what overlap hides or not.

[Note: overlap arithmetic] Kernels of one class may run at once (two compute streams: a weight-gradient GEMM on
a side stream beside the main one), so each class's time is the length of the union of its kernels' intervals,
never their sum; the hidden time is the length of the intersection of the two unions. All on one GPU: a trace
with kernels on several devices is measured per device and the devices' figures added.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

Interval = tuple[float, float]

_OWN_NAME = re.compile(r"(?:void\s+)?((?:\(anonymous namespace\)|[\w~$.]+)(?:::(?:\(anonymous namespace\)|[\w~$.]+))*)")
"""A kernel's own qualified name: its leading ``void``, then namespaces and the function, up to its template
arguments or parameters (``(anonymous namespace)`` is part of a qualified name, not a parameter list)."""
_DEEPEP = re.compile(r"(?:^|::)(?:deep_ep|ep)::(?:legacy::)?(?:intranode|internode|internode_ll)::\w+$")
_NCCL = re.compile(r"nccl(?:Dev)?Kernel")


def own_name(kernel: str) -> str:
    """The kernel's qualified function name, without its return type, template arguments and parameters."""
    found = _OWN_NAME.match(kernel)
    return found.group(1) if found is not None else ""


def is_communication(kernel: str) -> bool:
    """Whether a kernel communicates ([Note: communication kernels]): DeepEP's all-to-all kernels, NCCL's."""
    name = own_name(kernel)
    return _DEEPEP.search(name) is not None or _NCCL.match(name) is not None


def merged(intervals: Iterable[Interval]) -> list[Interval]:
    """The union of intervals, as disjoint intervals in order (touching ones joined)."""
    union: list[Interval] = []
    for start, end in sorted(intervals):
        if union and start <= union[-1][1]:
            if end > union[-1][1]:
                union[-1] = (union[-1][0], end)
        else:
            union.append((start, end))
    return union


def total(union: Sequence[Interval]) -> float:
    """The length of disjoint intervals (``merged``'s)."""
    return sum(end - start for start, end in union)


def common(first: Sequence[Interval], second: Sequence[Interval]) -> float:
    """The length of the intersection of two unions of disjoint intervals (``merged``'s), in one pass."""
    length, i, j = 0.0, 0, 0
    while i < len(first) and j < len(second):
        low = max(first[i][0], second[j][0])
        high = min(first[i][1], second[j][1])
        if high > low:
            length += high - low
        if first[i][1] < second[j][1]:
            i += 1
        else:
            j += 1
    return length

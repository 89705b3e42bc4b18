"""GPU specs from datasheets, and the achieved efficiency that turns peak FLOP/s into time.

Units as the datasheets write them: FLOP/s in teraFLOP/s (10¹²), memory in decimal gigabytes (10⁹ bytes),
bandwidth in GB/s (10⁹ bytes/s). Taking "80 GB" as 80·10⁹ bytes leaves the few GB between that and the HBM's
80 GiB for the CUDA context, the allocator and the temporary buffers this model does not count.

[Note: bandwidth] NVLink bandwidth is quoted for both directions together (H100: 900 GB/s = 450 each way);
a ring collective moves data one way around the ring, so the cost model uses half of it per GPU — what
NCCL's tests call the bus bandwidth a ring can reach. The inter-node bandwidth is one NIC per GPU, one way
(8 × 400 Gb/s ConnectX-7 per 8-GPU node: 50 GB/s per GPU).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..limits import whole_number
from .bounds import MAX_BANDWIDTH_GB_S, MAX_GPUS_PER_NODE, MAX_MEMORY_GB, MAX_PEAK_TFLOPS, real_number

BYTES_PER_GB = 1e9

DEFAULT_EFFICIENCY = 0.43
"""Share of peak FLOP/s that one layer's kernels reach, when none is given: 43 %, the best BF16 MFU Llama 3
405B reached on H100s (Llama 3 paper, Table 4: 8,192 GPUs, 430 TFLOP/s per GPU). That figure is end to end
(bubble and communication included), so used as a kernel efficiency it makes the plan's own MFU a little
pessimistic. Narayanan et al. 2021 reached 52 % of an A100's peak for the 1T model (Table 1)."""


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model and the node it comes in."""

    name: str
    """Registry key, e.g. "h100"; "custom" for a hand-made one."""
    title: str
    """How the page names it."""
    peak_tflops: float
    """Dense BF16 tensor-core peak, teraFLOP/s (no structured sparsity)."""
    memory_gb: float
    """HBM capacity, GB (10⁹ bytes)."""
    nvlink_gb_s: float
    """NVLink bandwidth per GPU, both directions together, GB/s (see [Note: bandwidth])."""
    internode_gb_s: float
    """Network bandwidth per GPU between nodes, one direction, GB/s."""
    gpus_per_node: int = 8
    """GPUs joined by NVLink in one node."""
    source: str = ""
    """Where the figures come from."""

    def __post_init__(self) -> None:
        who = f"GPU {self.name}"
        real_number(f"{who}: peak TFLOP/s", self.peak_tflops, 0, MAX_PEAK_TFLOPS)
        real_number(f"{who}: memory (GB)", self.memory_gb, 0, MAX_MEMORY_GB)
        real_number(f"{who}: NVLink bandwidth (GB/s)", self.nvlink_gb_s, 0, MAX_BANDWIDTH_GB_S)
        real_number(f"{who}: inter-node bandwidth (GB/s)", self.internode_gb_s, 0, MAX_BANDWIDTH_GB_S)
        whole_number("GPUs per node", self.gpus_per_node, 1, MAX_GPUS_PER_NODE, who)

    @property
    def peak_flops(self) -> float:
        """Peak FLOP/s."""
        return self.peak_tflops * 1e12

    @property
    def memory_bytes(self) -> float:
        return self.memory_gb * BYTES_PER_GB

    @property
    def ring_bandwidth_intra(self) -> float:
        """Bytes/s one GPU sends around a ring inside a node: half the NVLink figure ([Note: bandwidth])."""
        return self.nvlink_gb_s / 2 * BYTES_PER_GB

    @property
    def ring_bandwidth_inter(self) -> float:
        """Bytes/s one GPU sends to another node."""
        return self.internode_gb_s * BYTES_PER_GB


GPU_PRESETS: dict[str, GpuSpec] = {
    gpu.name: gpu
    for gpu in (
        GpuSpec(
            "a100",
            "A100 80GB SXM",
            peak_tflops=312.0,
            memory_gb=80.0,
            nvlink_gb_s=600.0,
            internode_gb_s=25.0,
            source="NVIDIA A100 datasheet (BF16 tensor core 312 TFLOPS dense, 80 GB HBM2e, NVLink 600 GB/s); DGX A100: "
            "8 × 200 Gb/s HDR InfiniBand per node (Narayanan et al. 2021 §5), 25 GB/s per GPU",
        ),
        GpuSpec(
            "h100",
            "H100 SXM",
            peak_tflops=989.0,
            memory_gb=80.0,
            nvlink_gb_s=900.0,
            internode_gb_s=50.0,
            source="NVIDIA H100 datasheet (BF16 tensor core 1,979 TFLOPS with sparsity, 989 dense; 80 GB HBM3; NVLink "
            "900 GB/s); DGX H100: 8 × 400 Gb/s ConnectX-7, the 400 Gbps per GPU Llama 3 trained on (§3.3.1)",
        ),
        GpuSpec(
            "h200",
            "H200 SXM",
            peak_tflops=989.0,
            memory_gb=141.0,
            nvlink_gb_s=900.0,
            internode_gb_s=50.0,
            source="NVIDIA H200 datasheet (BF16 1,979 TFLOPS with sparsity, 989 dense; 141 GB HBM3e; NVLink 900 GB/s); "
            "DGX H200: 8 × 400 Gb/s ConnectX-7",
        ),
        GpuSpec(
            "b200",
            "B200 (HGX, 1,000 W)",
            peak_tflops=2250.0,
            memory_gb=180.0,
            nvlink_gb_s=1800.0,
            internode_gb_s=50.0,
            source="NVIDIA HGX B200 / DGX B200 specifications (BF16 4.5 PFLOPS with sparsity, 2.25 dense per GPU; "
            "1,440 GB HBM3e per 8 GPUs = 180 GB; NVLink 5 1.8 TB/s); DGX B200: 8 × 400 Gb/s ConnectX-7",
        ),
    )
}
"""The datasheet GPUs, by key."""


def gpu_named(name: str) -> GpuSpec:
    """A preset by key; ValueError listing the keys for an unknown one."""
    try:
        return GPU_PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown GPU {name!r}; choose one of: {', '.join(GPU_PRESETS)}, or custom") from None

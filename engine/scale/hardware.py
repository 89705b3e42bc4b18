"""GPU specs from datasheets, and the one calibrated number that turns peak FLOP/s into time.

Units as the datasheets write them: FLOP/s in teraFLOP/s (10¹²), memory in decimal gigabytes (10⁹ bytes),
bandwidth in GB/s (10⁹ bytes/s). Taking "80 GB" as 80·10⁹ bytes leaves the few GB between that and the HBM's
80 GiB for the CUDA context, the allocator and the temporary buffers this model does not count.

[Note: bandwidth] NVLink bandwidth is quoted for both directions together (H100: 900 GB/s = 450 each way);
a ring collective moves data one way around the ring, so the cost model uses half of it per GPU, at the share of
it NCCL's tests measure as their bus bandwidth (``NVLINK_RING_SHARE``). The inter-node bandwidth is one NIC per
GPU, one way (8 × 400 Gb/s ConnectX-7 per 8-GPU node: 50 GB/s per GPU), at ``NETWORK_RING_SHARE``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..limits import (
    MAX_BANDWIDTH_GB_S,
    MAX_GPUS_PER_NODE,
    MAX_MEMORY_GB,
    MAX_PEAK_TFLOPS,
    MAX_SMS,
    MIN_BANDWIDTH_GB_S,
    MIN_GEMM_SHARE,
    MIN_MEMORY_GB,
    MIN_PEAK_TFLOPS,
    real_number,
    whole_number,
)

BYTES_PER_GB = 1e9

HBM_SHARE = 0.9
"""Share of the datasheet HBM bandwidth a streaming (element-wise) kernel reaches. A stated constant, not fitted:
copy and STREAM-triad kernels measure about 87–92 % of the datasheet figure on A100 and H100 (copy-engine
memcpy tests land lower, about 75 %, but training's element-wise work runs as kernels)."""

NVLINK_RING_SHARE = 0.75
"""Share of the one-way NVLink rate a large NCCL ring collective reaches inside a node (its "bus bandwidth").
Stated, not fitted: nccl-tests' all_reduce_perf on 8 × A100 SXM reports about 200–230 GB/s of the 300
(github.com/NVIDIA/nccl-tests/issues/149 and /178), and on 8 × H100 SXM about 360 of the 450 without NVLink SHARP."""
NETWORK_RING_SHARE = 0.9
"""The same between nodes: all_reduce_perf across nodes of 8 A100s with 200 Gb/s HDR InfiniBand reports
85–96 % of the NICs' rate (github.com/NVIDIA/nccl-tests/issues/119: 84.8 to 96 GB/s of 100 for four HDR NICs)."""

# The one calibrated number per GPU: the share of peak a large GEMM's tiles reach, set so that the planner gives
# one published run's throughput exactly (``engine.scale.calibration.calibrate``; tests/engine/scale/test_calibration.py
# recomputes both from the runs and checks these constants).
A100_GEMM_SHARE = 0.722
A100_CALIBRATION = "set so that the planner gives Narayanan et al. 2021's 1T run (Table 1) its 163 TFLOP/s per GPU"
H100_GEMM_SHARE = 0.573
H100_CALIBRATION = (
    "set so that the planner gives the Llama 3 paper's 405B run on 8,192 GPUs (Table 4) its 430 TFLOP/s per GPU"
)


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
    hbm_gb_s: float = 3_350.0
    """HBM bandwidth, GB/s (datasheet)."""
    sm_count: int = 132
    """Streaming multiprocessors: a GEMM's output tiles run in waves of this many (``engine.scale.roofline``)."""
    gemm_share: float = 0.6
    """The one calibrated number: the share of peak a large GEMM's tiles reach (``roofline``). Everything else
    about time follows from the datasheet figures and each operation's FLOPs, bytes and shape."""
    gemm_share_source: str = "entered by hand"
    """Which published run set ``gemm_share`` (``engine.scale.calibration.calibrate``)."""
    gpus_per_node: int = 8
    """GPUs joined by NVLink in one node."""
    source: str = ""
    """Where the figures come from."""
    fp8_peak_tflops: float | None = None
    """Dense FP8 tensor-core peak, teraFLOP/s (None: the GPU has no FP8 tensor cores; FP8 GEMMs then run at
    ``peak_tflops``)."""

    def __post_init__(self) -> None:
        who = f"GPU {self.name}"
        real_number(f"{who}: peak TFLOP/s", self.peak_tflops, MIN_PEAK_TFLOPS, MAX_PEAK_TFLOPS, low_open=False)
        real_number(f"{who}: memory (GB)", self.memory_gb, MIN_MEMORY_GB, MAX_MEMORY_GB, low_open=False)
        for label, value in (
            ("NVLink bandwidth (GB/s)", self.nvlink_gb_s),
            ("inter-node bandwidth (GB/s)", self.internode_gb_s),
            ("HBM bandwidth (GB/s)", self.hbm_gb_s),
        ):
            real_number(f"{who}: {label}", value, MIN_BANDWIDTH_GB_S, MAX_BANDWIDTH_GB_S, low_open=False)
        real_number(f"{who}: GEMM share of peak", self.gemm_share, MIN_GEMM_SHARE, 1.0, low_open=False)
        whole_number("SMs", self.sm_count, 1, MAX_SMS, who)
        whole_number("GPUs per node", self.gpus_per_node, 1, MAX_GPUS_PER_NODE, who)

    @property
    def peak_flops(self) -> float:
        """Peak FLOP/s."""
        return self.peak_tflops * 1e12

    @property
    def fp8_peak_flops(self) -> float:
        """Peak FP8 FLOP/s (the BF16 peak where the GPU has no FP8)."""
        return (self.fp8_peak_tflops or self.peak_tflops) * 1e12

    @property
    def hbm_bytes_per_second(self) -> float:
        """What a streaming kernel moves per second: the datasheet's HBM bandwidth × ``HBM_SHARE``."""
        return self.hbm_gb_s * BYTES_PER_GB * HBM_SHARE

    @property
    def memory_bytes(self) -> float:
        return self.memory_gb * BYTES_PER_GB

    @property
    def ring_bandwidth_intra(self) -> float:
        """Bytes/s one GPU sends around a ring inside a node: half the NVLink figure ([Note: bandwidth]) at the
        share NCCL reaches (``NVLINK_RING_SHARE``)."""
        return self.nvlink_gb_s / 2 * BYTES_PER_GB * NVLINK_RING_SHARE

    @property
    def ring_bandwidth_inter(self) -> float:
        """Bytes/s one GPU sends to another node, at the share NCCL reaches (``NETWORK_RING_SHARE``)."""
        return self.internode_gb_s * BYTES_PER_GB * NETWORK_RING_SHARE


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
            hbm_gb_s=2_039.0,
            sm_count=108,
            gemm_share=A100_GEMM_SHARE,
            gemm_share_source=A100_CALIBRATION,
            source="NVIDIA A100 datasheet (BF16 tensor core 312 TFLOPS dense, 80 GB HBM2e, NVLink 600 GB/s); NVIDIA "
            "'GPU Performance Background User's Guide' (108 SMs, 2,039 GB/s from 80 GB of HBM2); DGX A100: "
            "8 × 200 Gb/s HDR InfiniBand per node (Narayanan et al. 2021 §5), 25 GB/s per GPU",
        ),
        GpuSpec(
            "h100",
            "H100 SXM",
            peak_tflops=989.0,
            memory_gb=80.0,
            nvlink_gb_s=900.0,
            internode_gb_s=50.0,
            hbm_gb_s=3_352.0,
            sm_count=132,
            gemm_share=H100_GEMM_SHARE,
            gemm_share_source=H100_CALIBRATION,
            fp8_peak_tflops=1979.0,
            source="NVIDIA H100 datasheet (BF16 tensor core 1,979 TFLOPS with sparsity, 989 dense; FP8 3,958 and "
            "1,979; 80 GB HBM3; NVLink "
            "900 GB/s); H100 architecture whitepaper (132 SMs on the SXM5 part, 3,352 GB/s); DGX H100: 8 × 400 Gb/s "
            "ConnectX-7, the 400 Gbps per GPU Llama 3 trained on (§3.3.1)",
        ),
        GpuSpec(
            "h800",
            "H800 SXM",
            peak_tflops=989.0,
            memory_gb=80.0,
            nvlink_gb_s=400.0,
            internode_gb_s=50.0,
            hbm_gb_s=3_352.0,
            sm_count=132,
            gemm_share=H100_GEMM_SHARE,
            gemm_share_source="the H100's (the same GH100 chip and compute; no published dense run on H800 "
            "calibrates it): " + H100_CALIBRATION,
            fp8_peak_tflops=1979.0,
            source="NVIDIA H800 SXM5 datasheet: the H100 SXM's compute (BF16 989 TFLOPS dense, FP8 1,979 dense), 80 GB "
            "HBM3 at 3.35 TB/s, NVLink cut to 400 GB/s; DeepSeek-V3 report §3.1 and §3.2.2: 8 H800s a node over "
            "NVLink and NVSwitch, InfiniBand between nodes at 50 GB/s a GPU (NVLink 160 GB/s achieved)",
        ),
        GpuSpec(
            "h200",
            "H200 SXM",
            peak_tflops=989.0,
            memory_gb=141.0,
            nvlink_gb_s=900.0,
            internode_gb_s=50.0,
            hbm_gb_s=4_800.0,
            sm_count=132,
            gemm_share=H100_GEMM_SHARE,
            fp8_peak_tflops=1979.0,
            gemm_share_source="the H100's (the same GH100 chip; no published run on H200 calibrates it): "
            + H100_CALIBRATION,
            source="NVIDIA H200 datasheet (BF16 1,979 TFLOPS with sparsity, 989 dense; FP8 3,958 and 1,979; 141 GB "
            "HBM3e; NVLink 900 GB/s); "
            "DGX H200: 8 × 400 Gb/s ConnectX-7",
        ),
        GpuSpec(
            "b200",
            "B200 (HGX, 1,000 W)",
            peak_tflops=2250.0,
            memory_gb=180.0,
            nvlink_gb_s=1800.0,
            internode_gb_s=50.0,
            hbm_gb_s=8_000.0,
            sm_count=148,
            gemm_share=H100_GEMM_SHARE,
            gemm_share_source=f"assumed the H100's (no published run on B200 calibrates it): {H100_CALIBRATION}",
            fp8_peak_tflops=4500.0,
            source="NVIDIA HGX B200 / DGX B200 specifications (BF16 4.5 PFLOPS with sparsity, 2.25 dense per GPU; "
            "FP8 9 PFLOPS with sparsity, 4.5 dense; 1,440 GB HBM3e per 8 GPUs = 180 GB; NVLink 5 1.8 TB/s; "
            "HBM3e 8 TB/s); 148 SMs as third-party "
            "die reports give it (not in NVIDIA's sheet); DGX B200: 8 × 400 Gb/s ConnectX-7",
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

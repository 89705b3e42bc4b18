"""An unlabelled GPU pipeline (PyTorch's Schedule1F1B writes no labels) is timed on the GPU — each
inferred action by the kernels its autograd ops launched, matched through the launches' ``correlation`` ids, as
Kineto records them: a ``cudaLaunchKernel`` (``cuda_runtime``) inside the op on the op's thread, and the kernel
(``kernel``, on its stream) carrying the same ``correlation``. The trace is built here from that documented
structure: CPU ops that take 10 µs, kernels that run 40–60 µs about 100 µs later."""

import gzip
import json
from pathlib import Path

import pytest

from engine.traces import import_traces

CPU_TID, AUTOGRAD_TID, STREAM = 1, 2, 7
ORDER = {0: ["F0", "F1", "B0", "B1"], 1: ["F0", "B0", "F1", "B1"]}  # 1F1B, 2 ranks, 2 micro-batches
KERNEL_US = {"F": 40.0, "B": 60.0}
GPU_LAG_US = 100.0


def _rank_trace(rank: int) -> tuple[dict, dict[str, tuple[float, float]]]:
    """One rank's Kineto-shaped trace, and each action's kernel time (µs)."""
    events: list[dict] = [{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#0", "ts": 0.0, "dur": 5000.0,
                           "pid": 1, "tid": CPU_TID, "args": {}}]  # fmt: skip
    kernels: dict[str, tuple[float, float]] = {}
    clock, gpu_free, correlation = 100.0, 0.0, 0

    def cpu(name, start, dur, tid=CPU_TID, **args):
        events.append({"ph": "X", "cat": "cpu_op", "name": name, "ts": start, "dur": dur, "pid": 1, "tid": tid,
                       "args": args})  # fmt: skip

    def hand_off(kind: str) -> None:  # a point-to-point op and its backend span
        nonlocal clock
        cpu(f"c10d::{kind}", clock, 30.0)
        cpu(f"nccl:{'send' if kind == 'send' else 'recv'}", clock + 1, 28.0)
        clock += 40.0

    for action in ORDER[rank]:
        kind, microbatch = action[0], int(action[1:])
        receives = (kind == "F" and rank == 1) or (kind == "B" and rank == 0)
        if receives:
            hand_off("recv_")
        tid = CPU_TID if kind == "F" else AUTOGRAD_TID
        name = "aten::linear" if kind == "F" else "autograd::engine::evaluate_function: AddmmBackward0"
        cpu(name, clock, 10.0, tid=tid, **{"Sequence number": 100 + microbatch})
        correlation += 1
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": clock + 2, "dur": 5.0,
                       "pid": 1, "tid": tid, "args": {"correlation": correlation}})  # fmt: skip
        start = max(clock + GPU_LAG_US, gpu_free)
        gpu_free = start + KERNEL_US[kind]
        kernel = {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_64x64_nn", "ts": start, "dur": KERNEL_US[kind]}
        events.append(kernel | {"pid": 0, "tid": STREAM, "args": {"correlation": correlation}})
        kernels[action] = (start, gpu_free)
        clock += 20.0
        sends = (kind == "F" and rank == 0) or (kind == "B" and rank == 1)
        if sends:
            hand_off("send")
    info = {"backend": "nccl", "rank": rank, "world_size": 2}
    return {"distributedInfo": info, "baseTimeNanoseconds": 0, "traceEvents": events}, kernels


def test_an_unlabelled_gpu_pipeline_is_timed_by_its_kernels(tmp_path: Path):
    paths, kernels = [], {}
    for rank in (0, 1):
        trace, kernels[rank] = _rank_trace(rank)
        path = tmp_path / f"rank{rank}.json.gz"
        path.write_bytes(gzip.compress(json.dumps(trace).encode()))
        paths.append(str(path))
    run = import_traces(paths)
    assert run.inferred
    assert [[str(a) for a in rank] for rank in run.schedule.ranks] == [
        ["0F0", "0F1", "0B0", "0B1"],
        ["1F0", "1B0", "1F1", "1B1"],
    ]
    frame = run.timeline.frame
    for rank in (0, 1):
        mine = frame[frame["rank"] == rank].sort_values("start")
        durations = list((mine["end"] - mine["start"]).round(6))
        expected = [(kernels[rank][a][1] - kernels[rank][a][0]) / 1e3 for a in ORDER[rank]]  # kernel time, ms
        assert durations == pytest.approx(expected), (rank, durations)  # not the CPU ops' 0.01 ms
    assert any("timed by the kernels its autograd ops launched" in note for note in run.notes)


def test_a_sendrecv_kernel_waiting_for_its_partner_is_a_wait_not_wire_time():
    """The labelled synthetic GPU pair (tests/fixtures/make_traces.py): a send and its receive end together,
    ``NCCL_US`` after the later of the two kernels starts. The hand-off is that wire time; the sender's kernel
    waiting for the receiver's is a wait to leave ("made" → "depart")."""
    import sys

    sys.path.insert(0, str(Path(__file__).parents[2] / "fixtures"))
    from make_traces import NCCL_US

    from engine.traces.examples import example_files

    run = import_traces(example_files("gpu-synthetic-2ranks"))
    assert run.transfer_ms == pytest.approx(NCCL_US / 1e3, abs=1e-5)  # the trace's times have 0.001 µs steps
    moves = run.timeline.transfers
    assert (moves["arrive"] - moves["depart"]).tolist() == pytest.approx([NCCL_US / 1e3] * len(moves), abs=1e-5)
    waited = moves[moves["depart"] > moves["made"] + 1e-9]
    assert list(waited["what"]) == ["0F1"]  # rank 1's stream ran 1B0 and its send before it took 0F1's activation

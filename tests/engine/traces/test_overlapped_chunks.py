"""One rank's overlapped chunks (``engine.traces.chunks``, ``engine.traces.overlap``): a trace shaped like
DeepSeek's published profile of DualPipe — chunk labels ``attn(F)``, ``dispatch(F)``… as user annotations on
the CPU, kernel launches carrying the ``correlation`` their kernels carry (and the ``ac2g`` flows beside them),
DeepEP's all-to-all kernels on a communication stream, compute kernels on a main and a side stream, one rank
of 64 and no pipeline send or receive. The trace is built here, event by event, and every expected figure is
worked out by hand from the intervals below (µs after ``BASE``), never from the code under test."""

import json

import numpy as np
import pytest

from engine.cli import main
from engine.traces import TraceError, import_traces
from engine.traces.chunks import OUTSIDE, OverlappedChunks, chunk_trace, keeps_chunk_labels
from engine.traces.imported import ImportOptions, read_traces
from engine.traces.overlap import common, is_communication, merged, own_name, total
from engine.traces.reading import read_rank_trace

BASE = 1_740_000_000_000_000  # µs since 1970, as Kineto writes them (whole numbers)
CPU, MAIN, AUTOGRAD = 500, 500, 600  # the process, its main thread, PyTorch's autograd thread
GPU, COMPUTE, SIDE, ALL_TO_ALL, NOTIFY = 0, 7, 23, 27, 28  # the device and its streams
DISPATCH = "void dpsk::ep::internode::dispatch<false, 8, true, 8>(int4*, float*, dpsk::ep::internode::SourceMeta*)"
COMBINE = "void dpsk::ep::internode::combine<false, 8, __nv_bfloat16, 8, 2, 16, 24>(int4*, float*, bool const*)"
NOTIFY_KERNEL = "void dpsk::ep::internode::cached_notify<false>(int, int, int, int, int*, int)"
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
LAYOUT = "void dpsk::ep::cuda::get_dispatch_layout<256, 32, 8>(long const*, int*, int*, int*, bool*, int)"
GEMM = "void cutlass::device_kernel<dpsk::grouped_gemm::cuda::fp8_ptp128c::GemmKernel>(dpsk::ep::internode::Meta)"

LABELS = [  # (name, start, end) on the main thread; mlp(W) holds attn(W), the innermost
    ("attn(F)", 10, 100), ("dispatch(F)", 100, 200), ("mlp(B)", 200, 300), ("combine(F)", 300, 400),
    ("attn(B)", 400, 600), ("mlp(W)", 600, 700), ("attn(W)", 620, 640), ("attn(F)", 900, 950),
]  # fmt: skip
KERNELS = [  # (correlation, launched at, launching thread, launch name, kernel name, stream, start, end)
    (1, 20, MAIN, "cudaLaunchKernel", "attn_fwd", COMPUTE, 1000, 1100),  # attn(F)
    (9, 105, MAIN, "cudaLaunchKernel", LAYOUT, ALL_TO_ALL, 1020, 1040),  # dispatch(F): local, computes
    (8, 110, MAIN, "cudaLaunchKernelExC", DISPATCH, ALL_TO_ALL, 1050, 1250),  # dispatch(F)
    (2, 210, MAIN, "cudaLaunchKernel", "mlp_bwd", COMPUTE, 1100, 1300),  # mlp(B)
    (10, 310, MAIN, "cuLaunchKernel", COMBINE, ALL_TO_ALL, 1400, 1520),  # combine(F)
    (12, 315, MAIN, "cudaLaunchKernel", NOTIFY_KERNEL, NOTIFY, 1480, 1510),  # combine(F), inside the one above
    (11, 320, MAIN, "cudaLaunchKernel", NCCL, ALL_TO_ALL, 1700, 1750),  # combine(F), nothing beside it
    (3, 410, AUTOGRAD, "cudaLaunchKernel", "attn_bwd_1", COMPUTE, 1300, 1400),  # attn(B), from the autograd thread
    (4, 450, AUTOGRAD, "cudaLaunchKernel", "attn_bwd_2", COMPUTE, 1400, 1450),  # attn(B)
    (5, 630, MAIN, "cudaLaunchKernel", "attn_wgrad", COMPUTE, 1500, 1550),  # attn(W), inside mlp(W)
    (6, 650, MAIN, "cudaLaunchKernel", "mlp_wgrad", COMPUTE, 1550, 1600),  # mlp(W)
    (7, 660, MAIN, "cudaLaunchKernel", GEMM, SIDE, 1560, 1620),  # mlp(W), on the side stream
    (13, 800, MAIN, "cudaLaunchKernel", "optimizer", COMPUTE, 1800, 1850),  # no label open anywhere
]
UNLAUNCHED = (99, "memset_like", COMPUTE, 1900, 1910)  # a kernel whose launch the trace lacks

# By hand, from the intervals above (µs).
# Compute kernels: [1000,1100] [1020,1040] [1100,1300] [1300,1400] [1400,1450] | [1500,1550] [1550,1600]
# [1560,1620] | [1800,1850] | [1900,1910]: union [1000,1450] + [1500,1620] + [1800,1850] + [1900,1910].
COMPUTE_US = 450 + 120 + 50 + 10
# Communication: [1050,1250] | [1400,1520] with [1480,1510] inside it | [1700,1750].
COMMUNICATION_US = 200 + 120 + 50
# Under compute: all of [1050,1250]; of [1400,1520], [1400,1450] and [1500,1520]; none of [1700,1750].
HIDDEN_US = 200 + 50 + 20
# Every kernel: [1000,1620] + [1700,1750] + [1800,1850] + [1900,1910]; first start 1000, last end 1910.
BUSY_US, SPAN_US = 620 + 50 + 50 + 10, 910
ROWS = {  # label: (spans, kernels, kernel µs, communication µs, compute µs, hidden µs), in pass order F, B, W
    "attn(F)": (2, 1, 100, 0, 100, 0),
    "dispatch(F)": (1, 2, 220, 200, 20, 200),
    "combine(F)": (1, 3, 200, 200, 0, 50 + 20),  # its own union [1400,1520] + [1700,1750], under compute
    "mlp(B)": (1, 1, 200, 0, 200, 0),
    "attn(B)": (1, 2, 150, 0, 150, 0),
    "mlp(W)": (1, 2, 110, 0, 110, 0),
    "attn(W)": (1, 1, 50, 0, 50, 0),
}
OUTSIDE_ROW = (0, 2, 60, 0, 60, 0)  # the kernel launched under no label and the one with no launch


def _x(category, name, start, end, pid, tid, **args) -> dict:
    return {"ph": "X", "cat": category, "name": name, "pid": pid, "tid": tid, "ts": BASE + start,
            "dur": end - start, "args": args}  # fmt: skip


def chunk_events(labels=LABELS, kernels=KERNELS, unlaunched=(UNLAUNCHED,), step=(1, 0, 2000)) -> list[dict]:
    """The trace's events: the step, the labels (and a label that is no chunk's), CPU ops, launches with their
    flows, kernels, and runtime calls that launch nothing."""
    number, start, end = step
    events = [_x("user_annotation", f"ProfilerStep#{number}", start, end, CPU, MAIN),
              _x("user_annotation", "1F1B", start + 5, end - 5, CPU, MAIN)]  # fmt: skip
    events += [_x("user_annotation", name, low, high, CPU, MAIN) for name, low, high in labels]
    for correlation, at, thread, launch, kernel, stream, low, high in kernels:
        events.append(_x("cpu_op", "aten::mm", at - 2, at + 8, CPU, thread))
        category = "cuda_driver" if launch.startswith("cu") and not launch.startswith("cuda") else "cuda_runtime"
        events.append(_x(category, launch, at, at + 5, CPU, thread, correlation=correlation, cbid=307))
        events.append({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": correlation, "pid": CPU, "tid": thread,
                       "ts": BASE + at})  # fmt: skip
        events.append(_x("kernel", kernel, low, high, GPU, stream, correlation=correlation, stream=stream, device=0))
        events.append({"ph": "f", "cat": "ac2g", "name": "ac2g", "id": correlation, "pid": GPU, "tid": stream,
                       "ts": BASE + low, "bp": "e"})  # fmt: skip
    for correlation, kernel, stream, low, high in unlaunched:
        events.append(_x("kernel", kernel, low, high, GPU, stream, correlation=correlation))
    events.append(_x("cuda_runtime", "cudaStreamWaitEvent", 115, 117, CPU, MAIN, correlation=5000))
    events.append(_x("cuda_runtime", "cudaEventQuery", 118, 119, CPU, MAIN, correlation=5001))
    events.append(_x("gpu_memcpy", "Memcpy DtoD (Device -> Device)", 1460, 1461, GPU, COMPUTE, correlation=5002))
    return events


def write_trace(path, events) -> str:
    header = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H800"}],
              "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 64}}  # fmt: skip
    path.write_text(json.dumps({**header, "traceEvents": events, "traceName": "synthetic"}))
    return str(path)


@pytest.fixture
def chunks_file(tmp_path) -> str:
    return write_trace(tmp_path / "chunks.json", chunk_events())


def _ms(microseconds: float) -> float:
    return pytest.approx(microseconds / 1000, abs=1e-9)


# -- the arithmetic -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(20))
def test_unions_and_their_intersection_equal_a_count_of_the_microseconds_covered(seed):
    """``merged``/``total``/``common`` against a count of whole microseconds marked covered, interval by
    interval (numpy's boolean arrays): overlapping and touching intervals, and empty ones."""
    rng = np.random.default_rng(seed)

    def intervals():
        starts = rng.integers(0, 500, size=rng.integers(0, 30))
        lengths = rng.integers(0, 60, size=len(starts))
        return [(float(s), float(s + length)) for s, length in zip(starts, lengths, strict=True)]

    first, second = intervals(), intervals()
    covered = [np.zeros(600, bool), np.zeros(600, bool)]
    for marks, found in zip(covered, (first, second), strict=True):
        for start, end in found:
            marks[int(start) : int(end)] = True
    assert total(merged(first)) == covered[0].sum()
    assert total(merged(second)) == covered[1].sum()
    assert common(merged(first), merged(second)) == (covered[0] & covered[1]).sum()


@pytest.mark.parametrize(
    ("name", "talks"),
    [
        (DISPATCH, True),
        (COMBINE, True),
        (NOTIFY_KERNEL, True),
        ("void dpsk::ep::internode::notify_dispatch<false, 8>(int const*, long*, int)", True),
        ("void deep_ep::legacy::intranode::dispatch<8, 768, 8192>(int4*, float*)", True),
        ("void deep_ep::internode_ll::combine<true, 7168>(void*, void*)", True),
        ("deep_ep::intranode::cached_notify_combine(void**, int*, int, int)", True),
        (NCCL, True),
        ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)", True),
        (LAYOUT, False),  # DeepEP's layout counts tokens locally
        ("void deep_ep::legacy::layout::get_dispatch_layout<256, 32, 8>(long const*, int*)", False),
        (GEMM, False),  # DeepEP's type in its parameters, not its name
        ("void cuda::per_token_cast_to_fp8_with_channels<__nv_bfloat16, 128, false>(__nv_bfloat16 const*)", False),
        ("void (anonymous namespace)::elementwise_kernel_with_index<int, at::native::arange_cuda_out>(int)", False),
        ("_ZN2at6native54_GLOBAL__N__d8ceb000_21_DistributionNormal_cu_17e44f7d43distribution_kernel", False),
        ("", False),
    ],
)
def test_communication_kernels_are_deepeps_all_to_all_and_nccls_by_their_own_name(name, talks):
    assert is_communication(name) is talks


def test_a_kernels_own_name_leaves_out_its_return_type_template_arguments_and_parameters():
    assert own_name(DISPATCH) == "dpsk::ep::internode::dispatch"
    assert own_name(GEMM) == "cutlass::device_kernel"
    assert own_name("void (anonymous namespace)::f<int>(int)") == "(anonymous namespace)::f"


# -- the reading ----------------------------------------------------------------------------------------------
def test_one_ranks_overlapped_chunks_are_measured_as_worked_out_by_hand(chunks_file):
    chunks = read_traces([chunks_file])
    assert isinstance(chunks, OverlappedChunks)
    assert (chunks.rank, chunks.world_size, chunks.backend, chunks.step) == (0, 64, "nccl", None)
    assert chunks.communication_ms == _ms(COMMUNICATION_US)
    assert chunks.compute_ms == _ms(COMPUTE_US)
    assert chunks.hidden_ms == _ms(HIDDEN_US)
    assert chunks.hidden_fraction == pytest.approx(HIDDEN_US / COMMUNICATION_US)
    assert chunks.exposed_ms == _ms(COMMUNICATION_US - HIDDEN_US)
    assert (chunks.gpu_busy_ms, chunks.gpu_span_ms) == (_ms(BUSY_US), _ms(SPAN_US))
    assert (chunks.communication_kernels, chunks.compute_kernels) == (4, 10)
    got = {row.label: row for row in chunks.components}
    assert list(got) == list(ROWS)  # pass order, each pass's components as they first ran
    for label, (spans, kernels, kernel_us, talk_us, compute_us, hidden_us) in ROWS.items():
        row = got[label]
        assert (row.spans, row.kernels) == (spans, kernels), label
        assert row.kernel_ms == _ms(kernel_us), label
        assert (row.communication_kernel_ms, row.compute_kernel_ms) == (_ms(talk_us), _ms(compute_us)), label
        assert row.hidden_ms == _ms(hidden_us), label
    outside = chunks.outside
    assert outside is not None and outside.label == OUTSIDE
    assert (outside.spans, outside.kernels, outside.kernel_ms) == (0, 2, _ms(OUTSIDE_ROW[2]))
    assert sum(row.kernel_ms for row in (*chunks.components, outside)) == _ms(sum(k[7] - k[6] for k in KERNELS) + 10)
    assert "0 pipeline send(s) and 0 receive(s)" in chunks.bubble
    notes = " ".join(chunks.notes)
    assert "2 kernel launch(es) came from a thread with no label open" in notes  # attn(B)'s, borrowed
    assert "2 kernel(s), 0.060 ms, launched under no chunk label" in notes
    assert "1 GPU memory copies and sets" in notes


def test_the_cli_prints_the_overlap_and_its_json_has_the_overlap_object(chunks_file, capsys):
    assert main(["trace", chunks_file, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    overlap = summary["overlap"]
    assert summary["kind"] == "overlapped_chunks" and summary["bubble_fraction"] is None
    assert overlap["communication_ms"] == _ms(COMMUNICATION_US)
    assert overlap["compute_ms"] == _ms(COMPUTE_US)
    assert overlap["hidden_ms"] == _ms(HIDDEN_US)
    assert overlap["hidden_fraction"] == pytest.approx(HIDDEN_US / COMMUNICATION_US)
    assert [row["label"] for row in overlap["components"]] == list(ROWS)
    assert overlap["components"][1] | {"kernel_ms": 0} == {
        "label": "dispatch(F)", "component": "dispatch", "pass": "F", "spans": 1, "kernels": 2, "kernel_ms": 0,
        "communication_kernel_ms": _ms(200), "compute_kernel_ms": _ms(20), "hidden_ms": _ms(200),
    }  # fmt: skip
    assert overlap["outside_chunks"]["kernels"] == 2
    assert main(["trace", chunks_file, "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "one rank's overlapped chunks (rank 0 of 64, nccl)" in printed and "no pipeline bubble" in printed
    assert f"hidden          {HIDDEN_US / 1000:10.3f} ms" in printed
    assert any(line.startswith("dispatch(F)") and "0.220" in line for line in printed.splitlines())


def test_a_profiler_step_reads_the_kernels_launched_in_it(tmp_path):
    second = [("attn(F)", 2100, 2200)], [(50, 2150, MAIN, "cudaLaunchKernel", "attn_fwd", COMPUTE, 2500, 2600)]
    events = chunk_events() + chunk_events(*second, unlaunched=(), step=(2, 2000, 3000))
    path = write_trace(tmp_path / "two-steps.json", events)
    first = read_traces([path], ImportOptions(step=1))
    only = read_traces([path], ImportOptions(step=2))
    assert isinstance(first, OverlappedChunks) and isinstance(only, OverlappedChunks)
    assert first.compute_ms == _ms(COMPUTE_US) and first.communication_ms == _ms(COMMUNICATION_US)
    assert (only.step, only.compute_ms, only.communication_ms, only.hidden_fraction) == (2, _ms(100), 0, None)
    assert [row.label for row in only.components] == ["attn(F)"] and only.outside is None
    with pytest.raises(TraceError, match="step 7"):
        read_traces([path], ImportOptions(step=7))


# -- what is not such a trace, and what cannot be read --------------------------------------------------------
def test_a_pipeline_label_or_a_second_file_keeps_the_pipeline_reading(tmp_path, chunks_file):
    labelled = write_trace(tmp_path / "pp.json", chunk_events() + [_x("user_annotation", "PP:0F0", 5, 50, CPU, MAIN)])
    assert chunk_trace([read_rank_trace(labelled, keep=keeps_chunk_labels)]) is None
    assert chunk_trace([read_rank_trace(chunks_file, keep=keeps_chunk_labels)]) is not None
    other = write_trace(tmp_path / "other.json", chunk_events())
    with pytest.raises(TraceError, match="two files claim rank 0"):
        read_traces([chunks_file, other])


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (["--grid"], "--grid needs a pipeline's step"),
        (["--compare", "--grid"], "--grid and --compare need a pipeline's step"),
        (["--ranks", "1,2"], "2 ranks given for 1 file"),
        (["--step", "7"], "step 7"),
    ],
)
def test_what_one_ranks_chunks_cannot_give_is_refused_in_one_line(chunks_file, capsys, arguments, says):
    assert main(["trace", chunks_file, "--quiet", *arguments]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], lines


def test_import_traces_reads_pipelines_only_and_says_what_this_is(chunks_file):
    with pytest.raises(TraceError, match=r"one rank's overlapped chunks .*: not a pipeline's step"):
        import_traces([chunks_file])


def test_chunk_labels_without_kernels_are_refused_in_one_line(tmp_path):
    path = write_trace(tmp_path / "cpu-only.json", [e for e in chunk_events() if e.get("cat") != "kernel"])
    with pytest.raises(TraceError) as refused:
        read_traces([path], names=["cpu-only.json"])
    message = str(refused.value)
    assert "\n" not in message and message.startswith("cpu-only.json: labels chunks (")
    assert "holds no GPU kernel" in message


def test_odd_ids_and_fields_are_not_launches_and_bad_fields_are_refused_in_one_line(tmp_path):
    events = chunk_events()
    for event in events:  # attn(F)'s launch: a correlation that is true, not 1
        if event.get("cat") == "cuda_runtime" and event["args"].get("correlation") == 1:
            event["args"]["correlation"] = True
    chunks = read_traces([write_trace(tmp_path / "odd.json", events)])
    assert isinstance(chunks, OverlappedChunks)
    assert chunks.outside is not None and chunks.outside.kernels == 3  # the attn(F) kernel has no launch now
    assert {row.label: row.kernels for row in chunks.components}["attn(F)"] == 0
    events[3]["dur"] = "long"  # a label's duration that is no number
    with pytest.raises(TraceError) as refused:
        read_traces([write_trace(tmp_path / "bad.json", events)])
    assert "\n" not in str(refused.value) and '"dur" is "long"' in str(refused.value)

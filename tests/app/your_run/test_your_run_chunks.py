"""Your run with one rank's overlapped chunks uploaded (a trace shaped like DeepSeek's profile of DualPipe, built
here): the overlap's cards and each component's row as the engine reads them, and no pipeline Gantt or bubble."""

import io
import json

import pytest
from apptest_support import APP, metrics
from drawn import drawn_figures
from streamlit.testing.v1 import AppTest

pytestmark = pytest.mark.slow  # AppTest runs the whole app script

DISPATCH = "void dpsk::ep::internode::dispatch<false, 8, true, 8>(int4*, float*)"


def _x(category, name, start, end, pid, tid, **args) -> dict:
    return {"ph": "X", "cat": category, "name": name, "pid": pid, "tid": tid, "ts": start, "dur": end - start,
            "args": args}  # fmt: skip


def _trace() -> bytes:
    """attn(F) launches a compute kernel [100, 300] µs, dispatch(F) DeepEP's dispatch [200, 400] µs."""
    events = [_x("user_annotation", "attn(F)", 0, 10, 1, 1), _x("user_annotation", "dispatch(F)", 10, 20, 1, 1)]
    for correlation, at, name, stream, start, end in ((1, 5, "attn_fwd", 7, 100, 300), (2, 15, DISPATCH, 27, 200, 400)):
        events.append(_x("cuda_runtime", "cudaLaunchKernel", at, at + 1, 1, 1, correlation=correlation))
        events.append(_x("kernel", name, start, end, 0, stream, correlation=correlation))
    return json.dumps({"distributedInfo": {"rank": 0, "world_size": 64}, "traceEvents": events}).encode()


def test_your_run_shows_one_ranks_overlapped_chunks_as_the_engine_reads_them():
    from app.server.uploads import StoredUpload
    from engine.traces.imported import read_traces

    stored = StoredUpload([("train.json", io.BytesIO(_trace()))])
    chunks = read_traces(stored.paths, names=stored.names)
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.session_state["yr_stored"] = stored
    at.switch_page("views/your_run/page.py")
    at.run()
    assert not at.exception, at.exception
    shown = metrics(at)
    assert shown["Communication"] == f"{chunks.communication_ms:.3g} ms" == "0.2 ms"
    assert shown["Hidden under compute"] == f"{chunks.hidden_ms:.3g} ms" == "0.1 ms"  # [200, 300] of [200, 400]
    assert shown["Hidden fraction"] == "50.0%"
    assert "Bubble fraction" not in shown and not drawn_figures(at)
    assert any(info.value.startswith("No pipeline bubble") for info in at.info)
    table = at.table[0].value
    assert list(table["component"]) == ["attn(F)", "dispatch(F)"]
    assert list(table["hidden (ms)"]) == ["0.000", "0.100"]
    next(t for t in at.toggle if t.label == "Projector mode").set_value(True)  # cards stacked beside the bars
    at.run()
    assert not at.exception, at.exception
    assert metrics(at)["Hidden fraction"] == "50.0%"
    stored.remove()

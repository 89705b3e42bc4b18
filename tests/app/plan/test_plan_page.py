"""The Plan page through AppTest: the command's numbers for the same inputs, published runs, the glossary."""

import json
import re

import pytest
from apptest_support import errors, metrics, open_app

pytestmark = pytest.mark.slow  # AppTest runs the whole app script per test


PLAN_QUERY = {
    "model": "llama3-405b", "gpu": "h100", "tp": "8", "pp": "16", "dp": "64", "seq": "8192", "global_batch": "2048",
    "microbatch_size": "1", "schedule": "interleaved-1f1b", "chunks": "2", "split": "llama3", "recompute": "selective",
}  # fmt: skip


def test_the_plan_page_shows_the_commands_numbers_for_the_same_inputs():
    import subprocess
    import sys

    flags = [f"--{key.replace('_', '-')}={value}" for key, value in PLAN_QUERY.items()]
    done = subprocess.run(
        [sys.executable, "-m", "engine", "plan", *flags, "--json"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    cli = json.loads(done.stdout)
    at = open_app(PLAN_QUERY, "views/plan/page.py")
    shown = metrics(at)
    assert shown["Step time"] == f"{cli['step_seconds']:.3g} s"
    assert shown["Tokens / s"] == f"{cli['tokens_per_second']:,.0f}"
    assert shown["MFU"] == f"{cli['mfu']:.1%}" and shown["Bubble"] == f"{cli['bubble_fraction']:.1%}"
    assert cli["layers_per_stage"] == [3] + [4] * 30 + [3]
    assert any("layers per stage 3, 4 × 30, 3" in m.value for m in at.markdown)
    assert all(at.query_params[key] == value for key, value in PLAN_QUERY.items())


def test_a_plan_that_does_not_multiply_out_says_so_with_the_arithmetic():
    at = open_app({**PLAN_QUERY, "global_batch": "2047"}, "views/plan/page.py")
    assert any("2047" in e or "2,047" in e for e in errors(at)), errors(at)


def test_a_published_run_shows_the_papers_figure_the_planned_one_and_where_each_value_comes_from():
    from engine.scale import LAYOUT_PRESETS, plan_preset
    from engine.scale.calibration import planned_tflops
    from engine.scale.hardware import gpu_named

    preset = LAYOUT_PRESETS["megatron-145b"]
    planned = planned_tflops(plan_preset(preset.name), preset)
    at = open_app({"preset": preset.name}, "views/plan/page.py")
    shown = " ".join(i.value for i in at.info)
    assert f"**{planned:,.1f} TFLOP/s per GPU** against the paper's 148" in shown
    assert f"**{planned / 148 - 1:+.1%}**" in shown
    table = at.table[0].value
    assert "the lab's choice" in table.to_string() and "Table 1" in table.to_string()
    share = f"{gpu_named('a100').gemm_share:.1%} of peak"  # the calibrated share, whatever the model makes it
    assert any(share in m.value and "1T run" in m.value for m in at.markdown)


ABBREVIATION = re.compile(r"\b[A-Z][A-Z0-9]*[A-Z][A-Za-z0-9]*\b")
NOT_TERMS = {"GB": "a unit", "MB": "a unit", "TB": "a unit", "NVIDIA": "a maker's name", "SXM": "part of the name "
             "H100 SXM", "LM": "part of the name Megatron-LM", "ZB": "part of the names ZB-H1, ZB-V"}  # fmt: skip


def test_every_abbreviation_the_plan_page_shows_is_in_the_glossary():
    """An abbreviation such as "GEMM" is defined where the Plan page uses it. Every capitalised abbreviation in
    its text, cards and tables is a glossary term (by name or alias), or a unit or a name (``NOT_TERMS``)."""
    from app.text.glossary import TERMS

    at = open_app({}, page="views/plan/page.py")
    texts = [str(element.value) for kind in ("markdown", "caption", "title", "header", "subheader", "info",
             "warning", "error", "success") for element in getattr(at, kind)]  # fmt: skip
    texts += [f"{m.label} {m.value} {m.help or ''}" for m in at.metric] + [e.label for e in at.expander]
    texts += [str(table.value) for table in at.table]
    defined = {word for term in TERMS for word in (term.name, *term.aliases)}
    found = set(ABBREVIATION.findall("\n".join(texts)))
    assert found, "the page shows abbreviations (the test reads its text)"
    assert found - defined - set(NOT_TERMS) == set()

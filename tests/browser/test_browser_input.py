"""Fast input is never lost: 60 arrow-key presses on a slider, with no pause and with 50 ms pauses,
end with the slider, the numbers drawn for that value and the address bar all at the target — on the
Playground, and on the other pages that keep their state in the address bar."""

import time
from urllib.parse import parse_qs, urlparse

import pytest
from browser_support import IDLE

from engine import Costs, build_schedule, simulate

pytestmark = [pytest.mark.slow, pytest.mark.browser]
PRESSES = 60


def _settle(page) -> None:
    """Wait until the script has finished and stays finished (a burst queues several reruns)."""
    quiet_since = None
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        idle = page.locator(IDLE).count() > 0
        if idle and quiet_since is None:
            quiet_since = time.monotonic()
        elif not idle:
            quiet_since = None
        if quiet_since is not None and time.monotonic() - quiet_since > 2.0:
            return
        page.wait_for_timeout(200)
    raise AssertionError("the page never settled")


def _slider(page, label: str):
    """The slider by its visible name (an index would silently pick another slider when the sidebar changes)."""
    return page.locator(f'[data-testid="stSlider"] input[type="range"][aria-label="{label}"]')


def _press(page, label: str, pause_ms: int) -> None:
    _slider(page, label).focus()
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == label
    for _ in range(PRESSES):
        page.keyboard.press("ArrowRight")
        if pause_ms:
            page.wait_for_timeout(pause_ms)
    _settle(page)


def _slider_value(page, label: str) -> int:
    return int(_slider(page, label).input_value())


def _sliders(page) -> dict[str, str]:
    """Every slider's name and value, for a failure message."""
    return page.evaluate(
        "() => Object.fromEntries([...document.querySelectorAll('[data-testid=stSlider] input[type=range]')]"
        ".map(i => [i.getAttribute('aria-label'), i.value]))"
    )


def _query(page) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlparse(page.url).query).items()}


PLAN_QUERY = {"model": "custom", "layers": "4096", "hidden": "1024", "ffn": "4096", "heads": "16", "kv_heads": "16",
              "vocab": "32000", "tp": "1", "pp": "2", "dp": "1", "global_batch": "4", "chunks": "2"}  # fmt: skip
"""A deep custom model on 2 ranks: every v the chunks slider reaches (2 to 64) plans."""


def _planned_step_seconds(chunks: int) -> float:
    """The Plan page's ``PLAN_QUERY`` layout at ``chunks``, planned by the engine here."""
    from engine.scale import plan
    from engine.scale.request import PlanRequest

    request, problems = PlanRequest.from_query({**PLAN_QUERY, "chunks": str(chunks)})
    assert not problems, problems
    return plan(*request.resolve()).step_seconds


@pytest.mark.parametrize("pause_ms", [0, 50], ids=["no-pause", "50ms-pauses"])
def test_sixty_fast_presses_end_where_they_should_on_the_playground(browser, app_url, pause_ms):
    """Micro-batches 1 → 61: the slider, the makespan card and the link follow."""
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(f"{app_url}/?schedule=1f1b&ranks=4&microbatches=1")
    page.wait_for_selector(IDLE, timeout=90_000)
    _press(page, "Micro-batches, m", pause_ms)
    target = 1 + PRESSES
    expected = simulate(build_schedule("1f1b", 4, target), Costs.of({"F": 1, "B": 2})).makespan
    card = page.locator('[data-testid="stMetric"]', has_text="Makespan").first.inner_text().split()[-1]
    assert (_slider_value(page, "Micro-batches, m"), _query(page)["microbatches"], card) == (
        target,
        str(target),
        f"{expected:.4g}",
    ), f"pause {pause_ms} ms"


@pytest.mark.parametrize(
    ("path", "slider", "key", "target"),
    [
        pytest.param("compare?microbatches=1", "Micro-batches, m", "microbatches", "61", id="compare"),
        pytest.param("search?microbatches=1", "Micro-batches, m", "microbatches", "61", id="search"),
        pytest.param("real-run?layers=1", "Blocks", "layers", "32", id="real-run"),  # the page's most blocks
        pytest.param(
            "plan?" + "&".join(f"{k}={v}" for k, v in PLAN_QUERY.items()),
            "Chunks per rank, v",
            "chunks",
            "62",
            id="plan",
        ),
    ],
)
def test_sixty_fast_presses_end_where_they_should_on_every_page_with_a_link(
    browser, app_url, path, slider, key, target
):
    """Compare and Search (micro-batches), Real run (blocks) and Plan (chunks per rank): slider and link agree;
    on the Plan page the step-time card is the engine's for the final value."""
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(f"{app_url}/{path}")
    page.wait_for_selector(IDLE, timeout=90_000)
    _press(page, slider, 0)
    assert _slider(page, slider).input_value() == target, (path, _sliders(page))
    assert _query(page)[key] == target, path
    if key == "chunks":
        card = page.locator('[data-testid="stMetric"]', has_text="Step time").first.inner_text()
        assert card.split("\n")[-1] == f"{_planned_step_seconds(62):.3g} s", card

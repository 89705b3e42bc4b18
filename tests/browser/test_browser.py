"""Real-browser tests: Streamlit served on localhost, Debian's Chromium driven by Playwright — one server and one
browser per xdist worker (conftest.py), a fresh page (a fresh visitor) per test.

Screenshots of every page are saved under the test's output folder (and ``$SCREENSHOT_DIR`` when set)."""

import os
import time

import pytest
from browser_support import DRAWN_MARKS, IDLE, assert_clean_console, open_page, watched_page
from test_browser_projector import PAGES as PROJECTED_PAGES

from app.views.navigation import PAGES
from engine import FAMILIES, Costs, build_schedule, simulate

pytestmark = [pytest.mark.slow, pytest.mark.browser]

PHONE_PAGES = {path.split("?")[0] for path in PROJECTED_PAGES}
"""The pages the phone test opens and checks for a clean console (``test_browser_projector.py``)."""


def _save(page, name: str, folder) -> None:
    page.screenshot(path=str(folder / f"{name}.png"))
    if os.environ.get("SCREENSHOT_DIR"):
        page.screenshot(path=os.path.join(os.environ["SCREENSHOT_DIR"], f"{name}.png"))


def _metric(page, label: str) -> str:
    return page.locator('[data-testid="stMetric"]', has_text=label).first.inner_text()


# Every page in a real browser, one test each (they were one test of minutes: one item per check lets xdist spread
# them, and each fails on its own): the Playground, Compare, a lesson and the editor.


def test_a_shared_gpipe_link_is_a_third_idle_and_plays_at_once(browser, app_url, tmp_path):
    """A shared link: GPipe, 4 stages, 6 micro-batches — a third of the time idle, every action drawn; within 2 s
    of ▶ Play the cursor and the veil move (shapes only, in the browser)."""
    page, _ = open_page(browser, f"{app_url}/?schedule=gpipe&ranks=4&microbatches=6")
    assert "33.3%" in _metric(page, "Bubble fraction")
    expected = simulate(build_schedule("gpipe", 4, 6), Costs.of({"F": 1, "B": 2}))
    assert page.evaluate(DRAWN_MARKS) >= len(expected.frame)
    _save(page, "playground", tmp_path)

    page.locator(".pplab-player button", has_text="▶ Play").first.click()
    started = time.monotonic()
    page.wait_for_function(
        "() => (document.querySelector('.js-plotly-plot').layout.shapes || [])"
        ".some(s => s.type === 'line' && s.x0 > 0)",
        timeout=2_000,
    )
    assert time.monotonic() - started < 2.0
    page.wait_for_timeout(1500)
    _save(page, "playground-playing", tmp_path)


def test_back_after_the_playground_and_compare_returns_to_the_playgrounds_settings(browser, app_url):
    """Back after Playground (ZB-H1, 6 ranks) → Compare returns to ZB-H1, 6 ranks in one step."""
    page, _ = open_page(browser, f"{app_url}/?schedule=zb-h1&ranks=6")
    page.locator('[data-testid="stSidebar"] a', has_text="Compare").click()
    page.wait_for_function("() => location.pathname.endsWith('/compare')", timeout=30_000)
    page.wait_for_selector(IDLE, timeout=60_000)
    page.go_back()
    page.wait_for_function("() => !location.pathname.endsWith('/compare')", timeout=30_000)
    page.wait_for_function(
        "() => { const p = document.querySelector('.js-plotly-plot');"
        " return p && p.layout.title && p.layout.title.text.replaceAll('<br>', ' ').includes('ZB-H1') "
        "&& p.layout.title.text.replaceAll('<br>', ' ').includes('6 ranks'); }",
        timeout=60_000,
    )
    assert "schedule=zb-h1" in page.url and "ranks=6" in page.url


def test_dualpipev_makespan_is_one_number_on_the_lesson_its_playground_link_and_compare(browser, app_url):
    """One number per quantity: DualPipeV's makespan is the same on the lesson, its Playground link and Compare,
    for the same costs (no F&B given: F + B, and every link writes it out)."""
    expected = simulate(build_schedule("dualpipev", 4, 8), Costs.of({"F": 1, "I": 1, "W": 1})).makespan
    page, _ = open_page(browser, f"{app_url}/lessons?lesson=7&step=2")
    assert _metric(page, "Makespan").endswith(f"{expected:.4g}")
    page.get_by_text("Open this in the Playground").click()
    page.wait_for_function("() => location.pathname === '/' && location.search.includes('dualpipev')")
    page.wait_for_selector(IDLE, timeout=60_000)
    page.wait_for_function(
        "v => [...document.querySelectorAll('[data-testid=stMetric]')]"
        ".some(m => m.innerText.includes('Makespan') && m.innerText.trim().endsWith(v))",
        arg=f"{expected:.4g}",
        timeout=60_000,
    )
    assert "F%26B%3D3" in page.url or "F&B=3" in page.url
    page, _ = open_page(browser, f"{app_url}/compare?schedules=zb-v,dualpipev&ranks=4&microbatches=8&costs=F=1,I=1,W=1")
    table = page.locator('[data-testid="stTable"]').first
    header = table.locator("tr").first.inner_text().split()
    row = table.locator("tr", has_text="makespan").first.inner_text().split()
    assert row[header.index("dualpipev")] == f"{expected:.4g}"  # one column per schedule


def test_with_recomputation_the_peak_card_is_the_memory_charts_highest_point(browser, app_url):
    page, _ = open_page(browser, f"{app_url}/?schedule=1f1b&ranks=4&microbatches=8&recompute=1")
    card = _metric(page, "Peak memory").split()[-1]
    highest = page.evaluate(
        "() => Math.max(...document.querySelector('.js-plotly-plot')._fullData"
        ".filter(t => t.legendgroup === 'memory').flatMap(t => Array.from(t.y)))"
    )
    assert card == f"{highest:.3g}" == "1.3", (card, highest)


def test_the_keyboard_alone_reaches_play_and_plays(browser, app_url):
    """Tab reaches ▶ Play, Enter plays (the cursor moves)."""
    page, _ = open_page(browser, f"{app_url}/?schedule=1f1b&ranks=4&microbatches=8")
    for _ in range(80):
        page.keyboard.press("Tab")
        if page.evaluate("() => (document.activeElement.innerText || '').startsWith('▶ Play')"):
            break
    else:
        raise AssertionError("Tab never reached ▶ Play")
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => (document.querySelector('.js-plotly-plot').layout.shapes || [])"
        ".some(s => s.type === 'line' && s.visible !== false && s.x0 > 0)",
        timeout=5_000,
    )


def test_a_phone_keeps_the_gantt_wide_its_legend_below_and_its_tick_labels_inside(browser, app_url, tmp_path):
    """A phone: the Gantt keeps ≥ 300 px of plot width and the legend sits below it, not over it; every tick label
    is inside the chart; the chart starts on the first screen."""
    page, _ = open_page(browser, f"{app_url}/?schedule=dualpipev&ranks=4&microbatches=8", 390, 844)
    area = page.evaluate(
        "() => { const gd = document.querySelector('.js-plotly-plot');"
        " const plot = gd.querySelector('.nsewdrag').getBoundingClientRect();"
        " const legend = gd.querySelector('.legend').getBoundingClientRect();"
        " return {width: gd._fullLayout._size.w, plotBottom: plot.bottom, legendTop: legend.top,"
        " chartTop: gd.getBoundingClientRect().top}; }"
    )
    assert area["width"] >= 300 and area["legendTop"] >= area["plotBottom"], area
    # every tick label inside the chart (labels may overflow, style.STREAMLIT_LOOK: automargin keeps them in)
    outside = page.evaluate(
        "() => { const gd = document.querySelector('.js-plotly-plot');"
        " const svg = gd.querySelector('.main-svg').getBoundingClientRect();"
        " return [...gd.querySelectorAll('.xtick text, .x2tick text, .ytick text, .y2tick text')]"
        ".map(t => [t.textContent, t.getBoundingClientRect()])"
        ".filter(([, r]) => r.left < svg.left - 0.5 || r.right > svg.right + 0.5).map(([text]) => text); }"
    )
    assert outside == [], outside
    assert area["chartTop"] < 844, area  # the chart starts on the first screen
    _save(page, "playground-phone", tmp_path)


def test_transfer_arrows_are_drawn_only_where_they_can_be_seen(browser, app_url):
    """16 ranks × 32 on a phone hides them, 4 × 8 on a laptop keeps them."""
    arrows = (
        "() => { const gd = document.querySelector('.js-plotly-plot');"
        " return gd.data.filter(t => t.meta === 'pplab-arrows').map(t => t.visible !== false); }"
    )
    page, _ = open_page(browser, f"{app_url}/?schedule=1f1b&ranks=16&microbatches=32&comm=0.5", 390, 844)
    page.wait_for_function(f"() => ({arrows})().length === 1 && ({arrows})()[0] === false", timeout=20_000)
    page, _ = open_page(browser, f"{app_url}/?schedule=1f1b&ranks=4&microbatches=8&comm=0.5", 1440, 900)
    time.sleep(1)
    assert page.evaluate(arrows) == [True]


def test_a_large_schedule_is_drawn_binned_and_one_by_one_once_zoomed_in(browser, app_url):
    """32 × 256 is drawn binned; zoomed in to a few hundred actions, they are drawn one by one; zoomed out to more
    than that, the browser re-bins into the same lanes as the server (F, I, W per rank)."""
    page, _ = open_page(browser, f"{app_url}/?schedule=zb-v&ranks=32&microbatches=256&costs=F=1,I=1,W=1")
    page.evaluate(
        "() => window.Plotly.relayout(document.querySelector('.js-plotly-plot'), {'xaxis.range': [100, 104]})"
    )
    page.wait_for_function(
        "() => document.querySelector('.js-plotly-plot')._fullData"
        ".filter(t => t.meta === 'pplab-zoom-bars').reduce((n, t) => n + t._length, 0) > 0",
        timeout=20_000,
    )
    drawn = page.evaluate(
        "() => document.querySelector('.js-plotly-plot')._fullData"
        ".filter(t => t.meta === 'pplab-zoom-bars').reduce((n, t) => n + t._length, 0)"
    )
    assert 0 < drawn <= 600
    page.evaluate("() => window.Plotly.relayout(document.querySelector('.js-plotly-plot'), {'xaxis.range': [0, 500]})")
    lanes = page.wait_for_function(
        "() => { const h = document.querySelector('.js-plotly-plot').data.find(t => t.type === 'heatmap');"
        " return h.visible !== false && h.x[h.x.length - 1] < 501 ?"
        " [h.z.length, new Set(h.z[1]).size > 1, new Set(h.z[3]).size > 1] : null; }",
        timeout=20_000,
    ).json_value()
    assert lanes == [32 * 4 + 1, True, True], lanes


def test_compare_draws_three_schedules_on_one_time_axis_and_a_real_table(browser, app_url, tmp_path):
    page, _ = open_page(browser, f"{app_url}/compare?schedules=gpipe,1f1b,zb-h1&ranks=4&microbatches=8")
    titles = page.evaluate("() => document.querySelector('.js-plotly-plot').layout.annotations.map(a => a.text)")
    assert titles == [FAMILIES[name].title for name in ("gpipe", "1f1b", "zb-h1")]
    table = page.locator('[data-testid="stTable"]').first
    assert "bubble fraction" in table.inner_text()  # a real HTML table: its text is the page's text
    _save(page, "compare", tmp_path)


def test_a_lessons_deep_link_draws_the_gpipe_staircase_stepped_event_by_event(browser, app_url, tmp_path):
    """Lesson 2: the GPipe staircase, a third idle, stepped event by event."""
    page, _ = open_page(browser, f"{app_url}/lessons?lesson=2")
    assert "33.3%" in _metric(page, "Bubble fraction")
    assert page.evaluate(DRAWN_MARKS) >= 4 * 6  # the 24 forwards of the staircase (and the idle blocks)
    assert "Event 1 of" in page.inner_text("body")
    _save(page, "lesson-2", tmp_path)


def test_the_editor_opens_on_a_valid_schedule(browser, app_url, tmp_path):
    page, _ = open_page(browser, f"{app_url}/editor")
    assert "Valid:" in page.inner_text('[data-testid="stAlert"] >> nth=0')
    _save(page, "editor", tmp_path)


FIRST_SCREEN = (
    "() => { const gd = document.querySelector('.js-plotly-plot'), box = gd.getBoundingClientRect();"
    " const axes = Object.keys(gd._fullLayout).filter(k => /^yaxis\\d*$/.test(k)).map(k => gd._fullLayout[k]);"
    " const ranks = axes.filter(a => (a.ticktext || []).some(t => String(t).startsWith('rank')));"
    " const bottoms = ranks.map(a => box.top + a._offset + a._length);"
    " const ticks = [...gd.querySelectorAll('g[class$=\"tick\"] > text')].filter(t => t.textContent.trim()"
    "   && /^[0-9.]+$/.test(t.textContent.trim())).map(t => t.getBoundingClientRect().bottom);"
    " const words = document.querySelector('[data-testid=stColumn] ul');"
    " return {top: box.top, gantts: ranks.length, ganttBottom: Math.max(...bottoms), axisBottom: Math.max(...ticks),"
    "   narration: words ? words.getBoundingClientRect().bottom : null, height: innerHeight}; }"
)
"""Where the chart, its Gantt rows, its time axis and lecture mode's narration sit in the viewport."""


def test_projector_mode_fits_a_1080p_screen(browser, app_url, tmp_path):
    """At 1920 × 1080 with ``projector=1``, lecture mode's narration sits beside the Gantt and both are
    on the first screen; Compare's three default schedules and their one time axis are too; the sidebar writes
    every chosen schedule's whole name."""
    page, _ = open_page(browser, f"{app_url}/?projector=1", 1920, 1080)
    page.get_by_text("Lecture mode", exact=True).click()  # beside the chart, with its narration
    page.wait_for_selector("text=Event 1 of", timeout=60_000)
    page.wait_for_selector(IDLE, timeout=60_000)
    page.wait_for_function(f"() => ({DRAWN_MARKS})() > 0", timeout=60_000)
    where = page.evaluate(FIRST_SCREEN)
    assert where["gantts"] == 1 and 0 <= where["top"] and where["ganttBottom"] <= 1080, where
    assert where["narration"] is not None and where["narration"] <= 1080, where
    assert "rank 0" in page.locator("[data-testid=stColumn] ul").first.inner_text()
    _save(page, "lecture-projector", tmp_path)

    page, _ = open_page(browser, f"{app_url}/compare?projector=1", 1920, 1080)
    where = page.evaluate(FIRST_SCREEN)
    assert where["gantts"] == 3 and where["ganttBottom"] <= 1080 and where["axisBottom"] <= 1080, where
    cut = page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=stSidebar] [data-tag] > span[title]')]"
        ".filter(s => s.scrollWidth > s.clientWidth + 1).map(s => s.title)"
    )
    names = page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=stSidebar] [data-tag] > span[title]')]"
        ".map(s => s.textContent)"
    )
    assert len(names) == 3 and cut == [], (names, cut)
    ticks = page.evaluate(
        "() => [...document.querySelectorAll('.js-plotly-plot g[class$=\"tick\"] > text')]"
        ".map(t => getComputedStyle(t).fill)"
    )
    assert ticks and set(ticks) == {"rgb(61, 64, 73)"}  # #3d4049: 10:1 on white
    _save(page, "compare-projector", tmp_path)


def _page_name(entry) -> str:
    return entry.url_path or "playground"


@pytest.mark.parametrize("entry", [entry for entry in PAGES if entry.url_path not in PHONE_PAGES], ids=_page_name)
def test_a_deep_link_to_every_page_is_clean_in_the_console(browser, app_url, entry):
    """Opened at its own address (/real-run, /search), no page asks for a file the server lacks or logs an error.
    The pages with a chart are checked the same way where the phone opens them (``test_browser_projector.py``):
    a page load costs seconds of CPU, so each page is opened once for both."""
    page = watched_page(browser)
    page.goto(f"{app_url}/{entry.url_path}")
    page.wait_for_selector(IDLE, timeout=90_000)
    assert_clean_console(page, app_url)


def test_the_phone_opens_navigation_pages_whose_console_it_checks():
    assert set(PHONE_PAGES) <= {entry.url_path for entry in PAGES}, PHONE_PAGES


def test_lecture_mode_steps_in_the_browser_without_a_rerun(browser, app_url):
    """The clicker turns the Playground's lecture mode on (PageDown) and, at its first event, off (PageUp); "Next
    event ▶" moves the cursor, the headline, the story and the player's time slider in the page itself — the
    script never runs — and lands where the engine's narration says."""
    from engine.narrate import Narration

    schedule = build_schedule("1f1b", 4, 8)
    narration = Narration(schedule, simulate(schedule, Costs.of({"F": 1, "B": 2})))
    page, _ = open_page(browser, f"{app_url}/?schedule=1f1b&ranks=4&microbatches=8")
    page.keyboard.press("PageDown")  # the clicker turns lecture mode on, no mouse
    page.get_by_role("button", name="Next event ▶").wait_for()
    page.wait_for_selector(IDLE, timeout=60_000)
    page.evaluate(
        "() => { window.__reruns = 0; new MutationObserver(() => { if (document.querySelector("
        "'[data-testid=stApp]').dataset.testScriptState === 'running') window.__reruns++; })"
        ".observe(document.querySelector('[data-testid=stApp]'), {attributes: true}); }"
    )
    for _ in range(4):
        page.get_by_role("button", name="Next event ▶").click()
    event = narration.event(4)
    page.get_by_text(f"Event 5 of {len(narration.times)}").wait_for(timeout=5_000)
    cursor = page.evaluate(
        "() => document.querySelector('.js-plotly-plot').layout.shapes.find(s => s.type === 'line').x0"
    )
    story = page.locator(".pplab-story").inner_text()
    assert cursor == event.time and event.headline() in page.locator(".pplab-headline").inner_text()
    assert all(f"rank {state.rank} {state.text}" in story for state in event.ranks)
    assert float(page.locator(".pplab-player output").inner_text()) == pytest.approx(event.time, abs=0.5)
    page.keyboard.press("PageUp")  # the clicker steps back in the page too
    page.get_by_text(f"Event 4 of {len(narration.times)}").wait_for(timeout=5_000)
    page.get_by_role("button", name="Start over").click()
    page.get_by_text(f"Event 1 of {len(narration.times)}").wait_for(timeout=5_000)
    assert page.get_by_role("button", name="◀ Previous event").is_disabled()
    assert page.evaluate("() => window.__reruns") == 0
    page.keyboard.press("PageUp")  # at the first event the clicker turns lecture mode off
    page.get_by_role("button", name="Next event ▶").wait_for(state="detached", timeout=30_000)


# Plotly's own drawing of the same figure with its labels, in a twin <div> of the chart's size: the labels it shows
# (trace:point; with inView, those whose bar's middle is in view) against those the lab's chart element drew
# (charts/live_chart.js), and each of ours inside its bar.
LABELS_AGAINST_PLOTLY = """async (inView) => {
  const gd = document.querySelector('.pplab-live-chart'), Plotly = gd.pplabPlotly;
  const twin = document.createElement('div');
  document.body.appendChild(twin);
  const data = gd.data.map((t, i) => gd.pplabLabels.has(i)
    ? {...t, text: gd.pplabLabels.get(i).text, textposition: 'inside'} : t);
  await Plotly.newPlot(twin, data, {...gd.layout, width: gd._fullLayout.width, height: gd._fullLayout.height});
  const barsOf = div => div._fullData.map((t, i) => [t, i]).filter(([t]) => t.type === 'bar' && t.visible === true)
    .map(([, i]) => i);
  const theirs = [], bars = barsOf(twin), area = twin.querySelector('.nsewdrag').getBoundingClientRect();
  const seen = box => !inView || (box.left + box.right) / 2 >= area.left && (box.left + box.right) / 2 <= area.right;
  twin.querySelectorAll('.barlayer .trace.bars').forEach((group, k) => group.querySelectorAll('.point')
    .forEach((point, j) => { const t = point.querySelector('.bartext'), box = t && t.getBoundingClientRect();
      if (t && t.textContent && t.style.display !== 'none' && box.width > 0 && seen(box))
        theirs.push(bars[k] + ':' + twin.calcdata[bars[k]][j].i); }));
  Plotly.purge(twin); twin.remove();
  const groups = [...gd.querySelectorAll('.barlayer .trace.bars')], mine = barsOf(gd);
  const ours = [], letters = [], outside = [];
  for (const text of gd.querySelectorAll('.pplab-labels text')) {
    const trace = +text.dataset.trace, at = gd.calcdata[trace].findIndex(p => p.i === +text.dataset.point);
    const whole = gd.pplabLabels.get(trace).text[+text.dataset.point];
    if (text.textContent === whole) ours.push(trace + ':' + text.dataset.point);
    else letters.push({key: trace + ':' + text.dataset.point, shown: text.textContent, of: whole});
    const bar = groups[mine.indexOf(trace)].querySelectorAll('.point')[at].getBoundingClientRect();
    const box = text.getBoundingClientRect();
    const out = box.left < bar.left - 0.5 || box.right > bar.right + 0.5;
    if (out || box.top < bar.top - 1 || box.bottom > bar.bottom + 1) outside.push(text.textContent);
  }
  return {ours: ours.sort(), theirs: theirs.sort(), letters, outside};
}"""


@pytest.mark.parametrize(
    "link, width, height",
    [
        pytest.param("?schedule=zb-v&ranks=4&microbatches=8&costs=F=1,I=1,W=1", 1440, 900, id="playground-laptop"),
        pytest.param("?schedule=1f1b&ranks=4&microbatches=8", 390, 844, id="playground-phone"),
        pytest.param("?schedule=dualpipev&ranks=4&microbatches=8&projector=1", 1920, 1080, id="playground-projector"),
        pytest.param("?projector=1", 1280, 720, id="playground-small-projector"),
        pytest.param("compare?schedules=gpipe,1f1b,zb-h1&ranks=4&microbatches=8", 1440, 900, id="compare-laptop"),
    ],
)
def test_bar_labels_are_the_ones_plotly_shows_and_follow_a_zoom(browser, app_url, link, width, height):
    """The chart element draws the bars' labels itself (Plotly's took about 30 ms of a 4 × 8 change); it
    shows exactly the whole labels Plotly shows for the same figure — all, some or none, on a laptop, a phone and a
    projector — each inside its bar, and redraws them where the bars go when the chart is zoomed. A bar too short
    for its whole label keeps its kind's letter where the letter fits: on the Playground at 1280 × 720 projected,
    where the bars of 6 × 12 are 15 and 30 px and no whole label fits, every bar keeps its letter."""
    page, _ = open_page(browser, f"{app_url}/{link}", width, height)
    found = page.evaluate(LABELS_AGAINST_PLOTLY, False)
    assert found["ours"] == found["theirs"] and (found["ours"] or width == 1280), (link, found)
    assert found["outside"] == [], (link, found["outside"])
    assert all(f["shown"] == f["of"][0] and f["key"] not in found["theirs"] for f in found["letters"]), found
    if width == 1280:
        bars = page.evaluate(
            "() => { const gd = document.querySelector('.pplab-live-chart');"
            " return [...gd.pplabLabels.keys()].reduce((n, i) => n + gd.calcdata[i].length, 0); }"
        )
        assert len(found["ours"]) + len(found["letters"]) == bars and found["letters"], (bars, found)
    if "zb-v" in link:  # zoomed in: the labels move with their bars, and more of them fit
        page.evaluate(
            "() => { const gd = document.querySelector('.pplab-live-chart');"
            " return gd.pplabPlotly.relayout(gd, {'xaxis.range': [5, 12]}); }"
        )
        page.wait_for_timeout(300)
        zoomed = page.evaluate(LABELS_AGAINST_PLOTLY, True)  # Plotly's, out of view, clipped
        assert zoomed["ours"] == zoomed["theirs"] and zoomed["outside"] == [], zoomed
        assert len(zoomed["ours"]) < len(found["ours"])  # those out of view are not drawn

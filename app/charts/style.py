"""Colours, shades and sizes the charts share: one colour per kind, a shade per chunk, text that stays
readable on every fill, and the larger fonts and rows of projector mode."""

from __future__ import annotations

from dataclasses import dataclass

KIND_COLOURS = {"F": "#8067BC", "B": "#F5840A", "I": "#1AB998", "W": "#40725E"}
"""F indigo, B orange, I teal, W dark green. Chosen (by a search over sRGB, staying close to the lab's
earlier blue, orange, green and purple) so that every pair of kinds is at least 20 CIEDE2000 apart for normal
vision and under simulated protanopia, deuteranopia and tritanopia, at every chunk shade, and each kind's chunk
shades at least 12 apart; ``tests/app/charts/test_palette.py`` checks it (``app/charts/colour.py`` has the science)."""
CHUNK_LIGHTEN = {"F": 0.34, "B": 0.48, "I": 0.74, "W": 0.25}
"""How far the last chunk's shade of each kind goes towards white (chunks in between evenly)."""
IDLE_FILL = "rgba(150,150,150,0.30)"
IDLE_HATCH = "rgba(105,105,105,0.85)"
RECOMPUTE_HATCH = "rgba(20,20,20,0.55)"
TRANSFER_COLOUR = "#6F6F6F"
SEND_COLOUR = "#4A4A4A"
RECEIVE_COLOUR = "#A8A8A8"
"""A transfer on the communication lanes: dark where it leaves, light where it arrives (and its arrow)."""
WAIT_HATCH = "rgba(60,60,60,0.9)"
EXPERT_WAITED = "#7B3294"
EXPERT_HIDDEN = "rgba(123,50,148,0.28)"
"""The all-to-all inside an action on the communication lane: solid purple where the rank waited for it, faint
(with dots) where it ran under another micro-batch's compute — told apart by pattern too, not by shade alone."""
VEIL = "rgba(127,127,127,0.55)"
"""Laid over the part of the timeline that has not happened yet while the animation plays."""
CURSOR = "#D62728"
POINT_COLOUR = "#0068C9"
"""A chart's single series of points (Compare's time against memory): Streamlit's first chart colour, as its theme
drew them before the figure carried its own look."""
RANK_COLOURS = ("#222222", "#E45756", "#17BECF", "#9D755D", "#BCBD22", "#FF7F0E", "#7F7F7F", "#8C564B")
"""Memory lines, one per rank (each line is also named in its hover and legend): readable on light and dark
backgrounds."""
RANK_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
"""And a dash pattern per rank, with the rank's name at its peak, so the lines part in greyscale too."""


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    value = hex_colour.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


def chunk_shade(kind: str, chunk: int, num_chunks: int) -> str:
    """The kind's colour for chunk ``chunk`` of ``num_chunks``: chunk 0 full, later chunks evenly lighter, so
    every chunk has its own shade. A shade whose luminance leaves neither black nor white text at 4.5:1 (the
    band around 18 % luminance) is taken a little lighter, until black text reaches it."""
    mix = 0.0 if num_chunks <= 1 else CHUNK_LIGHTEN[kind] * chunk / (num_chunks - 1)
    while True:
        red, green, blue = (round(c + (255 - c) * mix) for c in _rgb(KIND_COLOURS[kind]))
        shade = f"#{red:02X}{green:02X}{blue:02X}"
        if contrast(shade, text_colour(shade)) >= 4.5 or mix >= 1:
            return shade
        mix += 0.01


KIND_PATTERNS = {"F": "", "B": ".", "I": "-", "W": "|"}
"""A fill pattern per kind, so the kinds stay apart in greyscale and for every colour vision (F solid, B
dotted, I with horizontal lines, W with vertical ones); idle is hatched "/", a re-run forward "x"."""


def kind_pattern(kind: str, fill: str, ink: str) -> dict:
    """The kind's pattern drawn faintly in the label's colour (black or white, whichever suits the fill)."""
    shape = KIND_PATTERNS[kind]
    if not shape:
        return dict(shape="")
    return dict(shape=shape, fgcolor=ink, bgcolor=fill, size=6, solidity=0.18, fgopacity=0.45)


def _luminance(hex_colour: str) -> float:
    """WCAG relative luminance."""

    def channel(byte: int) -> float:
        c = byte / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    red, green, blue = (channel(c) for c in _rgb(hex_colour))
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


DARK_INK, LIGHT_INK = "#111111", "#FFFFFF"


def text_colour(fill: str) -> str:
    """The label ink, near-black or white, whichever contrasts more with ``fill`` (WCAG contrast ratio)."""
    return DARK_INK if contrast(fill, DARK_INK) >= contrast(fill, LIGHT_INK) else LIGHT_INK


def contrast(fill: str, text: str) -> float:
    high, low = sorted((_luminance(fill), _luminance(text)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@dataclass(frozen=True)
class Sizes:
    """Fonts and rows, normal or for a projector."""

    font: int
    title: int
    row: int
    """Pixels per rank row when they fit."""
    max_gantt: int
    """The tallest the Gantt gets (so 32 ranks fit the screen)."""
    memory: int
    label: int
    """A memory line's name at its peak."""
    title_characters: int
    """A chart title longer than this wraps (a phone's chart is about 46 characters wide)."""
    smallest_text: int
    """Letters on bars shrink to fit down to this size, and are hidden below it."""
    legend_above: bool
    """The legend in one row between the title and the plots, without the memory lines (named at their peaks):
    a projector's chart keeps its width; otherwise under the plots, in rows (a phone's chart is narrow)."""

    gantt_padding: int = 70
    """Added to the rank rows (the bars' gaps at the top and bottom of the Gantt)."""

    def gantt_height(self, num_rows: int) -> int:
        return max(200, min(self.max_gantt, self.gantt_padding + self.row * num_rows))


NORMAL = Sizes(
    font=13,
    title=16,
    row=42,
    max_gantt=560,
    memory=200,
    label=12,
    title_characters=46,
    smallest_text=9,
    legend_above=False,
)
PROJECTOR = Sizes(
    font=20,
    title=22,
    row=44,
    max_gantt=24 + 44 * 5,
    memory=120,
    label=20,
    title_characters=120,
    smallest_text=18,
    legend_above=True,
    gantt_padding=24,
)
"""Projector mode fits the Playground's default chart, all six ranks (at five rows' height) and the memory, on the
first screen of a 1280 × 720 projector (``tests/browser/test_browser_projector.py``); bars' letters are 18 px or
more, every other text 20 px."""


def sizes(projector: bool) -> Sizes:
    return PROJECTOR if projector else NORMAL


def projected(figure, projector: bool):
    """In projector mode, every text of a secondary chart (memory, time, idle by cause, trade-off, frontier) at
    the projector's size: the look's template names its legend (12 px), axis titles (14 px), ticks and
    annotations (12 px) itself, and a template's own sizes win over the layout's font."""
    if projector:
        size = PROJECTOR.font
        figure.update_layout(legend_font_size=size, legend_title_font_size=size)
        figure.update_xaxes(title_font_size=size, tickfont_size=size)
        figure.update_yaxes(title_font_size=size, tickfont_size=size)
        figure.update_annotations(font_size=size)
    return figure


PAGE_CSS_ID = "pplab-page-css"
"""The id of the ``<style>`` element that carries ``PAGE_CSS`` (``app/streamlit_app.py``). Streamlit draws an
``st.html`` block after the elements around it at times (measured on a busy host: in 13 of 20 phone loads it came
after the script had finished, by up to 567 ms), so a browser test waits for this element before judging what the
style sheet hides or places."""

PAGE_CSS = """
/* captions carry explanations: 4.5:1 against the page at least (Streamlit's default grey is about 3.8:1) */
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p { color: #4f535e; }
[data-testid="stMetricLabel"] p { color: #3d4049; }
/* chart text and grid at 4.5:1 or more in every mode (Streamlit's Plotly theme draws ticks at about 3.7:1) */
.js-plotly-plot g[class$="tick"] > text, .js-plotly-plot g[class^="g-x"][class$="title"] text,
.js-plotly-plot g[class^="g-y"][class$="title"] text, .js-plotly-plot .legendtext, .js-plotly-plot .legendtitletext,
.js-plotly-plot .gtitle { fill: #3d4049 !important; }
.js-plotly-plot .gridlayer path { stroke: #767676 !important; stroke-width: 1px !important; }
/* a block that only carries a style sheet takes no room (it would add a row's gap above the content) */
[data-testid="stElementContainer"]:has(> [data-testid="stHtml"]):not(
  :has(> [data-testid="stHtml"] > :not(style, script))) { display: none; }
/* a touch screen has neither Tab nor arrow keys: the chart's keyboard help is for keyboards
   (app.frame.timeline_panels.KEYBOARD_HINT) */
@media (pointer: coarse) { [class*="st-key-keyboard_hint_"] { display: none; }
  /* a help icon is 16 px: a finger gets 24 x 24 (WCAG 2.2, 2.5.8 Target Size) */
  [data-testid="stTooltipHoverTarget"] { min-width: 24px; min-height: 24px; display: inline-flex;
    align-items: center; justify-content: center; }
  /* a switch is drawn 32 x 16 over a 13 px box: its whole row, words and all, is the target, 44 px tall (WCAG 2.2,
     2.5.5 Target Size, enhanced: a finger's 44 x 44) */
  [data-testid="stCheckbox"] label { min-height: 44px; align-items: center; } }
/* a phone (below ~700 px): metric cards as a compact two-column block, so the chart starts on the first screen */
@media (max-width: 700px) {
  [data-testid="stMainBlockContainer"] { padding-left: 0.75rem; padding-right: 0.75rem; padding-top: 2.5rem; }
  [data-testid="stHorizontalBlock"]:has([data-testid="stMetric"]) { flex-wrap: wrap; row-gap: 0.2rem; }
  [data-testid="stHorizontalBlock"]:has([data-testid="stMetric"]) > [data-testid="stColumn"] {
    flex: 1 1 40%; min-width: 40%; width: auto; }
  [data-testid="stMetricValue"] { font-size: 1.45rem; }
  h1 { font-size: 1.8rem; }
  /* the chart on the first screen: the cards under it */
  [class*="st-key-stage_"] > [data-testid="stLayoutWrapper"]:has([data-testid="stMetric"]) { order: 1; }
  [class*="st-key-stage_"] > [data-testid="stLayoutWrapper"]:has(> [class*="st-key-phone_first"]) { order: -1; }
  [class*="st-key-stage_"] > [data-testid="stLayoutWrapper"]:has(> [class*="st-key-phone_last"]) { order: 2; }
  /* Plotly's toolbar, shown on a tap, covered the charts' titles: a phone zooms with its fingers instead */
  .js-plotly-plot .modebar-container { display: none; }
}
"""
"""Page-wide styles the router adds once per run: readable captions and the phone layout."""


PROJECTOR_CSS = """
/* a lecture hall: the sidebar (when shown) wide enough for every choice's whole name */
section[data-testid="stSidebar"] { width: 25rem !important; min-width: 25rem !important; }
[data-testid="stSidebar"] [data-tag], [data-testid="stSidebar"] [data-tag] > span[title] {
  max-width: none !important; white-space: normal !important; overflow: visible !important;
  text-overflow: clip !important; }
[data-testid="stSidebar"] [data-baseweb="select"] [value], [data-testid="stSidebar"] [data-baseweb="select"] div {
  white-space: normal !important; text-overflow: clip !important; }
/* the chart comes up on the first screen of a 1280 x 720 projector: less space above and around the title,
   the page's full width, compact cards */
[data-testid="stMainBlockContainer"] { padding-top: 1.2rem; padding-left: 1.5rem; padding-right: 1.5rem;
  max-width: none; }
[data-testid="stMainBlockContainer"] h1 { font-size: 1.6rem; padding: 0 0 0.2rem 0; }
[data-testid="stMainBlockContainer"] h2, [data-testid="stMainBlockContainer"] h3 { font-size: 1.25rem;
  padding: 0.2rem 0 0.1rem 0; }
[data-testid="stMetricValue"] { font-size: 1.6rem; }
/* cards two to a line beside the chart (app.frame.cards): a label longer than its card wraps, never "Bubble, repe…" */
[data-testid="stMetricLabel"] [data-testid="stMarkdownContainer"],
[data-testid="stMetricLabel"] [data-testid="stMarkdownContainer"] p { white-space: normal !important;
  overflow: visible !important; }
/* Streamlit's header (its menu and the sidebar's arrows) is replaced by the presenter's bar; the intro is said */
[data-testid="stHeader"], [data-testid="stSidebarCollapseButton"], .st-key-page_intro { display: none !important; }
/* the presenter's bar: at the top right of every page, beside its title; it scrolls away with the page (fixed to
   the screen it covered the words beside the chart once a build had scrolled) */
[data-testid="stMainBlockContainer"] { position: relative; }
[data-testid="stLayoutWrapper"]:has(> .st-key-presenter_bar) { position: absolute; top: 0.4rem; right: 0.6rem;
  z-index: 1000001; width: auto !important; }
.st-key-presenter_bar { width: auto !important; gap: 0.4rem; }
.st-key-presenter_bar button { min-height: 2rem; padding: 0.1rem 0.6rem; }
/* a lesson's "Run it for real", beside the step's title: no taller than the title, so the chart keeps its place */
.st-key-ls_run button { min-height: 2rem; padding: 0.1rem 0.6rem; }
[data-testid="stHorizontalBlock"]:has(.st-key-ls_run) h3 { padding-top: 0; padding-bottom: 0; }
[data-testid="stLayoutWrapper"]:has(> [data-testid="stHorizontalBlock"] .st-key-ls_run) { margin-bottom: -0.5rem; }
/* the measured run's slide starts right under that title: the chart's white paper would cover its last pixels */
.st-key-ls_measured { margin-top: 0.5rem; }
"""
"""Added in projector mode only (with the larger root font: ``app.frame.projector.projector_toggle``)."""

PROJECTOR_HIDES_SIDEBAR = """
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"]
{ display: none !important; }
"""
"""Projector mode with the settings put away: the sidebar gone, not a strip, and so out of the Tab order."""


_GRID, _MUTED = "#e6eaf1", "#808495"
STREAMLIT_LOOK = {
    "layout": {
        "font": {"color": _MUTED, "family": '"Source Sans", sans-serif', "size": 12, "weight": 400},
        "title": {"font": {"family": '"Source Sans", sans-serif', "size": 16, "color": "#2F2D2B", "weight": 700},
                  "pad": {"l": 4},
                  "xanchor": "left", "x": 0},
        "legend": {"title": {"font": {"size": 12, "color": _MUTED}, "side": "top"}, "valign": "top",
                   "bordercolor": "rgba(0, 0, 0, 0)", "borderwidth": 0, "font": {"size": 12, "color": "#262730"}},
        "paper_bgcolor": "#FFFFFF",
        "plot_bgcolor": "#FFFFFF",
        "xaxis": {"zerolinecolor": _GRID, "gridcolor": _GRID, "showgrid": False, "tickcolor": _GRID,
                  "tickfont": {"color": _MUTED, "size": 12}, "title": {"font": {"color": _MUTED, "size": 14},
                  "standoff": 20}, "zeroline": False, "automargin": True, "ticklabeloverflow": "allow"},
        "yaxis": {"ticklabelposition": "outside", "zerolinecolor": _GRID, "gridcolor": _GRID, "tickcolor": _GRID,
                  "tickfont": {"color": _MUTED, "size": 12}, "title": {"font": {"color": _MUTED, "size": 14},
                  "standoff": 24}, "automargin": True, "ticklabeloverflow": "allow"},
        "margin": {"pad": 8, "r": 0, "l": 0},
        "hoverlabel": {"bgcolor": "#FFFFFF", "bordercolor": "#DCD8D4",
                       "font": {"color": _MUTED, "family": '"Source Sans", sans-serif', "size": 12}},
    }
}  # fmt: skip
"""The look Streamlit's chart theme gives a Plotly figure (its template, read from the page), carried by the
figure itself so the chart can be drawn with ``theme=None``: Streamlit then skips re-theming a large figure on
every change (about 100 ms of the browser's time at 4 × 8).

``ticklabeloverflow="allow"`` is not Streamlit's: Plotly's default for a linear axis ("hide past div") measures
every tick label once per label drawn (``_adjustTickLabelsOverflow`` runs inside the loop that places them), about
8 ms of each 4 × 8 redraw; automargin already keeps the labels inside the chart (a browser test checks it on a
phone)."""

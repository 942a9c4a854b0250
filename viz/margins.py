"""Margins worked out here, so that the browser draws a heatmap once (click → overview drawn).

Plotly sizes a figure's margins itself (``automargin`` axes, and every colour bar or legend "pushes" the
margins while Gradio's Plot turns ``margin.autoexpand`` on): it draws the figure, measures its tick labels,
colour bar and legend, grows the margins and draws it again (bench/RESULTS.md: what this saved a click).
``fit(spec)`` works the margins out from the figure's own labels and fonts instead and writes them into
``layout.meta.margins``; the page script (assets/web/draw.js) picks the column labels' angle for the plot's
width at draw time, sets those margins and turns ``autoexpand`` off. Elsewhere (a plotly figure built from the
API's JSON) plotly sizes the margins as ever: ``layout.margin`` keeps the smallest of them.

``layout.meta.margins``: ``r`` (px), ``n`` (how many column labels), ``cells`` (for square cells: the x and y
axes' spans, so that the page knows how wide the plot area really is) and ``angles``: for each angle the
column labels may take (0, -30 or -90 degrees: flat, slanted down to the left ending at their tick, upright;
only the figure's own when it sets ``tickangle``), ``[angle, column_px, l, b]``: the least width a column needs
at that angle (flat: its widest label; slanted or upright: a label's height across the slant), the left margin
(a slanted first label reaches left of the plot) and the bottom margin. The page takes the first angle whose
columns fit, flat before slanted before upright.

Text widths are estimates: the viewer's font is unknown (plotly asks for "Open Sans", Verdana, Arial), so every
ASCII character counts as wide as the wider of DejaVu Sans (Verdana's proportions) and Liberation Sans (Arial's)
draw it, and any other as wide as an em or more (``char_em``): on the generous side. A label the estimate makes
too wide only adds a little space; ``tests/test_browser_margins.py`` draws the figures in Chromium and checks
that no label, title, colour bar or legend is cut, and measures this machine's fonts against ``char_em``.
"""

from __future__ import annotations

import html
import math
import re
import unicodedata
from collections.abc import Iterable

# Character widths in font sizes (em): the wider of DejaVu Sans (Verdana's proportions; Verdana is the widest of
# plotly's fonts "Open Sans", Verdana, Arial) and Liberation Sans (Arial's) as Chromium measures them, plus 3 %,
# rounded up to 0.05 em. tests/test_browser_margins.py measures the fonts of the machine it runs on against it.
_WIDTHS = {ch: em for em, chars in (
    (0.3, "'ijl"), (0.35, " ,./:;I\\|"), (0.4, "-f"), (0.45, "!()[]rt"), (0.5, '"'), (0.55, "*J`sz"),
    (0.6, "?L_ck"), (0.65, "FTaeovxy"), (0.7, "$0123456789EKPSYbdghnpqu{}"), (0.75, "ABCRVXZ"), (0.8, "DHNU"),
    (0.85, "&GOQw"), (0.9, "#+<=>M^~"), (1.0, "%"), (1.05, "@Wm")) for ch in chars}
_TAGS = re.compile(r"<[^>]*>")  # plotly's own text tags (<br>, <b>, …): not shown as characters

COLORBAR_XPAD = 12  # px each side of the colour bar (its x = 1: the plot area's right edge; viz.heatmaps)
TICK_PAD = 3  # px between a tick label and the plot area (plotly: 2-3 px)
TITLE_PAD = 2  # px beside an axis title's line
EDGE_PAD = 2  # px kept clear at the figure's edge
SLANT = -30  # slanted column labels end at their tick and hang down to the left; upright (-90°) ones read upwards
LINE = 1.2  # a line of text, in font sizes
TITLE_SCALE = 1.2  # an axis or colour bar title's default font size, in the figure's font sizes (plotly's)


def char_em(ch: str) -> float:
    """One character's width in font sizes (generous: see the module docstring)."""
    if ch in _WIDTHS:
        return _WIDTHS[ch]
    if unicodedata.combining(ch):
        return 0.0
    if unicodedata.east_asian_width(ch) in "WF" or ord(ch) > 0xFFFF:  # CJK, emoji (colour emoji are ~1.2 em)
        return 1.3
    return 1.1  # accented letters, Greek, Cyrillic, and symbols such as …, �, ␣, · (escape_token's), →, —


def text_px(text: str, font_px: float) -> float:
    """The width of one line of plotly label text (entities such as &lt; count as one character, tags as none)."""
    shown = html.unescape(_TAGS.sub("", str(text)))
    return sum(map(char_em, shown)) * font_px


def widest_px(labels: Iterable[str], font_px: float) -> float:
    return max((text_px(t, font_px) for t in labels), default=0.0)


def _font_px(*sources: dict | None, default: float = 12) -> float:
    """The first font size among ``sources`` (font dicts, or None), else ``default``."""
    for source in sources:
        size = (source or {}).get("size")
        if size:
            return float(size)
    return float(default)


def _title(axis_or_bar: dict) -> tuple[str, dict]:
    title = axis_or_bar.get("title")
    if isinstance(title, dict):
        return str(title.get("text") or ""), title.get("font") or {}
    return str(title or ""), {}


def _tick_labels(axis: dict, trace: dict, letter: str) -> list[str]:
    """The labels an axis shows: its ticktext, else its category labels (the trace's x or y), else none."""
    if axis.get("showticklabels") is False:
        return []
    if axis.get("ticktext") is not None:
        return [str(t) for t in axis["ticktext"]]
    if axis.get("type") == "category":
        labels = trace.get(letter)
        return [] if labels is None else [str(t) for t in labels]
    return []


def _colorbar_px(trace: dict, layout_font: float) -> float:
    """Right of the plot area: the colour bar (pad, bar, tick labels, its title turned upright)."""
    if trace.get("showscale") is False:
        return 0.0
    bar = trace.get("colorbar") or {}
    tick_font = _font_px(bar.get("tickfont"), default=layout_font)
    ticks = widest_px(bar.get("ticktext") or ["0.75"], tick_font)
    text, font = _title(bar)
    title = _font_px(font, default=round(TITLE_SCALE * layout_font)) * LINE if text else 0.0
    return 2 * COLORBAR_XPAD + float(bar.get("thickness", 30)) + TICK_PAD + ticks + title


def _legend_px(layout: dict, shapes_named: list[str], layout_font: float) -> float:
    """Right of the plot area: the legend (the masked cells' grey swatch and its name's lines)."""
    if not layout.get("showlegend"):
        return 0.0
    legend = layout.get("legend") or {}
    font = _font_px(legend.get("font"), default=layout_font)
    lines = [line for name in shapes_named for line in str(name).split("<br>")]
    return 48 + widest_px(lines, font)  # its swatch and gaps (~40 px in plotly), then the text


def fit(spec: dict) -> dict:
    """``spec`` (a heatmap figure: ``viz.heatmaps.overview_spec`` / ``detail_spec``, after every change to its
    labels and fonts) with ``layout.meta.margins`` and its margins set (see the module docstring); in place."""
    layout = spec["layout"]
    trace = next(t for t in spec["data"] if t.get("type") == "heatmap")
    font = _font_px(layout.get("font"))
    xaxis, yaxis = layout.setdefault("xaxis", {}), layout.setdefault("yaxis", {})
    margin = layout.setdefault("margin", {})

    row_font = _font_px(yaxis.get("tickfont"), default=font)
    rows = widest_px(_tick_labels(yaxis, trace, "y"), row_font)
    y_text, y_title_font = _title(yaxis)
    y_title = _font_px(y_title_font, default=round(TITLE_SCALE * font)) * LINE + TITLE_PAD if y_text else 0.0
    left = max(float(margin.get("l", 0)), EDGE_PAD + y_title + rows + (TICK_PAD if rows else 0.0))

    named = [s.get("name", "") for s in layout.get("shapes", []) if s.get("showlegend")]
    right = max(float(margin.get("r", 0)), EDGE_PAD + max(_colorbar_px(trace, font), _legend_px(layout, named, font)))

    col_font = _font_px(xaxis.get("tickfont"), default=font)
    columns = _tick_labels(xaxis, trace, "x")
    widths = [text_px(t, col_font) for t in columns]
    widest = max(widths, default=0.0)
    x_text, x_title_font = _title(xaxis)
    x_title = _font_px(x_title_font, default=round(TITLE_SCALE * font)) * LINE + TITLE_PAD if x_text else 0.0
    line = col_font * LINE
    below = 2 * EDGE_PAD + x_title + (TICK_PAD if columns else 0.0)
    base_b = float(margin.get("b", 0))
    slant = math.radians(SLANT)
    options = [  # (angle, least column width, left margin, bottom margin)
        (0, widest + 4, left, below + line),
        (SLANT, line / abs(math.sin(slant)), max(left, EDGE_PAD + (widths[0] if widths else 0) * math.cos(slant)),
         below + widest * abs(math.sin(slant)) + line * math.cos(slant)),
        (-90, line, left, below + widest),
    ]
    if not columns:
        options = [(0, 0.0, left, below)]
    elif "tickangle" in xaxis:  # the figure's own angle (long sentences: upright, thinned; viz.views.attention.focus)
        angle = xaxis["tickangle"]
        own = [o for o in options if o[0] == angle] or [(angle, 0.0, left, below + widest)]
        options = [(angle, 0.0, *own[0][2:])]
    angles = [[a, math.ceil(c), math.ceil(lm), math.ceil(max(base_b, b))] for a, c, lm, b in options]

    margin.update(l=angles[0][2], r=math.ceil(right), b=angles[0][3])  # plotly elsewhere grows them as needed
    meta = {"r": margin["r"], "n": len(columns), "angles": angles}
    if yaxis.get("scaleanchor") == "x" and xaxis.get("constrain") == "domain":  # square cells: a part of the width
        (x0, x1), (y0, y1) = xaxis["range"], yaxis["range"]
        meta["cells"] = [abs(x1 - x0), abs(y1 - y0) * float(yaxis.get("scaleratio", 1))]
    layout.setdefault("meta", {})["margins"] = meta
    return spec

"""Every colour the figures draw a line, a bar's edge, a marker, an outline or a frame in, the slider's track and the
focus ring: at least 3:1 against the page behind the figures, light and dark (WCAG 2.1 1.4.11, non-text contrast),
computed from the palettes in the code and the page's style (assets/web/app.css) with WCAG's relative luminance.

The figures' backgrounds are transparent: what is behind them is the block's background, white in the light theme and
zinc-800 #27272a in the dark one (``BACKGROUNDS``; tests/test_browser_a11y.py checks them in the page). A weaker
attention weight drawn fainter (a line's opacity) is the figure's message and not measured here; a light bar's fill
counts through its edge (``MARK_EDGE``), which is measured.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.a11y import BACKGROUNDS

from viz import architecture, heatmaps, inside, lab, lines, probs, scaling, stats_grid, step_bars
from viz.vocab import MARK_EDGE, TEXT_COLOR

LEAST = 3.0
WEB = Path(__file__).resolve().parent.parent / "assets" / "web"


def luminance(colour: str) -> float:
    """WCAG 2.1's relative luminance of "#rrggbb"."""
    channels = [int(colour.lstrip("#")[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_the_contrast_is_wcag_s():
    assert contrast("#ffffff", "#000000") == pytest.approx(21.0)
    assert contrast("#888888", "#ffffff") == pytest.approx(3.54, abs=0.01)  # the figures' former text grey
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)


def figure_marks() -> dict[str, str]:
    """Every colour the figures draw a mark in, by where it is used (the palettes as the code has them)."""
    marks = {f"alignment head {h}": c for h, c in enumerate(lines.HEAD_COLORS, 1)}
    marks |= {f"Lab run {run}": c for run, c in lab.RUN_COLORS.items()}
    marks |= {f"Figure 1/2 outline {kind}": c for kind, c in architecture.COLORS.items()}
    marks |= {"Why: × 1/√d_k line": scaling.SCALED_COLOR, "Why: other factor line": scaling.UNSCALED_COLOR,
              "Inside: third factor": inside.FACTOR_COLOR, "Inside: highlight": inside.HIGHLIGHT,
              "switched-off head frame": heatmaps.OFF_COLOUR, "masked cell": heatmaps.MASKED_COLOR,
              "marks in the text grey": TEXT_COLOR, "edge of a light bar": MARK_EDGE["color"]}
    for script in ("classroom.js", "lecture.js"):  # the frames the page draws on a figure (a tile, a lecture's mark)
        for i, colour in enumerate(re.findall(r"line: \{color: '(#[0-9a-fA-F]{6})'", (WEB / script).read_text())):
            marks[f"{script} frame {i + 1}"] = colour
    return marks


def page_marks() -> dict[str, dict[str, str]]:
    """The focus ring's and the slider's colours per theme, as app.css sets them (its ``:root body`` rules)."""
    css = (WEB / "app.css").read_text()
    out = {}
    for theme, selector in (("light", r":root body \{"), ("dark", r":root body\.dark \{")):
        rule = re.search(selector + r"([^}]*)\}", css).group(1)
        found = dict(re.findall(r"(--[\w-]+):\s*(#[0-9a-fA-F]{6})", rule))
        out[theme] = {"focus ring": found["--attn-accent-text"], "slider, filled": found["--slider-color"],
                      "slider, the rest": found["--attn-track"]}
    return out


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_mark_a_figure_draws_is_3_to_1_against_the_page(theme):
    marks = figure_marks()
    ratios = {where: round(contrast(c, BACKGROUNDS[theme]), 2) for where, c in marks.items()}
    assert len(marks) > 30
    assert {where: r for where, r in ratios.items() if r < LEAST} == {}, ratios


def test_light_bars_are_outlined_in_a_colour_that_is():
    """A bar filled in a light colour (under 3:1 on white) has the edge ``MARK_EDGE``: its outline is the mark."""
    for fill in (step_bars.BAR_COLOR, step_bars.CHOSEN_COLOR, probs.AGREE_COLOR, probs.DISAGREE_COLOR):
        for theme, background in BACKGROUNDS.items():
            assert max(contrast(fill, background), contrast(MARK_EDGE["color"], background)) >= LEAST, (fill, theme)
    assert MARK_EDGE["width"] >= 1
    for module in (step_bars, probs):
        assert "line=MARK_EDGE" in Path(module.__file__).read_text()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_focus_ring_and_the_slider_are_3_to_1_against_the_page(theme):
    ratios = {what: round(contrast(c, BACKGROUNDS[theme]), 2) for what, c in page_marks()[theme].items()}
    assert min(ratios.values()) >= LEAST, ratios



# The heatmaps' colour scales: the attention weights' (every map, the overview, Head analysis, the Lab's, Why's entropy
# per head) and the signed values' (Inside a head's whole matrices, Head analysis's offset), by where they are used
SCALES = {"weights (viz.heatmaps.COLORSCALE)": [c for _, c in heatmaps.COLORSCALE],
          "Inside a head: signed values": [c for _, c in inside.DIVERGING],
          "Head analysis: offset": [c for _, c in stats_grid.DIVERGING]}


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_a_heatmap_s_strongest_cells_are_3_to_1_against_the_page(theme):
    """The colour of a heatmap's strongest value (its scale's top; both ends of a diverging scale, whose middle is 0) is
    at least 3:1 against the page, light and dark: the cells that carry the message stand out of the page, not only of
    the weaker cells beside them. A weak value drawn near the page's colour is the figure's message (nothing there)."""
    ends = {f"{where}, {end}": scale[i] for where, scale in SCALES.items()
            for end, i in (("top", -1), ("bottom", 0)) if end == "top" or "signed" in where or "offset" in where}
    ratios = {where: round(contrast(c, BACKGROUNDS[theme]), 2) for where, c in ends.items()}
    print(theme, ratios)
    assert len(ratios) == 5 and min(ratios.values()) >= LEAST, ratios


def test_every_heatmap_takes_one_of_those_scales():
    """No figure module names a colour scale of plotly's own (Viridis's top: 1.26:1 on white); each uses ``SCALES``."""
    named = {path.name: re.findall(r"colorscale=[\"']\w+", path.read_text())
             for path in (Path(heatmaps.__file__).parent).glob("*.py")}
    assert {name: found for name, found in named.items() if found} == {}

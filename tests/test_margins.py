"""viz.margins: the margins the server works out for the overview and the close-up (so that each is drawn once).

The page script's use of them (angle for the plot's width, autoexpand off) and that nothing is cut in Chromium:
tests/test_browser_margins.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from viz import margins
from viz.heatmaps import detail_spec, overview_spec
from viz.views.attention import focus
from viz.views.attention import maps as attention
from viz.views.attention.focus import thin_ticks


def spec_for(tokens: list[str], **options) -> dict:
    n = len(tokens)
    return detail_spec(np.full((n, n), 1.0 / n, dtype=np.float32), tokens, tokens, "title", **options)


def columns_spec(columns: list[str]) -> dict:
    """Three short rows, the given column labels."""
    weights = np.full((3, len(columns)), 1.0 / len(columns), dtype=np.float32)
    return detail_spec(weights, ["a", "b", "c"], columns, "title")


def fitted(spec: dict) -> dict:
    margins.fit(spec)
    return spec["layout"]["meta"]["margins"]


def test_text_widths_count_what_is_shown():
    shown = sum(map(margins.char_em, "<s>")) * 10
    assert margins.text_px("&lt;s&gt;", 10) == pytest.approx(shown)  # an entity is one character
    assert margins.text_px("a<br>b", 10) == pytest.approx(margins.text_px("ab", 10))  # plotly's tags are not shown
    assert margins.text_px("WWW", 12) > margins.text_px("iii", 12) * 2
    assert margins.text_px("東京", 12) > margins.text_px("ab", 12)  # CJK and emoji are wide
    assert margins.text_px("🎉", 12) >= 12
    assert margins.text_px("e\u0301", 12) == pytest.approx(margins.text_px("e", 12))  # a combining accent adds none
    assert margins.text_px("ü", 12) >= margins.text_px("u", 12)
    for ch in "…�·␣→—Юé":  # what escape_token writes, and others beyond ASCII: an em or more
        assert margins.char_em(ch) >= 1.0
    assert margins.text_px("x", 24) == pytest.approx(2 * margins.text_px("x", 12))


def test_the_margins_grow_with_the_labels_and_list_the_angles_in_plotlys_order():
    short, long = fitted(spec_for(["a", "b", "c"])), fitted(spec_for(["Internationalisation", "b", "c"]))
    assert [a[0] for a in short["angles"]] == [0, -30, -90] and short["n"] == 3  # flat, slanted, upright
    for (_, need_s, left_s, below_s), (_, need_l, left_l, below_l) in zip(short["angles"], long["angles"]):
        assert left_l > left_s and below_l >= below_s and need_l >= need_s
    upright = long["angles"][2]
    assert upright[3] - short["angles"][2][3] > 100  # 17 more characters, upright below the plot
    assert long["angles"][0][1] > 120  # flat, a column needs the whole word
    # slanted labels end at their tick and hang to the left: a long first label needs room left of the plot
    first = fitted(columns_spec(["Internationalisation", "b", "c"]))
    last = fitted(columns_spec(["b", "c", "Internationalisation"]))
    assert first["angles"][1][2] > first["angles"][0][2] + 60  # slanted: room left of the plot for it
    assert last["angles"][1][2] == last["angles"][0][2]  # its last label ends at its tick: no room needed there
    # the colour bar's column: its tick labels and title; the masked cells' legend (decoder self-attention) wider;
    # viz.views.attention.focus thins the long sentences' labels for a plot area less these
    masked = fitted(spec_for(["a", "b", "c"], causal=True))
    assert 60 < short["r"] <= focus.COLORBAR_PX < masked["r"] <= focus.LEGEND_PX


def test_fit_sets_the_margins_plotly_starts_from_and_keeps_a_figures_own_angle():
    spec = spec_for([f"w{i}" for i in range(80)])
    thin_ticks(spec)  # a long sentence: upright column labels, thinned
    m = fitted(spec)
    assert spec["layout"]["xaxis"]["tickangle"] == -90 and [a[0] for a in m["angles"]] == [-90]
    first = fitted(spec := spec_for(["a", "b"]))["angles"][0]
    assert (spec["layout"]["margin"]["l"], spec["layout"]["margin"]["b"]) == (first[2], first[3])
    assert spec["layout"]["margin"]["r"] == spec["layout"]["meta"]["margins"]["r"]


def test_a_larger_font_takes_more_room():
    small = fitted(spec_for(["Hunde", "rennen"]))
    spec = spec_for(["Hunde", "rennen"])
    for axis in ("xaxis", "yaxis"):
        spec["layout"][axis]["tickfont"] = {"size": 24}
        spec["layout"][axis]["title"]["font"] = {"size": 24}
    spec["data"][0]["colorbar"]["tickfont"] = {"size": 24}
    big = fitted(spec)
    assert big["angles"][0][2] > small["angles"][0][2] + 30 and big["r"] > small["r"] + 20


def test_the_overview_keeps_its_own_label_margins():
    weights = np.full((2, 3, 4, 4), 0.25, dtype=np.float32)
    spec = overview_spec(weights, list("abcd"), list("abcd"))
    spec["layout"]["margin"].update(l=36, b=28)
    m = fitted(spec)
    assert m["n"] == 0 and m["angles"] == [[0, 0, 36, 28]]  # no column labels shown: one way to draw it
    cols, rows = spec["data"][0]["z"].shape[1], spec["data"][0]["z"].shape[0]
    assert m["cells"] == [cols, rows]  # square cells: the page works out the plot area's real width


@pytest.mark.parametrize("kind", ["encoder_self", "decoder_self", "cross"])
@pytest.mark.parametrize("present", [False, True])
def test_the_attention_tabs_figures_carry_their_margins(translator, kind, present):
    result = translator.attention("Two dogs are running through the snow.")
    overview, detail = attention.views(translator.cfg, result, kind, 2, 3, present)
    for figure in (overview, detail):
        m = figure["layout"]["meta"]["margins"]
        margin = figure["layout"]["margin"]
        assert m["angles"] and (margin["l"], margin["b"]) == tuple(m["angles"][0][2:]) and margin["r"] == m["r"]
        assert all(isinstance(v, int) for a in m["angles"] for v in a)
        bar = figure["data"][0]["colorbar"]
        assert bar["x"] == 1 and bar["xpad"] == margins.COLORBAR_XPAD  # its place does not depend on the width
        assert "export" in figure["layout"]["meta"]  # the export's context is kept beside the margins
    assert detail["layout"]["meta"]["margins"]["n"] == len(detail["layout"]["xaxis"]["tickvals"])

"""Figure text that fits a phone (viz.wrap) and the figures that use it: every line of an Inside a head title no
wider than a 390-px phone gives it (the browser check: tests/test_browser_phone.py)."""

from __future__ import annotations

import re

import pytest

from model.probes.inside import inside_head
from model.terms import KINDS
from viz import inside as figs
from viz.margins import text_px
from viz.wrap import PHONE_FIGURE_PX, fit_lines, lines, phone_width

WHERE = "Encoder–decoder attention · layer 4 · head 7 · query 12 “Schneemobil”"


def test_a_short_text_stays_one_line_and_a_long_one_breaks_after_its_dots_first():
    assert fit_lines("V · 9 × 24", 14, 300) == "V · 9 × 24"
    broken = fit_lines(WHERE, 12, 200)
    assert broken.split("<br>") == ["Encoder–decoder attention", "layer 4 · head 7", "query 12 “Schneemobil”"]
    assert all(text_px(line, 12) <= 200 for line in broken.split("<br>"))
    assert fit_lines(WHERE, 12, 10_000) == WHERE


def test_it_breaks_after_a_comma_then_at_a_space_never_inside_a_tag_a_shape_or_a_quoted_token():
    text = "(a) q = x W<sup>Q</sup><sub>7</sub> + b, K = x W<sup>K</sup><sub>7</sub> + b, V = x W<sup>V</sup> + b"
    assert fit_lines(text, 16, 220).split("<br>") == [
        "(a) q = x W<sup>Q</sup><sub>7</sub> + b,", "K = x W<sup>K</sup><sub>7</sub> + b,", "V = x W<sup>V</sup> + b"]
    styled = '<span style="font-size:12px">a long subtitle of many words · 12 × 192</span>'
    for line in fit_lines(styled, 12, 120).split("<br>"):
        assert line.count("<") == line.count(">")  # no tag cut in two
    assert "12 × 192" in fit_lines("x at every key position · 12 × 192", 14, 60).split("<br>")
    assert "“a b c”" in fit_lines("the token “a b c” here", 14, 30).split("<br>")
    assert lines("a<br>b<br>c") == 3


def test_a_phone_leaves_the_plot_area_its_figure_less_margins_and_labels():
    assert phone_width() == PHONE_FIGURE_PX - 16 and phone_width(50) == PHONE_FIGURE_PX - 66
    assert 330 <= PHONE_FIGURE_PX <= 364  # a 390-px page: 364-px figures (app.css), a little kept for narrower


@pytest.mark.parametrize("kind", KINDS)
def test_every_inside_a_head_title_fits_a_phone_line_by_line(translator, kind):
    """The figures' titles and panel titles were one line each, up to 700 px: cut at a phone's right edge, and
    side by side over narrow panels ("α · 12 × 1" over "α_j v_j"). Each line now fits the room its figure gives
    it on a phone (the widest tick labels left of the plot taken off)."""
    hi = inside_head(translator, "A man in a red shirt is climbing a rock wall.", "", kind, 2, 1, 3)
    for name in ("projections", "scores", "head_output", "contributions", "figure2", "footnote4"):
        spec = getattr(figs, f"{name}_spec")(hi)
        layout = spec["layout"]
        labels = [t for key in layout if key.startswith("yaxis") for t in layout[key].get("ticktext") or []]
        labels += [str(y) for trace in spec["data"] for y in (trace.get("y") if trace.get("type") == "heatmap"
                                                              and trace.get("y") is not None else [])]
        room = phone_width(max((text_px(t, figs.FONT_PX) for t in labels), default=0) + 6)
        for note in layout["annotations"]:
            size = (note.get("font") or {}).get("size", figs.FONT_PX)
            left = max(0, -note.get("xshift", 0))  # a title drawn from over the tick labels has their room too
            for line in note["text"].split("<br>"):
                styled = re.search(r"font-size:(\d+)px", line)  # (a subtitle's line: its own size)
                px = int(styled.group(1)) if styled else size
                assert text_px(line, px) <= room + left + 1 or " " not in line, (name, line)
        for trace in spec["data"]:  # legend entries (less the legend's symbol)
            for line in str(trace.get("name") or "").split("<br>"):
                assert text_px(line, figs.FONT_PX) <= room - 40 + 1 or " " not in line, (name, line)

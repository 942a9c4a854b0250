"""The Why tab's run in a real browser (viz.views.scaling.live_frames, assets/web/live.js): a run's three figures are
drawn in the figures shown, and what they show is what the endpoint ``scaling_live`` answers for the same choices (the
two maps' titles as their captions, one colour bar for both)."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import numpy as np
import pytest
from gradio_client import Client
from helpers.browser import open_app, select_tab, watched_page
from helpers.plotly import array, figure
from helpers.scripts import HAS_HEATMAP, still
from playwright.sync_api import Browser, Page

from viz.views.page import WEB
from viz.views.scaling import CAPTION_TOP, LIVE_PLOTS

# Each figure as shown: its traces' x, y, z, text and its titles (typed arrays as lists), and the mark set before
SHOWN = """(ids) => Object.fromEntries(ids.map((id) => {
  const gd = document.querySelector(`#${id} .js-plotly-plot`), list = (v) => (ArrayBuffer.isView(v) ? Array.from(v)
    : Array.isArray(v) ? v.map(list) : v);
  const caption = document.getElementById(`${id}-caption`);
  return [id, {marked: gd.attnMarked === true, title: gd.layout.title && gd.layout.title.text,
               caption: caption && [...caption.querySelectorAll('.attn-caption-title, .attn-caption-sub')]
                 .map((e) => e.textContent), bars: gd.querySelectorAll('.colorbar').length,
               annotations: (gd.layout.annotations || []).map((a) => a.text), top: gd.layout.margin.t,
               saved: gd.layout.meta && gd.layout.meta.export && gd.layout.meta.export.title,
               data: gd.data.map((t) => ({x: list(t.x), y: list(t.y), z: list(t.z)}))}];
}))"""


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    yield from watched_page(browser, 1280, 720)


def flat(value) -> list:
    arr = array(value) if isinstance(value, dict) else np.asarray(value if value is not None else [], dtype=object)
    return np.asarray(arr, dtype=object).ravel().tolist()


def test_a_run_is_drawn_in_the_figures_shown_as_the_endpoint_answers(page: Page, server: str):
    open_app(page, server)
    select_tab(page, "Why 1/√d_k")
    for plot_id in LIVE_PLOTS:  # the tab's first run, drawn over the Plots' own blank figures
        page.wait_for_function(HAS_HEATMAP if plot_id != "live-entropy" else
                               "(id) => !!document.querySelector(`#${id} .js-plotly-plot .main-svg`)", arg=plot_id)
    page.evaluate("(ids) => ids.forEach((id) => { document.querySelector(`#${id} .js-plotly-plot`)"
                  ".attnMarked = true; })", list(LIVE_PLOTS))
    text = "Two young girls are playing with a ball on the beach."
    box = page.get_by_role("textbox", name="English sentence").locator("visible=true")
    box.fill(text)
    page.click("#live-run")
    page.wait_for_function("() => { const t = document.querySelector('#live-summary').textContent;"
                           " return t.includes('Translation with') && !t.includes('decoding…')"
                           " && document.querySelector('#live-frames textarea').value.includes('exports'); }")
    page.wait_for_function("() => document.querySelector('#live-normal .js-plotly-plot').layout.yaxis.ticktext"
                           ".join(' ').includes('beach')")
    page.evaluate(still("#live-normal .js-plotly-plot, #live-changed .js-plotly-plot, #live-entropy .js-plotly-plot"))
    shown = page.evaluate(SHOWN, list(LIVE_PLOTS))
    factor = float(page.locator("#scale-factor input[type=number]").input_value())
    answer = Client(server, verbose=False).predict(text, factor, "encoder_self", 1, api_name="/scaling_live")
    said = page.inner_text("#live-summary")  # the translations as the endpoint's, once the decodes are done
    lines = re.findall(r"\*\*Translation (?:with|as) [^*]+:\*\* ([^\n]+)", answer[3])
    assert len(lines) == 2 and "decoding" not in said
    for line in lines:
        assert line.replace("*", "").replace("\\", "") in said
    for plot_id, payload in zip(LIVE_PLOTS, answer[:3], strict=True):
        sent = figure(payload)
        drawn = shown[plot_id]
        assert drawn["marked"], f"{plot_id}: a new element, not the figure shown"
        assert drawn["annotations"] == [a["text"] for a in sent["layout"].get("annotations", [])], plot_id
        # drawn from the encoder alone before the decodes ended: saved, it names the translation all the same
        assert drawn["saved"] == sent["layout"]["meta"].get("export", {}).get("title"), plot_id
        if plot_id == "live-entropy":  # as answered, with its colour bar
            assert drawn["title"] is None and drawn["bars"] == 1 and drawn["top"] == sent["layout"]["margin"]["t"]
        else:  # its title as its caption, above it in the page's text; no colour bar of its own (one for both)
            title = sent["layout"]["title"]
            assert drawn["caption"] == [html.unescape(title["text"]), html.unescape(title["subtitle"]["text"])]
            assert drawn["title"] is None and drawn["bars"] == 0 and drawn["top"] == CAPTION_TOP, plot_id
        assert len(drawn["data"]) == len(sent["data"]), plot_id
        for trace, want in zip(drawn["data"], sent["data"], strict=True):
            for key in ("x", "y", "z"):
                a, b = flat(trace[key]), flat(want.get(key))
                if b and all(isinstance(v, int | float) for v in b):
                    assert np.allclose(np.asarray(a, float), np.asarray(b, float), atol=1e-6, equal_nan=True), \
                        (plot_id, key)
                else:
                    assert a == b, (plot_id, key)


# live.js alone, on a page of its own: a fake contract and shared helpers that record what it draws
LIVE_ALONE = """(source) => {
  document.body.innerHTML = '<div id="live-frames"><textarea></textarea></div>'
    + ['live-normal', 'live-changed', 'live-entropy'].map((id) => `<div id="${id}"></div>`).join('');
  window.drawn = [];
  const shared = {plotOf: (id) => document.querySelector(`#${id} .js-plotly-plot`),
                  drawInPlace: (figures, anew) => { window.drawn.push([figures, anew]); },
                  onChange: () => {}};
  (0, eval)(source)({livePlots: ['live-normal', 'live-changed', 'live-entropy'], liveFrames: 'live-frames'}, shared);
  window.answer = (tag) => { document.querySelector('#live-frames textarea').value = JSON.stringify({figures: {
    'live-normal': `normal ${tag}`, 'live-changed': `changed ${tag}`, 'live-entropy': `entropy ${tag}`}}); };
  window.plotDraws = (id) => {  // the Plot's element drawn (as draw.js tells the page)
    let gd = shared.plotOf(id);
    if (!gd) {
      gd = Object.assign(document.createElement('div'), {className: 'js-plotly-plot', attnSent: {}});
      document.getElementById(id).append(gd);
    }
    gd.dispatchEvent(new CustomEvent('attn-drawn', {bubbles: true}));
  };
}"""
SETTLE = "() => new Promise((r) => setTimeout(() => r(window.drawn.splice(0)), 0))"


def test_a_run_answered_before_its_plots_are_drawn_is_drawn_in_each_once_it_has_drawn(page: Page):
    """The tab's first run may come before its Plots have drawn their own figures (the tab still being made): each
    figure waits for its Plot's first draw; one whose Plot has drawn is drawn at once, with the last answer."""
    page.set_content("<html><body></body></html>")
    page.evaluate(LIVE_ALONE, (WEB / "live.js").read_text(encoding="utf-8"))
    page.evaluate("() => window.answer(1)")
    assert page.evaluate(SETTLE) == [[{}, True]]  # no Plot drawn yet: nothing to draw in
    page.evaluate("() => window.plotDraws('live-normal')")
    assert page.evaluate(SETTLE) == [[{"live-normal": "normal 1"}, True]]
    page.evaluate("() => window.plotDraws('live-normal')")  # (its own draw of what it was given, say)
    assert page.evaluate(SETTLE) == []
    page.evaluate("() => window.answer(2)")  # the next run: the Plot drawn gets it, the others wait for it
    assert page.evaluate(SETTLE) == [[{"live-normal": "normal 2"}, True]]
    page.evaluate("() => { window.plotDraws('live-entropy'); window.plotDraws('live-changed'); }")
    assert page.evaluate(SETTLE) == [[{"live-entropy": "entropy 2"}, True], [{"live-changed": "changed 2"}, True]]

"""Links in a real browser: a link opens every tab's view (Decoding's layer, head and step, Architecture's kind and
layer, Inside a head's kind, layer, head, query and view (one query or whole matrices), Head analysis's scope,
statistic and kind, the Lab's runs) and the page writes each tab's view back into its URL; colour bars, gradients and
the masked hatching survive every change of the URL; a click on a row of the mean's close-up says which head "Inside a
head" opened.

The app and the browser are tests/conftest.py's (`python app.py`, the shipped model); each page fails its test on a
console error or a request off loopback. 1280×720 (a projector).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from helpers.browser import goto, new_page, open_app, wait_idle, wait_tab, watched_page
from helpers.scripts import GD, TITLE, VALUE
from playwright.sync_api import Browser, Page

from viz.views.attention import examples

STATUS = "() => document.querySelector('#decode-status')?.textContent || ''"
CHECKED = "(id) => document.querySelector(`#${id} input[type=radio]:checked`)?.value ?? null"
# Every SVG reference (url(...#id)) in the page's plots: where it points, and whether the browser finds it there —
# the page's own URL (or none) and an element of this page with that id. A stale URL is another document: nothing.
REFERENCES = """() => {
  const here = location.href.split('#')[0], out = [];
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    const plot = gd.closest('[id]:not(.js-plotly-plot)')?.id || '?';
    for (const el of gd.querySelectorAll('*')) {
      for (const p of ['fill', 'clip-path', 'stroke', 'mask', 'filter']) {
        for (const v of [el.getAttribute(p), el.style.getPropertyValue(p)]) {
          const m = v && /url\\((["']?)([^"')]*)#([^"')]+)\\1\\)/.exec(v);
          if (!m) continue;
          const target = document.getElementById(m[3]);
          out.push({plot, prop: p, id: m[3], tag: target ? target.tagName : null,
                    resolves: (m[2] === '' || m[2] === here) && !!target});
        }
      }
    }
  }
  return out;
}"""


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    yield from watched_page(browser, 1280, 720)


# ---------------------------------------------------------------------------------------------- helpers
def query(page: Page) -> dict[str, str]:
    """The page's URL query now, one value a parameter."""
    return {k: v[-1] for k, v in parse_qs(urlsplit(page.url).query, keep_blank_values=True).items()}


def wait_query(page: Page, **wanted: str) -> dict[str, str]:
    """Until the page has written these parameters into its URL (it does so a moment after a change)."""
    page.wait_for_function("(w) => Object.entries(w).every(([k, v]) => new URLSearchParams(location.search)"
                           ".get(k) === v)", arg=wanted)
    return query(page)


def open_link(page: Page, server: str, tab_id: str, **params) -> None:
    """Open a link to ``tab_id`` with ``params``, until that tab is the one shown."""
    goto(page, f"{server}?{urlencode({'tab': tab_id, **params})}")
    page.wait_for_function(f"() => document.querySelector('[role=tab][data-tab-id={tab_id}]')"
                           "?.getAttribute('aria-selected') === 'true'")


def references(page: Page, plot_ids: tuple[str, ...]) -> list[dict]:
    """The SVG references of those plots once each has drawn: every one must resolve."""
    for plot_id in plot_ids:
        page.wait_for_function(f"(id) => !!({GD})(id)?.querySelector('.main-svg')", arg=plot_id)
    refs = [r for r in page.evaluate(REFERENCES) if r["plot"] in plot_ids]
    assert refs and [r for r in refs if not r["resolves"]] == [], refs
    return refs


def colour_bars(refs: list[dict], plot_ids: tuple[str, ...]) -> None:
    """Each of those plots fills its colour bar with a gradient that resolves."""
    filled = {r["plot"] for r in refs if r["prop"] == "fill" and r["tag"] == "linearGradient"}
    assert set(plot_ids) <= filled, refs


# ---------------------------------------------------------------------------------- colour bars and hatching
def test_colour_bars_and_the_hatching_resolve_after_every_change_of_the_url(page: Page, server: str):
    """A shared link is rewritten by the page as it opens; a control, an example and Copy link rewrite it again. Each
    time, every gradient, pattern and clip path of every plot still points at this page (plotly wrote the URL the
    page had when it drew)."""
    sentence = "A dog runs across the grass."
    open_link(page, server, "attention", text=sentence, kind="cross", layer="3", head="2")
    page.wait_for_function(f"() => ({TITLE})('detail').includes(' · head 2')")
    wait_query(page, colour="fixed")  # the page added what the link left out: a new URL
    colour_bars(references(page, ("overview", "detail")), ("overview", "detail"))

    page.locator("#colour label:has(input[value='row'])").click()  # a control
    wait_query(page, colour="row")
    page.wait_for_function(f"() => ({GD})('detail').data[0].colorbar.ticktext?.includes('row max')")
    colour_bars(references(page, ("overview", "detail")), ("overview", "detail"))

    example = next(e for e in examples.EXAMPLES if e.kind == "decoder_self")  # an example: a new sentence
    page.click("#example input")
    page.get_by_role("option", name=example.label).click()
    wait_query(page, kind="decoder_self", head=str(example.head))
    page.wait_for_function(f"(h) => ({TITLE})('detail').includes(' · head ' + h)", arg=example.head)
    colour_bars(references(page, ("overview", "detail")), ("overview", "detail"))

    page.click("#copy-link")  # Copy link writes the URL once more
    page.wait_for_selector("#copy-link-note")
    colour_bars(references(page, ("overview", "detail")), ("overview", "detail"))

    page.get_by_role("tab", name="Decoding, step by step").click()  # the hatching of the positions not yet written
    wait_query(page, tab="decoding")
    page.wait_for_function(f"() => ({STATUS})().includes('Step 1 of')")
    refs = references(page, ("decode-self",))
    assert any(r["tag"] == "pattern" for r in refs), refs


# ---------------------------------------------------------------------------------------------- every tab's view
def test_a_link_opens_decoding_at_its_layer_head_and_step_and_the_url_follows_the_tab(page: Page, server: str):
    open_link(page, server, "decoding", layer="5", head="7", step="3")
    page.wait_for_function(f"() => /Step 3 of \\d+ · layer 5 · head 7/.test(({STATUS})())")
    assert page.evaluate(VALUE, "decode-layer") == "5" and page.evaluate(CHECKED, "decode-head") == "7"
    assert page.evaluate(VALUE, "decode-step") == "3"
    for plot_id in ("decode-self", "decode-cross"):
        page.wait_for_function(f"(id) => ({TITLE})(id).includes('step 3') && ({TITLE})(id).includes('head 7')",
                               arg=plot_id)
    page.click("#step-next")
    page.wait_for_function(f"() => /Step 4 of \\d+ · layer 5 · head 7/.test(({STATUS})())")
    wait_query(page, tab="decoding", layer="5", head="7", step="4")
    page.locator("#decode-head label:has(input[value='0'])").click()  # the mean (drawn from the views held, or asked)
    page.wait_for_function(f"() => /Step 4 of \\d+ · layer 5 · mean of/.test(({STATUS})())")
    link = wait_query(page, head="0", step="4")
    page.get_by_role("tab", name="Attention").click()  # the Attention tab's own view; Decoding's step goes
    link = wait_query(page, tab="attention")
    assert "step" not in link, link


def test_a_link_opens_architecture_inside_a_head_head_analysis_and_the_lab_on_their_views(browser: Browser,
                                                                                          server: str):
    # each link in a page of its own, as a visitor opens it (a page left while its requests run logs their abort)
    with new_page(browser, 1280, 720) as page:
        open_link(page, server, "architecture", kind="decoder_self", layer="4")
        assert page.evaluate(VALUE, "arch-layer") == "4"
        assert page.locator("#arch-kind input").input_value() == "Decoder self-attention (masked)"
        wait_query(page, tab="architecture", kind="decoder_self", layer="4")

    with new_page(browser, 1280, 720) as page:
        open_link(page, server, "inside", kind="cross", layer="2", head="3", query="4")
        page.wait_for_function("() => /Encoder–decoder attention, layer 2, head 3, query 4/"
                               ".test(document.querySelector('#in-steps')?.textContent || '')")
        assert page.evaluate(CHECKED, "in-query") == "4" and page.evaluate(CHECKED, "in-head") == "3"
        page.locator("#in-query label:has(input[value='1'])").click()
        wait_query(page, tab="inside", kind="cross", layer="2", head="3", query="1", show="query")

    with new_page(browser, 1280, 720) as page:  # Inside a head's whole matrices, by the link alone
        open_link(page, server, "inside", kind="encoder_self", layer="1", head="5", show="matrix")
        page.locator("#in-m-weights .main-svg").first.wait_for(state="visible")
        assert page.evaluate(CHECKED, "in-view") == "matrix" and page.locator("#in-one-query").is_hidden()
        page.locator("#in-view label", has_text="One query").click()
        wait_query(page, tab="inside", kind="encoder_self", layer="1", head="5", show="query")
        page.locator("#in-scores .main-svg").first.wait_for(state="visible")

    with new_page(browser, 1280, 720) as page:
        open_link(page, server, "heads", scope="sample", stat="entropy", kind="encoder_self")
        page.wait_for_function(f"() => ({GD})('heads-grid')?.layout?.coloraxis?.colorbar?.title?.text === 'entropy'")
        assert page.evaluate(CHECKED, "heads-scope") == "sample"
        assert page.evaluate(CHECKED, "ablated-kind") == "encoder_self"
        assert page.locator("#heads-stat input").input_value().startswith("entropy")
        wait_query(page, tab="heads", scope="sample", stat="entropy", kind="encoder_self")

    with new_page(browser, 1280, 720) as page:
        open_link(page, server, "lab", runs="")  # none of the runs (the tab's default shows the shipped ones)
        boxes = page.locator("#lab-runs input[type=checkbox]")
        boxes.first.wait_for()
        assert boxes.count() and not any(boxes.nth(i).is_checked() for i in range(boxes.count()))
        name = boxes.first.get_attribute("name")
        boxes.first.check()
        wait_query(page, tab="lab", runs=name)


def test_a_bad_step_falls_back_with_a_notice(page: Page, server: str):
    open_link(page, server, "decoding", step="0")
    page.wait_for_function(f"() => /Step 1 of \\d+/.test(({STATUS})())")
    guide = page.evaluate("() => document.querySelector('#guide')?.textContent || ''")
    assert re.search(r"The link's step must be a whole number", guide), guide


# ---------------------------------------------------------------------------------------------- what a load asks
def test_a_page_load_asks_the_server_for_each_figure_once(page: Page, server: str):
    """A visit asks for the Attention tab's view and what follows every run (the model's translation, the domain
    notice, the contributions), nothing else: the Why tab's first figures come with the page, and a plain visit
    opens on the tab's first choices. A link's run sets its choices and draws its figures, drawn once (not again on
    the choices' change); then the tabs after it take their part of the link, the lecture's caption comes, and the
    kind's note on the decoder's shift (a text)."""
    asked: list[str] = []
    names: list[str] = []
    page.on("request", lambda r: asked.append(r) if re.search(r"/queue/join|/run/predict", r.url) else None)

    def load(url: str) -> list[str]:
        asked.clear()
        open_app(page, url)
        wait_idle(page)
        page.wait_for_timeout(500)  # anything the load's answers would start
        wait_idle(page)
        names[:] = names or page.evaluate("() => window.gradio_config.dependencies.map(d => d.api_name)")
        return sorted(names[json.loads(r.post_data)["fn_index"]] for r in asked)

    run = ["after_run_1", "beside_translation_1", "open_link"]
    # (and the alignment view where it is near the screen, 300 px below it at most: the page asks for it then,
    # lines.js; at 1400×1000 the choices column of a link's encoder self-attention, without the shift's note, puts it
    # there)
    lines = "() => document.getElementById('lines').getBoundingClientRect().top < innerHeight + 300"
    assert load(server) == sorted([*run, *(["alignment_plot"] if page.evaluate(lines) else [])])
    asked_for = load(server + "?kind=encoder_self&layer=2&head=3")
    linked = [*run, "caption", "open_linked", "shift_note", *(["alignment_plot"] if page.evaluate(lines) else [])]
    assert asked_for == sorted(linked)
    assert "layer 2 · head 3" in page.evaluate(TITLE, "detail")


# ------------------------------------------------------------------------------------ a row of the mean's close-up
def test_a_row_of_the_means_close_up_says_which_head_inside_a_head_opened(page: Page, server: str):
    open_app(page, server)
    wait_idle(page)  # the load's own answers in (this test is about the row's note, not a click during the load)
    page.locator("#head label:has(input[value='0'])").click()  # the mean of the layer's heads
    page.wait_for_function(f"() => ({TITLE})('detail').includes('mean')")
    layer = page.locator("#layer input[type=number]").input_value()
    page.locator("#detail").scroll_into_view_if_needed()
    x, y = page.evaluate(f"""() => {{
        const gd = ({GD})('detail'), fl = gd._fullLayout, box = gd.getBoundingClientRect();
        return [box.left + fl.xaxis._offset + fl.xaxis.l2p(1), box.top + fl.yaxis._offset + fl.yaxis.l2p(2)];
    }}""")
    page.mouse.click(x, y)
    wait_tab(page, "Inside a head")
    head = page.evaluate(CHECKED, "in-head")
    page.wait_for_function("(t) => (document.querySelector('#in-note')?.textContent || '').includes(t)",
                           arg=f"mean of layer {layer}'s 8 heads")
    assert f"opened head {head} of that layer" in page.inner_text("#in-note")
    if page.locator("#in-which").get_attribute("aria-expanded") != "true":  # (its head choices, folded)
        page.locator("#in-which").click()
    page.locator("#in-head label:has(input[value='4'])").click()  # the tab's own choice: the note goes
    page.wait_for_function("() => !(document.querySelector('#in-note')?.textContent || '').trim()")

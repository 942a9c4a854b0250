"""Inside a head in a real browser: the "Inside a head" tab, a click on a row of the close-up, the contributions toggle.

The app and the browser are tests/conftest.py's; each page fails its test on a console error or a request off
loopback. The tab is shown at 1280×720 (a projector). Screenshots are not tests: ``python -m bench.screenshots``.

The tests take turns on one loaded page (``kept``), in file order: first those that need the tab as it opens on the
app's first sentence (footnote 4's pick), then those that set the view they need (each also passes alone).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers.browser import KeptPages, select_tab, wait_tab
from helpers.plotly import array
from helpers.scripts import GD, TITLE, still
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from viz.views.inside_head import PLOT_LABELS, inside_head_view

KINDS = {"encoder_self": "Encoder self-attention", "decoder_self": "Decoder self-attention (masked)",
         "cross": "Encoder–decoder attention"}
STEPS = "() => document.querySelector('#in-steps')?.textContent || ''"
COLORBAR = f"(id) => {{ const gd = ({GD})(id); return gd ? gd.data[0].colorbar.title.text : ''; }}"


@pytest.fixture
def page(kept: KeptPages, server: str) -> Page:
    """The module's page at 1280×720 (a projector), the app loaded."""
    return kept.open(server, 1280, 720)


def steps_show(page: Page, text: str) -> None:
    page.wait_for_function(f"(t) => ({STEPS})().includes(t)", arg=text)


def drawn(page: Page, *plot_ids: str) -> None:
    for plot_id in plot_ids:
        page.wait_for_selector(f"#{plot_id} .js-plotly-plot .main-svg")


def unfold(page: Page) -> None:
    """The tab's head choices (kind, layer, head, scale) shown: they are folded under a title that names them."""
    if page.locator("#in-which").get_attribute("aria-expanded") != "true":
        page.locator("#in-which").click()
    page.locator("#in-head").wait_for(state="visible")


def choose(page: Page, elem_id: str, value) -> None:
    if elem_id.startswith("in-") and elem_id not in ("in-query", "in-view"):
        unfold(page)
    page.locator(f"#{elem_id} label:has(input[value='{value}'])").click()


def pick_kind(page: Page, kind: str) -> None:
    """The tab's kind is a dropdown."""
    unfold(page)
    page.locator("#in-kind input").click()
    page.get_by_role("option", name=KINDS[kind]).click()


# ------------------------------------------------------------------------------- the opening view, whole matrices
@pytest.fixture(scope="module")
def shipped():
    """The shipped model and the app's first sentence, as the app runs them."""
    from model.network.inference import ASSETS, Translator
    from model.probes.replay import prepare
    from viz.views.attention.maps import DEFAULT_SOURCE

    model = Translator(ASSETS, device="cpu")
    return model, prepare(model, DEFAULT_SOURCE)


@pytest.fixture(scope="module")
def shipped_pick(shipped):
    """Where the tab opens on the app's first sentence (the Attention tab opens on cross-attention): the model's own
    footnote-4 pick, and the one-query view's three cases there."""
    from model.probes.inside import inside_head
    from model.probes.matrices import footnote4_pick

    model, sentence = shipped
    pick = footnote4_pick(model, sentence, None, "cross")
    return pick, inside_head(model, sentence, None, "cross", pick.layer, pick.head, pick.query).scale_cases


def top(page: Page, elem_id: str) -> float:
    return page.evaluate("(id) => document.getElementById(id).getBoundingClientRect().top", elem_id)


def test_the_tab_opens_on_footnote_4_with_its_panels_in_reading_order(page: Page, server: str, shipped_pick):
    pick, cases = shipped_pick
    select_tab(page, "Inside a head")
    steps_show(page, f"{KINDS['cross']}, layer {pick.layer}, head {pick.head}, query {pick.query} ")
    drawn(page, "in-projections", "in-scores", "in-head_output", "in-figure2", "in-footnote4")
    series = page.evaluate(f"() => ({GD})('in-footnote4')._fullData.map(t => [t.name, Math.max(...Array.from(t.y))])")
    assert len(series) == 3 and "trained" in series[0][0] and "unscaled" in series[1][0], series
    assert series[1][1] - series[0][1] > 0.3  # the unscaled softmax visibly sharper
    assert [round(m, 3) for _, m in series] == [round(c.max_weight, 3) for c in cases]
    tops = [top(page, f"in-{name}") for name in ("projections", "scores", "head_output", "figure2")]
    assert tops == sorted(tops) and len(set(tops)) == 4, tops  # (a) → (b) → (c) → (d), top to bottom
    assert top(page, "in-footnote4") < tops[2]  # footnote 4 beside (b), before (c)


def hover_text(page: Page, plot_id: str, x: float, y: float) -> str:
    page.locator(f"#{plot_id}").scroll_into_view_if_needed()
    box = page.evaluate(
        f"""([id, x, y]) => {{
            const gd = ({GD})(id), fl = gd._fullLayout, box = gd.getBoundingClientRect();
            return [box.left + fl.xaxis._offset + fl.xaxis.l2p(x), box.top + fl.yaxis._offset + fl.yaxis.l2p(y)];
        }}""", [plot_id, x, y])
    page.mouse.move(*box)
    page.wait_for_selector(f"#{plot_id} .hoverlayer .hovertext")
    return page.evaluate("(id) => document.querySelector(`#${id} .hoverlayer .hovertext`).textContent", plot_id)


# ------------------------------------------------------------------------------- a new query, drawn in place
PANELS = tuple(f"in-{name}" for name in PLOT_LABELS)
# Each panel as shown, and as plotly draws the figure the server sent for it (#in-frames) anew in an element as wide:
# its data (typed arrays as lists), titles, shapes and height, the margins plotly grew, and the texts it drew
SHOWN_AND_SENT = """async (ids) => {
  const list = (v) => (ArrayBuffer.isView(v) ? Array.from(v) : v);
  const decoded = (v) => {
    if (v && typeof v === 'object' && typeof v.bdata === 'string') {
      const bytes = Uint8Array.from(atob(v.bdata), (c) => c.charCodeAt(0));
      const types = {f4: Float32Array, f8: Float64Array, i1: Int8Array, u1: Uint8Array, i2: Int16Array,
                     u2: Uint16Array, i4: Int32Array, u4: Uint32Array};
      return Array.from(new types[v.dtype](bytes.buffer));
    }
    if (ArrayBuffer.isView(v)) return Array.from(v);
    if (Array.isArray(v)) return v.map(decoded);
    return v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, decoded(x)])) : v;
  };
  const texts = (gd) => [...gd.querySelectorAll('.annotation-text, g[class*="tick"] > text, .legendtext')]
    .map((el) => el.textContent);
  const look = (gd) => ({
    data: gd.data.map((t) => ({x: decoded(list(t.x)), y: decoded(list(t.y)), z: decoded(t.z), name: t.name})),
    annotations: (gd.layout.annotations || []).map((a) => a.text), shapes: decoded(gd.layout.shapes || []),
    height: gd._fullLayout.height, margins: ['l', 'r', 't', 'b'].map((s) => Math.round(gd._fullLayout._size[s])),
    texts: texts(gd), inPlace: gd.attnMarked === true,
  });
  const {figures} = JSON.parse(document.querySelector('#in-frames textarea').value);
  const out = {};
  for (const id of ids) {
    const gd = document.querySelector(`#${id} .js-plotly-plot`), {data, layout, config} = figures[id];
    const fresh = document.body.appendChild(document.createElement('div'));
    fresh.style.width = `${gd.clientWidth}px`;
    await window.Plotly.newPlot(fresh, data, {...layout, autosize: true,
                                              margin: {...layout.margin, autoexpand: true}}, config);
    out[id] = {shown: look(gd), sent: look(fresh)};
    window.Plotly.purge(fresh);
    fresh.remove();
  }
  return out;
}"""


def same(shown, sent) -> bool:
    """Data as drawn against data as sent (or computed): the same numbers (float32 either side), the same labels."""
    if isinstance(sent, dict) and "bdata" in sent:
        sent = array(sent).ravel().tolist()
    if isinstance(sent, np.ndarray):
        sent = sent.ravel().tolist()
    if isinstance(sent, list) and sent and isinstance(sent[0], list):
        sent = [v for row in sent for v in row]
    if isinstance(shown, list) and shown and isinstance(shown[0], list):
        shown = [v for row in shown for v in row]
    if isinstance(sent, list) and all(isinstance(v, int | float) for v in sent):
        return isinstance(shown, list) and np.allclose(np.asarray(shown, float), np.asarray(sent, float), atol=1e-6)
    return shown == sent


def test_a_new_query_is_drawn_in_the_figures_shown_as_the_model_computes_it(page: Page, server: str, shipped,
                                                                             shipped_pick):
    """A new query's six panels are drawn in the figures already shown (not six new Plots), and what they show is
    what the model computes for that query, drawn as plotly draws the server's figure anew (margins and texts)."""
    from model.probes.inside import inside_head

    model, sentence = shipped
    pick, _ = shipped_pick
    select_tab(page, "Inside a head")
    steps_show(page, f"{KINDS['cross']}, layer {pick.layer}, head {pick.head}, query {pick.query} ")
    drawn(page, *PANELS)
    n = page.locator("#in-query input[type=radio]").count()
    for query in ((pick.query + 1) % n, (pick.query + 2) % n, pick.query):
        page.evaluate("(ids) => ids.forEach((id) => { document.querySelector(`#${id} .js-plotly-plot`)"
                      ".attnMarked = true; })", list(PANELS))
        choose(page, "in-query", query)
        steps_show(page, f"head {pick.head}, query {query} ")
        page.wait_for_function("([ids, q]) => ids.every((id) => { const gd = document.querySelector("
                               "`#${id} .js-plotly-plot`); return gd.layout.annotations.some("
                               "(a) => a.text.includes(`query ${q} `)); })", arg=[list(PANELS), query])
        page.evaluate(still("#in-one-query .js-plotly-plot"))
        view = inside_head_view(inside_head(model, sentence, None, "cross", pick.layer, pick.head, query))
        panels = page.evaluate(SHOWN_AND_SENT, list(PANELS))
        for name in PLOT_LABELS:
            shown, sent, computed = panels[f"in-{name}"]["shown"], panels[f"in-{name}"]["sent"], getattr(view, name)
            assert shown["inPlace"], f"{name}: a new element, not the figure shown"
            assert shown["annotations"] == [a["text"] for a in computed["layout"].get("annotations", [])], name
            assert shown["height"] == computed["layout"]["height"], name
            assert len(shown["data"]) == len(computed["data"]), name
            for drawn_trace, trace in zip(shown["data"], computed["data"], strict=True):
                for key in ("x", "y", "z", "name"):
                    assert same(drawn_trace[key], trace.get(key)), (name, key)
            assert shown["shapes"] == sent["shapes"], name
            assert shown["margins"] == sent["margins"], (name, shown["margins"], sent["margins"])
            assert shown["texts"] == sent["texts"], name



# Every fetch the page sends from now on, with its time (Gradio's client sends each call with fetch: .../queue/join),
# the time each panel was first drawn after the next pointerdown, and the panels on screen at it
WATCH_REQUESTS = """(ids) => {
  window.sent = [];
  window.drawnAt = {};
  const fetch = window.fetch;
  window.fetch = (...args) => {
    window.sent.push([performance.now(), String(args[0] && args[0].url || args[0])]);
    return fetch(...args);
  };
  document.addEventListener('pointerdown', () => {
    window.clickedAt = performance.now();
    window.onScreen = ids.filter((id) => {
      const r = document.getElementById(id)?.getBoundingClientRect();  // (a later test's page: another tab)
      return Boolean(r) && r.height > 0 && r.top < innerHeight && r.bottom > 0;
    });
  }, {capture: true});
  document.addEventListener('attn-drawn', (ev) => {
    const id = ids.find((i) => ev.target.closest && ev.target.closest(`#${i}`));
    if (id && window.clickedAt !== undefined && !(id in window.drawnAt)) window.drawnAt[id] = performance.now();
  });
  const held = window.attnInsideHeld;  // the query's js, as Gradio's dispatch of the event reaches it
  window.attnInsideHeld = (...inputs) => {
    if (window.heldAt === undefined) window.heldAt = performance.now();
    return held(...inputs);
  };
}"""


def test_a_new_query_is_drawn_from_what_the_page_holds_before_any_request(page: Page, server: str):
    """Once the view is drawn the page holds every query's panels of the head shown (#in-held): a click on another
    query draws the panels on screen at the radio's own input event, before Gradio's dispatch reaches the query's js,
    and so before any call is sent, and those further down from the same as they come near or the page idles; the
    call then brings the texts, and its figures are those drawn."""
    select_tab(page, "Inside a head")
    drawn(page, *PANELS)
    page.wait_for_function("() => (document.querySelector('#in-held textarea')?.value || '').length > 0")
    n = page.locator("#in-query input[type=radio]").count()
    shown = int(page.locator("#in-query input[type=radio]:checked").get_attribute("value"))
    query = (shown + 1) % n
    page.evaluate(WATCH_REQUESTS, list(PANELS))
    choose(page, "in-query", query)
    page.wait_for_function("(ids) => ids.every((id) => id in window.drawnAt)", arg=list(PANELS))
    steps_show(page, f", query {query} ")  # the call's answer: the steps
    times = page.evaluate("() => ({clicked: window.clickedAt, sent: window.sent, held: window.heldAt, "
                          "drawn: window.onScreen.map((id) => window.drawnAt[id]), onScreen: window.onScreen})")
    assert times["onScreen"], times  # (the first of the panels is on screen as the tab opens)
    calls = [t for t, url in times["sent"] if "/queue/join" in url and t >= times["clicked"]]
    assert calls, times["sent"]  # the call for the texts was sent
    assert max(times["drawn"]) <= min(calls), times  # every panel drawn before it
    assert times["held"] is not None and max(times["drawn"]) <= times["held"], times  # … and before the query's js
    page.evaluate(still("#in-one-query .js-plotly-plot"))
    panels = page.evaluate(SHOWN_AND_SENT, list(PANELS))
    for name in PLOT_LABELS:  # what was drawn from what the page holds is what the call sent
        shown_panel, sent = panels[f"in-{name}"]["shown"], panels[f"in-{name}"]["sent"]
        assert shown_panel["annotations"] == sent["annotations"], name
        assert f"query {query} " in " ".join(shown_panel["annotations"]) or name == "figure2", name
        for drawn_trace, trace in zip(shown_panel["data"], sent["data"], strict=True):
            for key in ("x", "y", "z", "name"):
                assert same(drawn_trace[key], trace[key]), (name, key)


def test_whole_matrices_hover_the_mask_and_a_row_opens_its_query(page: Page, server: str):
    select_tab(page, "Inside a head")
    steps_show(page, "Encoder–decoder attention, layer ")
    pick_kind(page, "decoder_self")
    steps_show(page, KINDS["decoder_self"])
    layer = page.locator("#in-layer input[type=number]").input_value()
    head = page.locator("#in-head input:checked").input_value()
    choose(page, "in-view", "matrix")
    page.wait_for_function("() => (document.querySelector('#in-matrix-head')?.textContent || '')"
                           f".includes('{KINDS['decoder_self']}, layer {layer}, head {head}')")
    stages = ["in-m-scores", "in-m-scaled", "in-m-masked", "in-m-weights"]
    drawn(page, "in-m-projections", *stages, "in-m-output")
    assert not page.locator("#in-scores").is_visible()  # the one-query view is hidden meanwhile
    # the four maps: one (queries × keys) heatmap each, the three score maps on one colour range
    info = page.evaluate(f"(ids) => ids.map(id => {{ const t = ({GD})(id)._fullData[0]; "
                         "return [t.type, t.z.length, t.z[0].length, t.zmin, t.zmax]; })", stages)
    assert {i[0] for i in info} == {"heatmap"} and len({tuple(i[1:3]) for i in info}) == 1
    assert info[0][3:] == info[1][3:] == info[2][3:] and info[3][3:] == [0, 1]
    # the mask: grey and hatched cells with a legend entry, on ③ and ④
    legend = page.evaluate("() => document.querySelector('#in-m-masked .legend')?.textContent || ''")
    assert "masked: −∞" in legend
    assert "masked" in hover_text(page, "in-m-masked", 2, 0)  # key 2 after query 0: masked
    text = hover_text(page, "in-m-weights", 0, 1)  # query 1 → key 0: its weight
    weight = page.evaluate(f"() => ({GD})('in-m-weights')._fullData[0].z[1][0]")
    assert f"{weight:.4f}" in text and "query 1" in text, text
    # a click on row 2 opens the one-query view on that query (clicked again should a late redraw of the figure have
    # taken the click: a dropdown's choice sends its event twice, and either answer may come last)
    wanted = f"{KINDS['decoder_self']}, layer {layer}, head {head}, query 2 "
    for attempt in range(3):
        page.mouse.move(0, 0)  # no hover label left over the row
        x, y = page.evaluate(
            f"""() => {{
                const gd = ({GD})('in-m-weights'), fl = gd._fullLayout, box = gd.getBoundingClientRect();
                return [box.left + fl.xaxis._offset + fl.xaxis.l2p(0), box.top + fl.yaxis._offset + fl.yaxis.l2p(2)];
            }}""")
        page.mouse.click(x, y)
        try:
            page.wait_for_function(f"(t) => ({STEPS})().includes(t)", arg=wanted,
                                   timeout=30_000 if attempt < 2 else None)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
            choose(page, "in-view", "matrix")  # back to the matrices, should the click have opened another query
            drawn(page, "in-m-weights")
    assert page.locator("#in-view input[value='query']").is_checked()
    assert page.locator("#in-query input[value='2']").is_checked()
    assert not page.locator("#in-m-weights").is_visible()


# ------------------------------------------------------------------------------- from the Attention tab
def test_the_attention_tabs_measure_draws_weights_or_contributions_and_a_redraw_keeps_it(page: Page, server: str):
    select_tab(page, "Attention")
    assert page.evaluate(COLORBAR, "detail") == "weight"
    choose(page, "measure", "contributions")
    page.wait_for_function(f"() => ({COLORBAR})('detail') === 'contribution'")
    page.wait_for_function(f"() => ({COLORBAR})('overview') === 'contribution'")
    choose(page, "head", 4)
    page.wait_for_function(f"() => ({TITLE})('detail').includes('head 4 · contributions')")
    choose(page, "measure", "weights")
    page.wait_for_function(f"() => ({COLORBAR})('detail') === 'weight'")


def test_the_tab_follows_the_attention_view_and_shares_its_factor_with_the_why_tab(page: Page, server: str):
    select_tab(page, "Attention")
    choose(page, "head", 4)
    page.wait_for_function(f"() => ({TITLE})('detail').includes('head 4')")
    layer = page.locator("#layer input[type=number]").input_value()
    select_tab(page, "Inside a head")
    steps_show(page, f"layer {layer}, head 4, query 0")
    drawn(page, "in-scores", "in-figure2")
    which = page.locator("#in-which")  # the folded choices' title names the head and its scale
    expect(which).to_contain_text(f"layer {layer} · head 4 · × 1/√d_k")
    unfold(page)
    page.click("#in-take-factor")  # the Why tab's slider starts at 1: no scaling
    steps_show(page, "the weights with the factor")
    assert page.locator("#in-factor textarea").input_value() == "1"
    expect(which).to_contain_text(f"layer {layer} · head 4 · × 1 (change)")
    page.fill("#in-factor textarea", "")
    page.press("#in-factor textarea", "Enter")
    steps_show(page, "the weights (a row of the heatmap)")
    assert "factor:" not in page.inner_text("#in-footnote4-text")
    page.click("#in-to-why")
    page.wait_for_selector("#to-inside", state="visible")
    page.click("#to-inside")  # back, with the Why tab's factor (its slider starts at 1: no scaling)
    page.wait_for_function("() => document.querySelector('#in-footnote4-text').textContent.includes('factor: × 1')")
    assert page.locator("#in-factor textarea").input_value() == "1"


def test_a_click_on_a_row_of_the_close_up_opens_the_tab_on_that_query(page: Page, server: str):
    select_tab(page, "Attention")
    choose(page, "kind", "cross")
    choose(page, "head", 3)
    page.wait_for_function(f"() => ({TITLE})('detail').startsWith('Encoder–decoder attention · layer ')"
                           f" && ({TITLE})('detail').includes(' · head 3')")
    layer = page.locator("#layer input[type=number]").input_value()
    page.locator("#detail").scroll_into_view_if_needed()
    x, y = page.evaluate(
        f"""() => {{
            const gd = ({GD})('detail'), fl = gd._fullLayout, box = gd.getBoundingClientRect();
            return [box.left + fl.xaxis._offset + fl.xaxis.l2p(1), box.top + fl.yaxis._offset + fl.yaxis.l2p(2)];
        }}"""
    )
    page.mouse.click(x, y)
    wait_tab(page, "Inside a head")
    steps_show(page, f"Encoder–decoder attention, layer {layer}, head 3, query 2")
    assert page.locator("#in-query input[value='2']").is_checked()
    assert page.locator("#in-kind input").input_value() == KINDS["cross"]


def test_a_token_a_head_then_each_kind_update_the_view_keeping_head_and_query(page: Page, server: str):
    select_tab(page, "Attention")
    choose(page, "kind", "cross")
    page.wait_for_function(f"() => ({TITLE})('detail').startsWith('Encoder–decoder attention · layer ')")
    layer = page.locator("#layer input[type=number]").input_value()
    select_tab(page, "Inside a head")  # on the pick or the Attention tab's head (the same view as before: kept)
    steps_show(page, f"{KINDS['cross']}, layer ")
    layer = page.locator("#in-layer input[type=number]").input_value()
    choose(page, "in-query", 3)
    steps_show(page, ", query 3")
    # (drawn as it comes near the view or the page idles: below the fold at 1280×720)
    page.wait_for_function(f"() => ({GD})('in-scores').layout.annotations.at(-1).text.includes('query 3')")
    choose(page, "in-head", 2)
    steps_show(page, f"{KINDS['cross']}, layer {layer}, head 2, query 3")
    for kind in ("encoder_self", "decoder_self", "cross"):
        pick_kind(page, kind)
        steps_show(page, f"{KINDS[kind]}, layer {layer}, head 2, query 3")
        drawn(page, "in-scores", "in-figure2", "in-projections", "in-head_output", "in-contributions")
        if kind == "decoder_self":  # the keys after the query are shown masked (−∞ markers)
            page.wait_for_function(f"() => ({GD})('in-scores').data.some(t => t.mode === 'markers+text')")

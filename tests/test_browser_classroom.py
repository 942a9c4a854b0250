"""Made for the classroom (issue #19) in a real browser at a projector's 1280×720: a link opens its view with no
click, the URL follows the view and "Copy link" copies it, hostile links run nothing, the first screen holds
sentence, translation, overview and close-up with the chosen tile framed, presentation mode's text is large
and of high contrast (measured in the page, light and dark), examples open their view, and the keyboard alone
reaches every control and moves the close-up. Fixtures (one app, one Chromium) come from tests/test_browser.py.
Screenshots go to screenshots/classroom-*.png.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
from playwright.sync_api import Browser, Page
from test_browser import GD, HAS_HEATMAP, SHOTS, TIMEOUT_MS, TITLE, VALUE, Watch, assert_not_injected

from viz.views import examples, projector

WIDTH, HEIGHT = 1280, 720
GUIDE_SHOWN = "() => { const e = document.querySelector('#guide'); return !!e && e.offsetParent !== null; }"
# What a view shows, read from the page: the controls and the close-up's title.
STATE = f"""() => ({{
    text: ({VALUE})('source'),
    kind: document.querySelector('#kind input:checked')?.value,
    layer: document.querySelector('#layer input[type=number]')?.value,
    head: document.querySelector('#head input:checked')?.value,
    present: document.querySelector('#present input')?.checked,
    colour: document.querySelector('#colour input:checked')?.value,
    title: ({TITLE})('detail'),
    tab: document.querySelector('[role=tab][aria-selected=true]')?.dataset.tabId,
}})"""


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A page at 1280×720 that fails its test on a console error, a page error, a dialog or a request off loopback."""
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT}, accept_downloads=True,
                                  permissions=["clipboard-read", "clipboard-write"])
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    watch = Watch(page)
    yield page
    context.close()
    assert watch.errors == [], watch.errors
    assert watch.outside == [], watch.outside
    assert watch.dialogs == [], watch.dialogs


def open_view(page: Page, url: str, title_part: str = "") -> dict:
    """Open ``url`` (no click) and wait until its view is drawn; the view as the page shows it."""
    page.goto(url)
    for plot_id in ("overview", "detail"):
        page.wait_for_function(HAS_HEATMAP, arg=plot_id)
    page.wait_for_function(f"(part) => !!({VALUE})('translation') && ({TITLE})('detail').includes(part)",
                           arg=title_part)
    return page.evaluate(STATE)


def link(server: str, **params) -> str:
    return f"{server}?{urlencode(params)}"


def url_params(page: Page) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query, keep_blank_values=True).items()}


def wait_url(page: Page, **expected) -> None:
    """Until the page's URL holds ``expected`` (the page script writes it as the view changes)."""
    page.wait_for_function(
        "(want) => { const q = new URLSearchParams(location.search);"
        " return Object.entries(want).every(([k, v]) => q.get(k) === v); }", arg=expected)


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(exist_ok=True)
    page.evaluate("() => document.fonts.ready.then(() => new Promise(r => requestAnimationFrame(() => "
                  "requestAnimationFrame(r))))")
    page.screenshot(path=str(SHOTS / f"classroom-{name}.png"))  # the first screen only, as a projector shows it


# ------------------------------------------------------------------------------------------- 1. links
def test_a_link_opens_exactly_its_view_with_no_click(page: Page, server: str):
    text = "A man is picking up a red ball."
    state = open_view(page, link(server, text=text, kind="decoder_self", layer=4, head=6, colour="row"),
                      "layer 4 · head 6")
    assert state == {"text": text, "kind": "decoder_self", "layer": "4", "head": "6", "present": False,
                     "colour": "row", "title": "Decoder self-attention (masked) · layer 4 · head 6", "tab": "attention"}
    # the figures are this sentence's: the overview's rows are its German tokens
    assert page.evaluate(f"() => ({GD})('overview').data[0].y.some(l => /: Ball$/.test(l))")
    wait_url(page, text=text, kind="decoder_self", layer="4", head="6", colour="row", tab="attention")

    # a link to another tab opens that tab, with the Attention tab's view behind it (a new page: navigating this
    # one away would abort its open connections, which the browser reports as console errors)
    other = page.context.new_page()
    watch = Watch(other)
    open_view(other, link(server, text=text, kind="cross", layer=2, head=0, tab="scaling"), "layer 2 · mean of 8")
    other.wait_for_function("() => document.querySelector('[role=tab][aria-selected=true]')?.dataset.tabId"
                            " === 'scaling'")
    assert watch.errors == [] and watch.outside == []


def test_the_url_follows_the_view_and_copy_link_copies_it(page: Page, server: str):
    open_view(page, server)
    page.locator("#kind label", has_text="Encoder self-attention").click()
    number = page.locator("#layer input[type=number]")
    number.fill("2")
    number.press("Enter")
    page.locator("#head label", has_text="3").first.click()
    page.locator("#colour label", has_text="per row").click()
    page.locator("#present input").check()
    page.wait_for_function(f"() => ({TITLE})('detail') === 'Encoder self-attention · layer 2 · head 3'")
    wait_url(page, kind="encoder_self", layer="2", head="3", colour="row", present="1", tab="attention")

    page.click("#copy-link")
    page.wait_for_function("() => document.querySelector('#copy-link-note')?.textContent === 'Link copied.'")
    copied = page.evaluate("() => navigator.clipboard.readText()")
    assert copied == page.url
    assert url_params(page)["text"] == "Two dogs are running through the snow."

    other = page.context.new_page()  # the copied link, opened afresh, is the same view
    watch = Watch(other)
    state = open_view(other, copied, "layer 2 · head 3")
    assert state == {"text": "Two dogs are running through the snow.", "kind": "encoder_self", "layer": "2",
                     "head": "3", "present": True, "colour": "row",
                     "title": "Encoder self-attention · layer 2 · head 3", "tab": "attention"}
    assert watch.errors == [] and watch.outside == []


@pytest.mark.parametrize("payload", ["<script>window.__xss=1</script><b>bold</b>",
                                     "javascript:window.__xss=2//<img src=x onerror=window.__xss=3>"])
def test_hostile_values_in_every_parameter_fall_back_with_a_notice(page: Page, server: str, payload: str):
    params = {name: payload for name in ("text", "target", "kind", "layer", "head", "tab", "present", "colour")}
    open_view(page, link(server, **params))
    state = page.evaluate(STATE)
    # the sentence boxes hold the payload as plain text; everything else is back at its default
    assert state["text"] == payload and page.evaluate(f"() => ({VALUE})('target')") == payload
    assert (state["kind"], state["present"], state["colour"], state["tab"]) == ("cross", False, "fixed", "attention")
    guide = page.inner_text("#guide")
    for name in ("kind", "layer", "head", "tab", "present", "colour"):
        assert f"The link's {name} " in guide
    assert "script" not in guide and "javascript" not in guide and "img" not in guide
    assert_not_injected(page)
    # the URL is rewritten with the values in use: opening it again is quiet
    wait_url(page, kind="cross", colour="fixed", tab="attention")
    assert url_params(page)["layer"] in {str(n) for n in range(1, 7)}


# ---------------------------------------------------------------------------------- 2. the projector
BOXES = """() => {
    const box = (s) => { const e = document.querySelector(s); if (!e) return null;
                         const b = e.getBoundingClientRect(); return {top: b.top, bottom: b.bottom, left: b.left,
                                                                      right: b.right}; };
    return {source: box('#source textarea'), translation: box('#translation textarea, #translation input'),
            overview: box('#overview .hm image'), detail: box('#detail .hm image'),
            viewport: [innerWidth, innerHeight], scrollY: scrollY};
}"""


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_first_screen_shows_sentence_translation_overview_and_close_up(page: Page, server: str, theme: str):
    state = open_view(page, server + ("?__theme=dark" if theme == "dark" else ""))
    boxes = page.evaluate(BOXES)
    assert boxes["viewport"] == [WIDTH, HEIGHT] and boxes["scrollY"] == 0
    for name in ("source", "translation", "overview", "detail"):
        box = boxes[name]
        assert 0 <= box["top"] < box["bottom"] <= HEIGHT and 0 <= box["left"] < box["right"] <= WIDTH, (name, box)
    # overview and close-up side by side
    assert boxes["overview"]["right"] <= boxes["detail"]["left"]
    assert boxes["overview"]["top"] < boxes["detail"]["bottom"] and boxes["detail"]["top"] < boxes["overview"]["bottom"]
    # the sharp default (a cross-attention head chosen by a statistic), framed in the overview
    assert state["kind"] == "cross" and state["head"] != "0"
    frame = page.evaluate(f"""() => {{
        const gd = ({GD})('overview'), t = gd.data[0], s = gd.layout.shapes.find(s => s.name === 'chosen-tile');
        const rows = t.y.map((l, i) => [l, i]).filter(([l]) => l.startsWith('L{state["layer"]} query '));
        const cols = t.x.map((l, i) => [l, i]).filter(([l]) => l.startsWith('H{state["head"]} key '));
        return {{frame: s && [s.x0, s.x1, s.y0, s.y1],
                 tile: [cols[0][1] - 0.5, cols.at(-1)[1] + 0.5, rows[0][1] - 0.5, rows.at(-1)[1] + 0.5]}};
    }}""")
    assert frame["frame"] == frame["tile"]
    shot(page, f"1280x720-{theme}")


CONTRAST = """() => {
    const rgb = (s) => (s.match(/[\\d.]+/g) || []).map(Number);
    const lum = (c) => { const v = c.slice(0, 3).map((x) => { x /= 255;
        return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); });
        return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; };
    const background = (el) => {  // the first opaque background behind the (transparent) figure
        for (let e = el.closest('.js-plotly-plot').parentElement; e; e = e.parentElement) {
            const c = rgb(getComputedStyle(e).backgroundColor);
            if (c.length === 3 || (c.length === 4 && c[3] > 0.9)) return c;
        }
        return [255, 255, 255];
    };
    const selector = ['.xtick text', '.ytick text', '.gtitle', '.xtitle', '.ytitle', '.colorbar text']
        .flatMap((s) => ['#overview ' + s, '#detail ' + s]).join(', ');
    return [...document.querySelectorAll(selector)].filter((t) => t.textContent.trim()).map((t) => {
        const style = getComputedStyle(t), a = lum(rgb(style.fill)), b = lum(background(t));
        return {text: t.textContent, plot: t.closest('[id=overview], [id=detail]').id, px: parseFloat(style.fontSize),
                ratio: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)};
    });
}"""


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_presentation_mode_text_is_16px_or_more_with_contrast_above_4_5(page: Page, server: str, theme: str):
    if theme == "light":  # the switch on the page
        open_view(page, server)
        small = [t for t in page.evaluate(CONTRAST) if t["px"] < 16]
        assert small, "the normal view keeps its smaller text"
        page.locator("#present input").check()
        page.wait_for_function(f"() => ({GD})('detail').layout.title.font.size === {projector.TITLE_PX}"
                               f" && ({GD})('overview').layout.xaxis.tickfont.size === {projector.PRESENT_PX}")
        wait_url(page, present="1")
    else:  # present=1 in a link
        open_view(page, server + "?present=1&__theme=dark")
        assert page.evaluate("() => document.body.classList.contains('dark')")
    page.wait_for_function("() => document.body.classList.contains('attn-present')")
    texts = page.evaluate(CONTRAST)
    plots = {t["plot"] for t in texts}
    assert plots == {"overview", "detail"} and len(texts) > 30
    for t in texts:
        assert t["px"] >= 16 and t["ratio"] >= 4.5, t
    assert page.evaluate(f"() => ({GD})('detail').layout.title.font.size") == projector.TITLE_PX
    # the weights printed in the close-up's cells (a small map) are the drawn weights
    cells = page.evaluate(f"() => {{ const t = ({GD})('detail').data[0]; return [t.text, ({GD})('detail')"
                          ".calcdata[0][0].z]; }")
    text, z = cells
    for line, weights in zip(text, z):
        assert line == [projector.cell_text(w) for w in weights]
    shot(page, f"present-{theme}")


# ------------------------------------------------------------------------------------------- 4. examples
def test_an_example_opens_its_view_and_its_claim_is_on_screen(page: Page, server: str):
    open_view(page, server)
    index = next(i for i, e in enumerate(examples.EXAMPLES) if e.topic == "Separable verb")
    example = examples.EXAMPLES[index]
    page.click("#example input")
    page.get_by_role("option", name=example.label).click()
    which = f"layer {example.layer} · head {example.head}"
    page.wait_for_function(f"(w) => ({TITLE})('detail').endsWith(w) && ({VALUE})('source') === '{example.sentence}'"
                           f" && ({GUIDE_SHOWN})()", arg=which)
    state = page.evaluate(STATE)
    assert (state["kind"], state["layer"], state["head"]) == (example.kind, str(example.layer), str(example.head))
    assert page.inner_text("#guide").strip() == example.caption
    # the claim, read off the drawn close-up: in the row fed example.row, the largest weight is on example.column
    row, column = page.evaluate(f"""([row, column]) => {{
        const gd = ({GD})('detail'), z = gd.calcdata[0][0].z;
        const ys = gd.layout.yaxis.ticktext, xs = gd.layout.xaxis.ticktext;
        const i = ys.indexOf(row), w = Array.from(z[i]);
        return [xs[w.indexOf(Math.max(...w))], column];
    }}""", [example.row, example.column])
    assert row == column
    # the menu's own sentence run clears the caption
    page.click("#run")
    page.wait_for_function(f"() => !({GUIDE_SHOWN})()")


# ------------------------------------------------------------------------------------------- 6. keyboard
def test_the_keyboard_alone_reaches_every_control_and_moves_the_close_up(page: Page, server: str):
    open_view(page, server)
    page.locator("#attention-tab .how-to-read button, #attention-tab .how-to-read .label-wrap").first.wait_for()
    # every visible control of the Attention tab (a radio group counts as one), then reached with Tab only
    key = """(e) => {
        const box = e.closest('[id]'), field = e.matches('input, textarea, select');
        const label = e.getAttribute('aria-label') || (field ? '' : e.textContent.trim());
        return e.type === 'radio' ? `${box.id} radio` : `${box.id} ${e.tagName} ${e.type || ''} ${label}`;
    }"""
    wanted = set(page.evaluate(f"""() => {{
        const tab = document.getElementById('attention-tab');
        const controls = [...tab.querySelectorAll('button, input, textarea, select, [tabindex]')].filter((e) =>
            e.offsetParent !== null && !e.disabled && e.tabIndex >= 0 && !e.closest('.modebar'));
        return [...controls, document.getElementById('detail')].map({key});
    }}"""))
    assert {"source TEXTAREA textarea ", "run BUTTON submit Translate and show attention", "kind radio", "head radio",
            "colour radio", "present INPUT checkbox ", "copy-link BUTTON submit Copy link to this view"} <= wanted
    page.evaluate("() => document.activeElement.blur()")
    reached = set()
    for _ in range(150):
        page.keyboard.press("Tab")
        reached.add(page.evaluate(f"() => document.activeElement && ({key})(document.activeElement)"))
        if reached >= wanted:
            break
    assert wanted - reached == set()

    # the close-up, focused by Tab (from the control before it), and the arrow keys
    page.focus("#colour input:checked")
    for _ in range(40):
        if page.evaluate("() => document.activeElement.id") == "detail":
            break
        page.keyboard.press("Tab")
    start = page.evaluate(STATE)
    layer, head = int(start["layer"]), int(start["head"])
    up = layer > 1  # ↑ is the layer before, ↓ the one after
    layer += -1 if up else 1
    head = head + 1 if head < 8 else head - 1
    page.keyboard.press("ArrowRight" if head > int(start["head"]) else "ArrowLeft")
    page.keyboard.press("ArrowUp" if up else "ArrowDown")
    page.wait_for_function(f"() => ({TITLE})('detail').endsWith('layer {layer} · head {head}')")
    for _ in range(9):  # past the mean: it stops there
        page.keyboard.press("ArrowLeft")
    page.wait_for_function(f"() => ({TITLE})('detail').endsWith('layer {layer} · mean of 8 heads')")
    for _ in range(7):
        page.keyboard.press("ArrowDown")
    page.wait_for_function(f"() => ({TITLE})('detail').endsWith('layer 6 · mean of 8 heads')")
    assert page.evaluate("() => document.activeElement.id") == "detail"
    wait_url(page, layer="6", head="0")


def test_how_to_read_this_is_folded_on_the_attention_tab(page: Page, server: str):
    open_view(page, server)
    note = page.locator("#attention-tab .how-to-read")
    assert "Rows attend to columns" not in note.inner_text()
    note.get_by_text("How to read this").click()
    note.get_by_text("Rows attend to columns").wait_for()
    assert "predicts token" in note.inner_text()

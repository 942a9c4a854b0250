"""Made for the classroom, in a real browser at a projector's 1280×720: a link opens its view with no
click, the URL follows the view and "Copy link" copies it, hostile links run nothing, the first screen holds
sentence, translation, overview and close-up with the chosen tile framed, presentation mode's text is large
and of high contrast (measured in the page, light and dark), examples open their view, and the keyboard alone
reaches every control and moves the close-up. The app and Chromium are tests/conftest.py's (one for the run); the
tests that open the same URL take turns on one kept page (``kept``), each from the view the one before left.
Screenshots are not tests: ``python -m bench.screenshots``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
from helpers.browser import KeptPages, assert_not_injected, goto, is_dark, wait_idle, watched_page
from helpers.layout import assert_layout_without_overlaps
from helpers.scripts import GD, HAS_HEATMAP, TITLE, VALUE
from playwright.sync_api import Browser, Page

from viz.views.attention import examples, projector

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
    """A page at a projector's 1280×720 (every page has a clipboard), checked like every browser test's page."""
    yield from watched_page(browser, WIDTH, HEIGHT)


def open_view(page: Page, url: str, title_part: str = "") -> dict:
    """Open ``url`` (no click) and wait until its view is drawn; the view as the page shows it."""
    goto(page, url)
    for plot_id in ("overview", "detail"):
        page.wait_for_function(HAS_HEATMAP, arg=plot_id)
    page.wait_for_function(f"(part) => !!({VALUE})('translation') && ({TITLE})('detail').includes(part)",
                           arg=title_part)
    return page.evaluate(STATE)


def opened(kept: KeptPages, url: str, title_part: str = "") -> tuple[Page, dict]:
    """The module's kept page at 1280×720 opened on ``url`` (``open_view``, on a page load only: an earlier test may
    have changed the view since), and the view it shows now."""
    page = kept.open(url, WIDTH, HEIGHT, load=lambda p, u: open_view(p, u, title_part))
    return page, page.evaluate(STATE)


def link(server: str, **params) -> str:
    return f"{server}?{urlencode(params)}"


def url_params(url: str) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(url).query, keep_blank_values=True).items()}


def wait_url(page: Page, **expected) -> None:
    """Until the page's URL holds ``expected`` (the page script writes it as the view changes)."""
    page.wait_for_function(
        "(want) => { const q = new URLSearchParams(location.search);"
        " return Object.entries(want).every(([k, v]) => q.get(k) === v); }", arg=expected)


# ------------------------------------------------------------------------------------------------- measured in the page
BOXES = """() => {
    const box = (s) => { const e = document.querySelector(s); if (!e) return null;
                         const b = e.getBoundingClientRect(); return {top: b.top, bottom: b.bottom, left: b.left,
                                                                      right: b.right}; };
    return {source: box('#source textarea'), translation: box('#translation textarea, #translation input'),
            overview: box('#overview .hm image'), detail: box('#detail .hm image'),
            viewport: [innerWidth, innerHeight], scrollY: scrollY};
}"""
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


def assert_presented(page: Page) -> None:
    """Presentation mode: every label of overview and close-up ≥ 16 px with contrast ≥ 4.5
    against what is behind it (the theme's colours, measured), the close-up's title at its size, and the weights
    printed in the close-up's cells the drawn ones."""
    page.wait_for_function("() => document.body.classList.contains('attn-present')")
    texts = page.evaluate(CONTRAST)
    plots = {t["plot"] for t in texts}
    assert plots == {"overview", "detail"} and len(texts) > 30
    for t in texts:
        assert t["px"] >= 16 and t["ratio"] >= 4.5, t
    assert page.evaluate(f"() => ({GD})('detail').layout.title.font.size") == projector.TITLE_PX
    text, z = page.evaluate(f"() => {{ const t = ({GD})('detail').data[0]; return [t.text, ({GD})('detail')"
                            ".calcdata[0][0].z]; }")
    assert text and len(text) == len(z), "a small map prints its weights in its cells"
    for line, weights in zip(text, z):
        assert line == [projector.cell_text(w) for w in weights]


# --------------------------------------------------------------------------------------------- links, presentation mode
TEXT = "A boy throws a red ball."  # 9 tokens: a small map, its weights printed in presentation mode


def test_a_link_opens_its_view_with_no_click(kept: KeptPages, server: str):
    page, state = opened(kept, link(server, text=TEXT, kind="decoder_self", layer=4, head=6, colour="row"),
                      "layer 4 · head 6")
    assert state == {"text": TEXT, "kind": "decoder_self", "layer": "4", "head": "6", "present": False,
                     "colour": "row", "title": "Decoder self-attention (masked) · layer 4 · head 6", "tab": "attention"}
    # the figures are this sentence's: the overview's rows are its German tokens
    assert page.evaluate(f"() => ({GD})('overview').data[0].y.some(l => /: Ball$/.test(l))")
    wait_url(page, text=TEXT, kind="decoder_self", layer="4", head="6", colour="row", tab="attention")
    small = [t for t in page.evaluate(CONTRAST) if t["px"] < 16]
    assert small, "the normal view keeps its smaller text"


def change_every_control(page: Page) -> None:
    """Every control of the view changed by hand (presentation mode by its switch), until the view shows it."""
    page.locator("#kind label", has_text="Encoder self-attention").click()
    number = page.locator("#layer input[type=number]")
    number.fill("2")
    number.press("Enter")
    page.locator("#head label", has_text="mean").click()
    page.locator("#colour label", has_text="0 – 1").click()
    page.locator("#present input").check()
    page.wait_for_function(f"() => ({TITLE})('detail') === 'Encoder self-attention · layer 2 · mean of 8 heads'"
                           f" && ({GD})('detail').layout.title.font.size === {projector.TITLE_PX}"
                           f" && ({GD})('overview').layout.xaxis.tickfont.size === {projector.PRESENT_PX}")


def test_the_url_follows_every_control_and_copy_link_copies_it(kept: KeptPages, server: str):
    page, _ = opened(kept, link(server, text=TEXT, kind="decoder_self", layer=4, head=6, colour="row"),
                     "layer 4 · head 6")
    change_every_control(page)
    wait_url(page, text=TEXT, kind="encoder_self", layer="2", head="0", colour="fixed", present="1", tab="attention")
    page.click("#copy-link")
    page.wait_for_function("() => document.querySelector('#copy-link-note')?.textContent === 'Link copied.'")
    copied = page.evaluate("() => navigator.clipboard.readText()")
    assert copied == page.url and url_params(copied)["tab"] == "attention"


def test_presentation_mode_makes_the_maps_text_large_and_of_high_contrast(kept: KeptPages, server: str):
    """Light here; dark in the next test, on a link's view."""
    page, _ = opened(kept, link(server, text=TEXT, kind="decoder_self", layer=4, head=6, colour="row"),
                     "layer 4 · head 6")
    change_every_control(page)
    assert_presented(page)


def test_a_link_naming_another_tab_opens_it_with_the_same_view_behind_it(page: Page, server: str):
    """The link "Copy link" gives for the view above, opened afresh with another tab (and the dark theme) named
    in it: that tab, with the same view behind it — the Attention tab, opened, shows it (its figures are drawn as it
    shows, not while hidden: draw.js); presentation mode measured in dark."""
    params = {"text": TEXT, "kind": "encoder_self", "layer": 2, "head": 0, "colour": "fixed", "present": 1,
              "tab": "scaling", "__theme": "dark"}
    goto(page, link(server, **params))
    page.wait_for_function("() => document.querySelector('[role=tab][aria-selected=true]')?.dataset.tabId"
                           " === 'scaling'")
    assert is_dark(page)
    page.get_by_role("tab", name="Attention").click()
    for plot_id in ("overview", "detail"):
        page.wait_for_function(HAS_HEATMAP, arg=plot_id)
    page.wait_for_function(f"() => ({TITLE})('detail').includes('layer 2 · mean of 8')")
    assert page.evaluate(STATE) == {
        "text": TEXT, "kind": "encoder_self", "layer": "2", "head": "0", "present": True, "colour": "fixed",
        "title": "Encoder self-attention · layer 2 · mean of 8 heads", "tab": "attention"}
    page.locator("#overview .hm image").wait_for(state="visible")
    assert_presented(page)


# The two payloads share one page: every parameter gets one of them, each free-text box one, each payload three
# of the six choices (all six fall back the same way).
HOSTILE = {"text": "<script>window.__xss=1</script><b>bold</b>",
           "target": "javascript:window.__xss=2//<img src=x onerror=window.__xss=3>"}
HOSTILE_PARAMS = {"kind": "text", "layer": "target", "head": "text", "tab": "target", "present": "text",
                  "colour": "target"}


def test_hostile_values_in_every_parameter_fall_back_with_a_notice(page: Page, server: str):
    params = {**HOSTILE, **{name: HOSTILE[payload] for name, payload in HOSTILE_PARAMS.items()}}
    open_view(page, link(server, **params))
    state = page.evaluate(STATE)
    # the sentence boxes hold the payloads as plain text; everything else is back at its default
    assert state["text"] == HOSTILE["text"] and page.evaluate(f"() => ({VALUE})('target')") == HOSTILE["target"]
    assert (state["kind"], state["present"], state["colour"], state["tab"]) == ("cross", False, "fixed", "attention")
    guide = page.inner_text("#guide")
    for name in HOSTILE_PARAMS:
        assert f"The link's {name} " in guide, guide
    assert "script" not in guide and "javascript" not in guide and "img" not in guide
    assert_not_injected(page)
    # the URL is rewritten with the values in use: opening it again is quiet
    wait_url(page, kind="cross", colour="fixed", tab="attention")
    assert url_params(page.url)["layer"] in {str(n) for n in range(1, 7)}


# -------------------------------------------------------------------------------------------------------- the projector
def assert_first_screen(page: Page, state: dict) -> None:
    """Sentence, translation, overview and close-up on the first screen at 1280×720, overview and close-up side
    by side, and the sharp default (a cross-attention head chosen by a statistic) framed in the overview."""
    boxes = page.evaluate(BOXES)
    assert boxes["viewport"] == [WIDTH, HEIGHT] and boxes["scrollY"] == 0
    for name in ("source", "translation", "overview", "detail"):
        box = boxes[name]
        assert 0 <= box["top"] < box["bottom"] <= HEIGHT and 0 <= box["left"] < box["right"] <= WIDTH, (name, box)
    assert boxes["overview"]["right"] <= boxes["detail"]["left"]
    assert boxes["overview"]["top"] < boxes["detail"]["bottom"] and boxes["detail"]["top"] < boxes["overview"]["bottom"]
    assert state["kind"] == "cross" and state["head"] != "0"
    framed = f"""() => {{
        const gd = ({GD})('overview'), t = gd.data[0];
        const s = (gd.layout.shapes || []).find(s => s.name === 'chosen-tile');
        const rows = t.y.map((l, i) => [l, i]).filter(([l]) => l.startsWith('L{state["layer"]} query '));
        const cols = t.x.map((l, i) => [l, i]).filter(([l]) => l.startsWith('H{state["head"]} key '));
        return {{frame: s ? [s.x0, s.x1, s.y0, s.y1] : null,
                 tile: [cols[0][1] - 0.5, cols.at(-1)[1] + 0.5, rows[0][1] - 0.5, rows.at(-1)[1] + 0.5]}};
    }}"""
    # the page script frames the tile on its next round (every 300 ms), after the overview is drawn
    page.wait_for_function(f"() => ({framed})().frame !== null")
    frame = page.evaluate(framed)
    assert frame["frame"] == frame["tile"]


# --------------------------------------------------------------------------------------------------- examples, keyboard
KEY = """(e) => {
    const box = e.closest('[id]') || {id: '(no id)'}, field = e.matches('input, textarea, select');
    const label = e.getAttribute('aria-label') || (field ? '' : e.textContent.trim());
    return e.type === 'radio' ? `${box.id} radio` : `${box.id} ${e.tagName} ${e.type || ''} ${label}`;
}"""


def assert_tab_reaches_every_control(page: Page) -> None:
    """Every visible control of the Attention tab (a radio group counts as one) is reached with Tab only."""
    page.locator("#attention-tab .how-to-read button, #attention-tab .how-to-read .label-wrap").first.wait_for()
    wanted = set(page.evaluate(f"""() => {{
        const tab = document.getElementById('attention-tab');
        const controls = [...tab.querySelectorAll('button, input, textarea, select, [tabindex]')].filter((e) =>
            e.offsetParent !== null && !e.disabled && e.tabIndex >= 0 && !e.closest('.modebar'));
        return controls.map({KEY});  // the overview and the close-up among them: one stop each (a11y.js)
    }}"""))
    # (the row of actions is one toolbar: Run its stop, the arrow keys reach the link and presentation mode)
    assert {"source TEXTAREA textarea ", "run BUTTON submit Translate and show attention", "kind radio", "head radio",
            "colour radio"} <= wanted
    page.evaluate("() => document.activeElement.blur()")
    reached = set()
    for _ in range(150):
        page.keyboard.press("Tab")
        reached.add(page.evaluate(f"() => document.activeElement && ({KEY})(document.activeElement)"))
        if reached >= wanted:
            break
    assert wanted - reached == set()


def assert_arrow_keys_move_between_heads(page: Page) -> None:
    """The head selector is one Tab stop whose arrow keys move the head (the close-up follows, as a click does); the
    overview and the close-up are one Tab stop each, after the choices (their own keys: tests/test_browser_a11y.py)."""
    start = page.evaluate(STATE)
    head = int(start["head"])
    page.focus("#head input:checked")
    page.keyboard.press("ArrowRight" if head < 8 else "ArrowLeft")
    head = head + 1 if head < 8 else head - 1
    which = "mean of 8 heads" if head == 0 else f"head {head}"
    page.wait_for_function(f"() => ({TITLE})('detail').endsWith('layer {start['layer']} · {which}')")
    page.keyboard.press("Tab")  # the next group: one stop for the whole head selector
    assert page.evaluate("() => document.activeElement.closest('[id]').id") == "colour"
    grid = ("() => document.activeElement.classList.contains('attn-grid')"
            " && !!document.activeElement.closest('#overview')")
    for _ in range(15):  # the figures come before the choices in the Tab order (drawn right of them)
        page.keyboard.press("Shift+Tab")
        if page.evaluate(grid):
            break
    assert page.evaluate(grid), page.evaluate("() => document.activeElement.outerHTML.slice(0, 200)")
    wait_url(page, layer=start["layer"], head=str(head))


def assert_a_choice_made_while_the_close_up_is_drawn_is_drawn_next(page: Page) -> None:
    """Two heads chosen one right after the other (the second while the first one's close-up is computed): the
    close-up ends on the second (drawn once the first one's answer is in), and stays there."""
    wait_idle(page)
    start = page.evaluate(STATE)
    first, second = [h for h in ("2", "5", "7") if h != start["head"]][:2]
    pick = "(head) => document.querySelector(`#head input[value='${head}']`).click()"
    with page.expect_response(lambda r: "/queue/join" in r.url):  # the first one's answer now on its way
        page.evaluate(pick, first)
    page.evaluate(pick, second)
    which = f"layer {start['layer']} · head {second}"
    page.wait_for_function(f"(w) => ({TITLE})('detail').endsWith(w)", arg=which)
    wait_idle(page)
    assert page.evaluate(TITLE, "detail").endswith(which) and page.evaluate(STATE)["head"] == second


def assert_an_example_opens_its_view(page: Page) -> None:
    """An example runs the model on its sentence (a new translation, its tokens in the overview) and opens its view
    with its caption, and its claim holds on the drawn close-up; the menu's own sentence run clears the caption."""
    example = next(e for e in examples.EXAMPLES if e.topic == "Separable verb")
    before = page.evaluate(f"() => ({VALUE})('translation')")
    assert example.sentence != page.evaluate(f"() => ({VALUE})('source')")
    page.click("#example input")
    page.get_by_role("option", name=example.label).click()
    which = f"layer {example.layer} · head {example.head}"
    page.wait_for_function(f"(w) => ({TITLE})('detail').endsWith(w) && ({VALUE})('source') === '{example.sentence}'"
                           f" && ({GUIDE_SHOWN})()", arg=which)
    page.wait_for_function(f"(old) => ({VALUE})('translation') !== old", arg=before)
    words = re.findall(r"[A-Za-z]{4,}", example.sentence)  # (a word may be split into pieces: "putt", "ing")
    assert page.evaluate(f"(ws) => {{ const t = ({GD})('overview').data[0]; return t.x.concat(t.y)"
                         ".some(l => ws.some(w => l.includes(w))); }", words), words
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
    page.click("#run")
    page.wait_for_function(f"() => !({GUIDE_SHOWN})()")
    wait_idle(page)  # its views drawn again (the next test takes turns on this page)


def test_at_1280x720_the_first_screen_holds_sentence_translation_and_both_maps(kept: KeptPages, server: str):
    assert_first_screen(*opened(kept, server))  # (light; presentation mode is measured in both themes)


def test_tab_alone_reaches_every_control(kept: KeptPages, server: str):
    page, _ = opened(kept, server)
    assert_tab_reaches_every_control(page)


def test_an_example_opens_its_view_and_its_claim_holds(kept: KeptPages, server: str):
    page, _ = opened(kept, server)
    assert_an_example_opens_its_view(page)


def test_how_to_read_this_unfolds_on_the_attention_tab(kept: KeptPages, server: str):
    page, _ = opened(kept, server)
    note = page.locator("#attention-tab .how-to-read")  # "How to read this" is folded on the Attention tab
    assert "Rows attend to columns" not in note.inner_text()
    note.get_by_text("How to read this").click()
    note.get_by_text("Rows attend to columns").wait_for()
    assert "predicts token" in note.inner_text()


def test_a_choice_made_while_the_close_up_is_drawn_is_drawn_next(kept: KeptPages, server: str):
    assert_a_choice_made_while_the_close_up_is_drawn_is_drawn_next(opened(kept, server)[0])


def test_arrow_keys_move_between_heads(kept: KeptPages, server: str):
    page, _ = opened(kept, server)
    assert_arrow_keys_move_between_heads(page)


def test_a_layout_without_overlaps_at_a_projectors_size(kept: KeptPages, server: str):
    page, _ = opened(kept, server)
    assert_layout_without_overlaps(page, WIDTH)

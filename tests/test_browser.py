"""The app in a real browser: Debian's Chromium driven by Playwright (never `playwright install`).

One `python app.py` on a free loopback port and one Chromium for the whole run (tests/conftest.py: `server`,
`browser`); a fresh page per test. Every test also fails on a console error, an uncaught page error, a JavaScript
dialog, or any request that leaves loopback (the page must work offline). A page load costs seconds on a busy
2-core machine: a test checks everything one view offers before it changes the view. Screenshots are not tests:
``python -m bench.screenshots``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from browser_util import ROOT, is_loopback
from playwright.sync_api import Browser, Page

SHOTS = ROOT / "screenshots"
TIMEOUT_MS = 90_000  # generous: the machine may be busy training
PAYLOAD = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script><b>bold</b>'

# JavaScript helpers (run in the page)
GD = "(id) => document.querySelector(`#${id} .js-plotly-plot`)"
HAS_HEATMAP = f"(id) => {{ const gd = ({GD})(id); return !!(gd && gd.data?.some(t => t.type === 'heatmap')); }}"
TITLE = f"(id) => {{ const gd = ({GD})(id); return gd && gd.layout && gd.layout.title ? gd.layout.title.text : ''; }}"
VALUE = "(id) => { const e = document.querySelector(`#${id} textarea, #${id} input`); return e ? e.value : null; }"


class Watch:
    """What a page did that it never should: console errors, page errors, dialogs, requests off loopback."""

    def __init__(self, page: Page):
        self.errors: list[str] = []
        self.outside: list[str] = []
        self.dialogs: list[str] = []
        page.on("console", lambda m: m.type == "error" and self.errors.append(f"console: {m.text}"))
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        page.on("request", lambda r: None if is_loopback(r.url) else self.outside.append(r.url))
        page.on("dialog", self._dialog)

    def _dialog(self, dialog) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()


def watched_page(browser: Browser, width: int, height: int, **options) -> Iterator[Page]:
    """A fresh page at ``width``×``height`` for a fixture to yield from; on teardown it must have shown no console
    or page error, sent no request off loopback and opened no dialog (``Watch``). ``options``: new_context's."""
    context = browser.new_context(viewport={"width": width, "height": height}, **options)
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    watch = Watch(page)
    yield page
    context.close()
    assert watch.errors == [] and watch.outside == [] and watch.dialogs == [], vars(watch)


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    yield from watched_page(browser, 1400, 1000, accept_downloads=True)


# ---------------------------------------------------------------------------------------------- helpers
# This module's tests start from encoder self-attention, layer 1, mean of heads (a bare URL opens the
# sharpest head: tests/test_browser_classroom.py)
FIRST_VIEW = "?kind=encoder_self&layer=1&head=0"


def open_app(page: Page, url: str) -> None:
    """Load the page and wait for the example sentence to be drawn (demo.load runs the model once)."""
    page.goto(url)
    for plot_id in ("overview", "detail"):
        page.wait_for_function(HAS_HEATMAP, arg=plot_id)
    page.wait_for_function(f"() => !!({VALUE})('translation')")


def value(page: Page, elem_id: str) -> str:
    return page.evaluate(VALUE, elem_id)


def title(page: Page, plot_id: str) -> str:
    return page.evaluate(TITLE, plot_id)


def overview_info(page: Page) -> dict:
    """Layer and head tick labels and the token rows/columns of the overview heatmap as plotly holds them."""
    return page.evaluate(
        f"""() => {{
            const gd = ({GD})('overview'), t = gd.data.find(t => t.type === 'heatmap');
            return {{
                layers: Array.from(gd.layout.yaxis.ticktext), heads: Array.from(gd.layout.xaxis.ticktext),
                x: Array.from(t.x), y: Array.from(t.y),
            }};
        }}"""
    )


def source_tokens(page: Page) -> int:
    """The number of source tokens the status line reports."""
    status = page.inner_text("#status")
    match = re.search(r"(\d+) source tokens", status)
    assert match, status
    return int(match.group(1))


def tick_labels(page: Page, plot_id: str) -> list[str]:
    """The tick labels as the browser drew them (SVG text, entities decoded)."""
    selector = f"#{plot_id} .xtick text, #{plot_id} .ytick text"
    return page.eval_on_selector_all(selector, "els => els.map(e => e.textContent)")


def select_tab(page: Page, name: str) -> None:
    page.get_by_role("tab", name=name).click()
    page.wait_for_function(
        "(name) => [...document.querySelectorAll('[role=tab]')].some(t => t.textContent.trim() === name"
        " && t.getAttribute('aria-selected') === 'true')",
        arg=name,
    )


def assert_not_injected(page: Page) -> None:
    """The payload stayed text: nothing ran, and no element of it reached the DOM."""
    found = page.evaluate(
        """() => ({
            xss: typeof window.__xss,
            img: document.querySelectorAll('img[src="x"], img[onerror]').length,
            script: [...document.scripts].filter(s => s.textContent.includes('__xss')).length,
            bold: [...document.querySelectorAll('b')].filter(b => b.textContent === 'bold').length,
        })"""
    )
    assert found == {"xss": "undefined", "img": 0, "script": 0, "bold": 0}, found


# ------------------------------------------------------------------------------------------------ tests
# Two page loads: the example as it opens (and what can be done without changing the sentence), then new sentences
# (dark mode) and every other tab.
def test_opens_with_the_example_drawn_downloads_figures_and_exports_and_a_slider_or_tile_click_changes_the_detail(
        page: Page, server: str):
    open_app(page, server + FIRST_VIEW)
    assert value(page, "source") == "Two dogs are running through the snow."
    assert value(page, "translation").strip()
    assert "Model on" in page.inner_text("#status")
    info = overview_info(page)
    assert info["layers"] == [f"L{l_}" for l_ in range(1, 7)] and info["heads"] == [f"H{h}" for h in range(1, 9)]
    assert title(page, "detail").startswith("Encoder self-attention · layer 1")
    # drawn, not just data: the SVG heatmap images exist
    assert page.locator("#overview .js-plotly-plot .hm image").count() >= 1
    assert page.locator("#detail .js-plotly-plot .hm image").count() >= 1

    # The Export buttons save the drawn figures client-side through plotly (no server round trip)...
    page.get_by_role("button", name="Export").click()
    for button, name, magic in (("Overview as PNG", "encoder_self_all_heads.png", b"\x89PNG"),
                                ("Detail as SVG", "encoder_self_layer1_mean.svg", b"<svg")):
        with page.expect_download() as info:
            page.get_by_role("button", name=button).click()
        assert info.value.suggested_filename == name
        assert info.value.path().read_bytes().startswith(magic)
    # ...and the arrays as .npz and .json from the server
    page.click("#export")
    links = page.locator("#export-files a[download]")
    page.wait_for_function("() => document.querySelectorAll('#export-files a[download]').length === 2")
    names = sorted(links.nth(i).get_attribute("download") or links.nth(i).inner_text() for i in range(2))
    assert names == ["attention.json", "attention.npz"], names
    for i in range(2):
        with page.expect_download() as info:
            links.nth(i).click()
        download = info.value
        assert download.suggested_filename in names
        data = download.path().read_bytes()
        if download.suggested_filename.endswith(".npz"):
            assert data[:2] == b"PK"  # a zip archive
        else:
            assert json.loads(data)["shapes"]["encoder_self"][:2] == [6, 8]

    # The layer slider, then a real mouse click on the middle of tile L3 H5 (plotly_click -> #tile-click -> layer
    # and head).
    assert "layer 1 · mean of 8 heads" in title(page, "detail")
    number = page.locator("#layer input[type=number]")
    number.fill("4")
    number.press("Enter")
    page.wait_for_function(f"() => ({TITLE})('detail').includes('layer 4 · mean of 8 heads')")
    page.locator("#overview").scroll_into_view_if_needed()
    x, y = page.evaluate(
        f"""() => {{
            const gd = ({GD})('overview'), t = gd.data[0], fl = gd._fullLayout;
            const cols = t.x.map((l, i) => [l, i]).filter(([l]) => l.startsWith('H5 key ')).map(([, i]) => i);
            const rows = t.y.map((l, i) => [l, i]).filter(([l]) => l.startsWith('L3 query ')).map(([, i]) => i);
            const xi = cols[Math.floor(cols.length / 2)], yi = rows[Math.floor(rows.length / 2)];
            const box = gd.getBoundingClientRect();
            return [box.left + fl.xaxis._offset + fl.xaxis.l2p(xi), box.top + fl.yaxis._offset + fl.yaxis.l2p(yi)];
        }}"""
    )
    page.mouse.click(x, y)
    page.wait_for_function(f"() => ({TITLE})('detail').includes('layer 3 · head 5')")
    assert page.locator("#layer input[type=number]").input_value() == "3"
    assert page.locator("#head input[value='5']").is_checked()


def test_new_sentences_give_48_tiles_html_in_every_input_stays_text_every_tab_renders_dark_and_a_block_opens_its_view(
        page: Page, server: str):
    open_app(page, server + FIRST_VIEW + "&__theme=dark")
    assert page.evaluate("() => document.body.classList.contains('dark')")

    # A new sentence gives a new translation; the overview labels its rows with the new sentence's tokens
    before = value(page, "translation")
    page.fill("#source textarea", "A little girl in a pink dress is climbing a wooden fence.")
    page.click("#run")
    page.wait_for_function(f"(old) => ({VALUE})('translation') !== old", arg=before)
    page.wait_for_function(
        f"() => {{ const gd = ({GD})('overview'); return gd && gd.data[0].y.some(l => /girl/.test(l)); }}"
    )
    n_src = source_tokens(page)
    info = overview_info(page)
    assert len(info["layers"]) * len(info["heads"]) == 48
    for layer in range(1, 7):
        assert sum(label.startswith(f"L{layer} query ") for label in info["y"]) == n_src
    for head in range(1, 9):
        assert sum(label.startswith(f"H{head} key ") for label in info["x"]) == n_src
    # the z matrix as plotly drew it (calcdata: after decoding the base64 typed array)
    shape = page.evaluate(f"() => {{ const z = ({GD})('detail').calcdata[0][0].z; return [z.length, z[0].length]; }}")
    assert shape == [n_src, n_src]

    # HTML and script in the source and the target stay text
    page.fill("#source textarea", f"A dog {PAYLOAD} runs.")
    page.fill("#target textarea", f"Ein Hund {PAYLOAD}")
    page.click("#run")
    page.wait_for_function("() => document.querySelector('#status').textContent.includes('teacher forcing')")
    page.wait_for_function(f"() => ({VALUE})('translation').includes('img src=x onerror')")
    assert value(page, "source") == f"A dog {PAYLOAD} runs."  # still the raw text, in the textarea
    assert_not_injected(page)
    # '<' is a byte piece or <unk> (by tokenizer), '"' a piece of its own: both drawn as literal text
    labels = tick_labels(page, "detail")
    assert any("<" in label for label in labels) and '"' in labels, labels
    n_src = source_tokens(page)

    select_tab(page, "Model card")
    page.get_by_text("Model running on").wait_for()

    # Figure 1 is drawn when its tab opens, with this sentence's shapes; a click on an attention block opens it
    select_tab(page, "Architecture")
    page.wait_for_function(
        "(n) => document.querySelector('#figure1 svg')?.textContent.includes(`(1, ${n}) token ids`)", arg=n_src
    )
    page.wait_for_selector("#figure2 svg")
    assert_not_injected(page)
    page.locator("#figure1 svg [data-attention='cross']").first.click()
    page.wait_for_function(
        "() => [...document.querySelectorAll('[role=tab]')].some(t => t.textContent.trim() === 'Attention'"
        " && t.getAttribute('aria-selected') === 'true')"
    )
    page.wait_for_function("() => document.querySelector('#kind input[value=cross]')?.checked")
    page.wait_for_function(f"() => ({TITLE})('detail').startsWith('Encoder–decoder attention')")

    # The Why tab: its four figures, then a live run of its own sentence (HTML in it stays text)
    select_tab(page, "Why 1/√d_k")
    for plot_id in ("variance", "histogram", "softmax-weights", "curves"):
        page.wait_for_selector(f"#{plot_id} .js-plotly-plot .main-svg")
    box = page.get_by_role("textbox", name="English sentence").locator("visible=true")
    box.fill(f"A dog {PAYLOAD} runs.")
    page.click("#live-run")
    page.wait_for_function(
        f"() => ({GD})('live-changed') && ({GD})('live-changed').layout.yaxis.ticktext.length > 20"
        " && document.querySelector('#live-summary').textContent.includes('Translation with')"
    )
    for plot_id in ("live-normal", "live-changed"):
        page.wait_for_function(HAS_HEATMAP, arg=plot_id)
    page.wait_for_selector("#live-entropy .js-plotly-plot .main-svg")
    assert_not_injected(page)
    assert any("<" in label for label in tick_labels(page, "live-changed"))

"""The app in a real browser: Debian's Chromium driven by Playwright (never `playwright install`).

One `python app.py` on a free loopback port and one Chromium for the whole run (tests/conftest.py: `server`,
`browser`). The tests take turns on two kept pages (``kept``: one opened on the first view, one in the dark theme;
each test sets the view it needs), which fail a test on a console error, an uncaught page error, a JavaScript
dialog, or any request that leaves loopback (the page must work offline). Screenshots are not tests:
``python -m bench.screenshots``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from helpers.browser import (
    PAYLOAD,
    KeptPages,
    assert_not_injected,
    is_dark,
    new_page,
    open_app,
    select_tab,
    source_tokens,
    tick_labels,
    title,
    value,
    wait_idle,
    wait_tab,
)
from helpers.scripts import GD, HAS_HEATMAP, TITLE, VALUE
from playwright.sync_api import Browser, Page

from bench.browser import NO_POPUPS

# This module's tests start from encoder self-attention, layer 1, mean of heads (a bare URL opens the
# sharpest head: tests/test_browser_classroom.py)
FIRST_VIEW = "?kind=encoder_self&layer=1&head=0"
DARK = FIRST_VIEW + "&__theme=dark"  # every tab is also checked in the dark theme


def opened(kept: KeptPages, server: str, view: str) -> Page:
    """The module's kept page opened on ``view`` (downloads allowed)."""
    return kept.open(server + view)


def open_export(page: Page) -> None:
    """The "Export" panel open (an earlier test may have opened it)."""
    if not page.locator("#export").is_visible():
        page.get_by_role("button", name="Export").click()


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


def run(page: Page, source: str, target: str | None = None) -> None:
    """Type a sentence (and a translation) and run it, until the new translation is shown."""
    before = value(page, "translation")
    page.fill("#source textarea", source)
    if target is not None:
        page.fill("#target textarea", target)
    page.click("#run")
    page.wait_for_function(f"(old) => ({VALUE})('translation') !== old", arg=before)


# ---------------------------------------------------------------------------------------------------------- the example
def test_opens_with_the_example_drawn(kept: KeptPages, server: str):
    page = opened(kept, server, FIRST_VIEW)
    assert value(page, "source") == "Two dogs are running through the snow."
    assert value(page, "translation").strip()
    assert "Model on" in page.inner_text("#status")
    info = overview_info(page)
    assert info["layers"] == [f"L{l_}" for l_ in range(1, 7)] and info["heads"] == [f"H{h}" for h in range(1, 9)]
    assert title(page, "detail").startswith("Encoder self-attention · layer 1")
    # drawn, not just data: the SVG heatmap images exist
    assert page.locator("#overview .js-plotly-plot .hm image").count() >= 1
    assert page.locator("#detail .js-plotly-plot .hm image").count() >= 1


def test_the_export_buttons_save_the_drawn_figures_in_the_page(kept: KeptPages, server: str):
    """Saved client-side through plotly: no server round trip."""
    page = opened(kept, server, FIRST_VIEW)
    open_export(page)
    for button, name, magic in (("Overview as PNG", "encoder_self_all_heads.png", b"\x89PNG"),
                                ("Detail as SVG", "encoder_self_layer1_mean.svg", b"<svg")):
        with page.expect_download() as info:
            page.get_by_role("button", name=button).click()
        assert info.value.suggested_filename == name
        assert info.value.path().read_bytes().startswith(magic)


def test_export_downloads_the_maps_as_npz_and_json_from_the_server(kept: KeptPages, server: str):
    page = opened(kept, server, FIRST_VIEW)
    open_export(page)
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


def test_the_layer_slider_changes_the_close_up(kept: KeptPages, server: str):
    page = opened(kept, server, FIRST_VIEW)
    assert "layer 1 · mean of 8 heads" in title(page, "detail")
    number = page.locator("#layer input[type=number]")
    number.fill("4")
    number.press("Enter")
    page.wait_for_function(f"() => ({TITLE})('detail').includes('layer 4 · mean of 8 heads')")


def test_a_click_on_a_tile_opens_its_layer_and_head(kept: KeptPages, server: str):
    """A real mouse click on the middle of tile L3 H5: plotly_click -> #tile-click -> layer and head."""
    page = opened(kept, server, FIRST_VIEW)
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


# -------------------------------------------------------------------------------------------------- new sentences, dark
def test_a_new_sentence_gives_48_tiles_labelled_with_its_tokens(kept: KeptPages, server: str):
    page = opened(kept, server, DARK)
    assert is_dark(page)
    run(page, "A little girl in a pink dress is climbing a wooden fence.")
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


def test_html_in_the_source_and_target_stays_text_in_the_maps_and_figure_1(kept: KeptPages, server: str):
    page = opened(kept, server, DARK)
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
    select_tab(page, "Architecture")  # Figure 1 with this sentence's shapes
    page.wait_for_function(
        "(n) => document.querySelector('#figure1 svg')?.textContent.includes(`(1, ${n}) token ids`)", arg=n_src
    )
    assert_not_injected(page)


def test_the_model_card_says_where_the_model_runs(kept: KeptPages, server: str):
    page = opened(kept, server, DARK)
    select_tab(page, "Model card")
    page.get_by_text("Model running on").wait_for()


def test_figure_1_has_the_sentences_shapes_and_a_click_on_an_attention_block_opens_its_view(kept: KeptPages,
                                                                                            server: str):
    page = opened(kept, server, DARK)
    select_tab(page, "Attention")
    n_src = source_tokens(page)
    select_tab(page, "Architecture")  # drawn when its tab opens
    page.wait_for_function(
        "(n) => document.querySelector('#figure1 svg')?.textContent.includes(`(1, ${n}) token ids`)", arg=n_src
    )
    page.wait_for_selector("#figure2 svg")
    page.locator("#figure1 svg [data-attention='cross']").first.click()
    wait_tab(page, "Attention")
    page.wait_for_function("() => document.querySelector('#kind input[value=cross]')?.checked")
    page.wait_for_function(f"() => ({TITLE})('detail').startsWith('Encoder–decoder attention')")


def test_the_why_tab_draws_its_figures_and_a_live_run_keeps_html_as_text(kept: KeptPages, server: str):
    page = opened(kept, server, DARK)
    select_tab(page, "Why 1/√d_k")
    for plot_id in ("variance", "histogram", "softmax-weights", "curves"):
        page.wait_for_selector(f"#{plot_id} .js-plotly-plot .main-svg")
    box = page.get_by_role("textbox", name="English sentence").locator("visible=true")
    box.fill(f"A dog {PAYLOAD} runs.")
    page.click("#live-run")
    page.wait_for_function(
        f"() => ({GD})('live-changed') && (({GD})('live-changed').layout.yaxis.ticktext || []).length > 20"
        " && document.querySelector('#live-summary').textContent.includes('Translation with')"
        " && !document.querySelector('#live-summary').textContent.includes('decoding…')"  # the maps come first
    )
    for plot_id in ("live-normal", "live-changed"):
        page.wait_for_function(HAS_HEATMAP, arg=plot_id)
    page.wait_for_selector("#live-entropy .js-plotly-plot .main-svg")
    assert_not_injected(page)
    assert any("<" in label for label in tick_labels(page, "live-changed"))


# Counts the animation frames Gradio's status trackers ask for (installed before the page's scripts: the page's own
# frames.js then wraps this one, and what it lets through is counted)
COUNT_TRACKER_FRAMES = """(() => {
  const frame = window.requestAnimationFrame.bind(window);
  window.trackerFrames = 0;
  window.requestAnimationFrame = (callback) => {
    if (/statustracker/.test(new Error().stack || '')) window.trackerFrames++;
    return frame(callback);
  };
})()"""


def test_an_idle_page_asks_for_no_frames_and_a_timer_shown_still_runs(browser: Browser, server: str):
    """Gradio's loading screen leaves a status tracker's frame loop running (60 frames a second for as long as the
    page is open): assets/web/frames.js lets none of its frames through while no timer is shown, and every one
    once a timer (.progress-text) is on the page."""
    with new_page(browser, 1280, 720, fresh=True) as page:  # (its init script stays with the tab: closed after)
        page.add_init_script(COUNT_TRACKER_FRAMES)
        open_app(page, server + FIRST_VIEW)
        for _ in range(2):  # (the load's chained events done)
            wait_idle(page)
            page.wait_for_timeout(500)
        page.evaluate("() => { window.trackerFrames = 0; }")
        page.wait_for_timeout(1000)
        # 60 a second unchecked; at most the frames of the 100 ms after a timer went, should one have been shown
        assert page.evaluate("() => window.trackerFrames") <= 6
        page.evaluate("() => document.body.appendChild(Object.assign(document.createElement('div'), "
                      "{className: 'progress-text'}))")
        page.wait_for_function("() => window.trackerFrames >= 5")


def _browser_command_lines() -> list[list[str]]:
    """The command lines of the Chromium browser processes Playwright drives on this machine (not their children)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").replace("\0", " ").split()
        except OSError:
            continue
        if args and "chrom" in args[0] and "--remote-debugging-pipe" in args and not any(
                a.startswith("--type=") for a in args):
            found.append(args)
    return found


def test_chromium_keeps_playwrights_features_off_and_builds_no_address_bar_popups(browser: Browser):
    """bench.browser's --disable-features comes last, so Chromium keeps it alone: it must hold every feature
    Playwright's own list turns off, and a new window then has no WebUI popups of its address bar."""
    lines = _browser_command_lines()
    assert lines
    for args in lines:
        lists = [set(a.split("=", 1)[1].split(",")) for a in args if a.startswith("--disable-features=")]
        assert len(lists) >= 2 and lists[0] <= lists[-1] and set(NO_POPUPS) <= lists[-1], lists
    context = browser.new_context()
    try:
        context.new_page().goto("data:text/html,<p>a page</p>")
        targets = browser.new_browser_cdp_session().send("Target.getTargets")["targetInfos"]
    finally:
        context.close()
    assert [t["url"] for t in targets if t["type"] == "page"] and not [
        t["url"] for t in targets if t["url"].startswith("chrome://omnibox")], targets

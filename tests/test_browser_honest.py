"""Honest views in a real browser: the page never shows a stale or misleading picture.

The app and Chromium are tests/conftest.py's (one for the run). The tests take turns on one kept page (``kept``; each
sets the view it needs, and those that need the example sentence run before those that change it), which fails a
test on console errors, dialogs or requests off loopback. An example opening its view is checked in
tests/test_browser_classroom.py, a 100-token close-up on a phone in tests/test_browser_long.py. Screenshots are not
tests: ``python -m bench.screenshots``.
"""

from __future__ import annotations

import html
import io
import re

from helpers.browser import (
    KeptPages,
    choose_kind,
    new_page,
    open_app,
    plot_point,
    select_tab,
    set_number,
    source_tokens,
    title,
    value,
)
from helpers.layout import assert_layout_without_overlaps
from helpers.scripts import GD, HAS_HEATMAP, VALUE
from PIL import Image
from playwright.sync_api import Browser, Page

from viz.heatmaps import MASKED_HOVER
from viz.probs import DISAGREE_COLOR

LIVE_TITLE = "() => document.querySelector('#live-changed-caption .attn-caption-title')?.textContent || ''"
NOTICE = "(id) => document.querySelector(`#${id}`)?.textContent || ''"
GIVEN_VISIBLE = "() => { const e = document.querySelector('#given'); return !!(e && e.offsetParent !== null); }"


# -------------------------------------------------------------------------------------------------------------- helpers
def opened(kept: KeptPages, server: str) -> Page:
    return kept.open(server)


def hover_text(page: Page, plot_id: str, x: float, y: float) -> str:
    """Move the mouse over data point (x, y) and return the hover label plotly draws (the mouse leaves first, so
    that no earlier label is read)."""
    label = page.locator(f"#{plot_id} .hoverlayer .hovertext")
    page.mouse.move(0, 0)
    label.first.wait_for(state="detached")
    page.mouse.move(*plot_point(page, plot_id, x, y))
    label.first.wait_for()
    return label.first.text_content() or ""


def any_error_badge(page: Page) -> int:
    """Gradio's red error marks: a status tracker in its error state, or an error toast."""
    return page.evaluate(
        "() => document.querySelectorAll('.toast-body.error, [data-testid=\"status-tracker\"].error, "
        ".wrap.error, .error-text').length"
    )


# -------------------------------------------------------------- masked cells, the shift, exports, one's own translation
def test_masked_cells_are_grey_with_a_legend_and_say_so(kept: KeptPages, server: str):
    page = opened(kept, server)
    choose_kind(page, "Decoder self-attention")
    page.wait_for_function(f"() => ({GD})('detail').layout.title.text.startsWith('Decoder self-attention')")
    for plot_id in ("overview", "detail"):
        page.wait_for_function(
            f"(id) => (({GD})(id).layout.shapes || []).some(s => /masked/.test(s.name || ''))", arg=plot_id)
        legend = page.locator(f"#{plot_id} .legend text", has_text="masked")
        legend.first.wait_for()
    assert "Grey cells are" in page.inner_text("#shift-note")
    t = page.evaluate(f"() => ({GD})('detail').layout.yaxis.ticktext.length")
    masked = hover_text(page, "detail", t - 1, 0)  # row 0 (BOS) → the last key: after the query
    assert MASKED_HOVER in masked and "this row predicts" in masked
    seen = hover_text(page, "detail", 0, 1)  # row 1 → key 0: before the query, not masked
    assert "masked" not in seen


def test_the_page_and_the_hover_say_which_token_a_decoder_row_predicts(kept: KeptPages, server: str):
    page = opened(kept, server)
    choose_kind(page, "Encoder–decoder attention")
    page.wait_for_function(f"() => ({GD})('detail').layout.title.text.startsWith('Encoder–decoder')")
    note = page.inner_text("#shift-note")
    assert "row i is fed token i and predicts token i+1" in note.replace("\n", " ")
    rows = page.evaluate(f"() => ({GD})('detail').layout.yaxis.ticktext")  # <s>, Zwei, Hunde, …
    text = hover_text(page, "detail", 0, 1)  # the row fed the first word predicts the second
    assert f"this row predicts: {rows[2]}" in text, (rows, text)
    choose_kind(page, "Encoder self-attention")
    page.wait_for_function("() => !document.querySelector('#shift-note').textContent.trim()")
    page.wait_for_function(f"() => ({GD})('detail').layout.title.text.startsWith('Encoder self-attention')")


def test_exported_figures_carry_their_context_and_a_white_background(kept: KeptPages, server: str):
    """Sentence, kind, layer, head and tokens in the exported figures, on white; the page's own stay transparent."""
    page = opened(kept, server)
    sentence, detail_title = value(page, "source"), title(page, "detail")
    if not page.get_by_role("button", name="Detail as SVG").is_visible():
        page.get_by_role("button", name="Export").click()
    with page.expect_download() as info:
        page.get_by_role("button", name="Detail as SVG").click()
    svg = info.value.path().read_text(encoding="utf-8")
    assert sentence in svg and detail_title.split(" · ")[0] in svg
    assert re.search(r"layer \d+ · (head \d+|mean of \d+ heads)", svg)
    assert re.search(r'class="bg"[^>]*fill: rgb\(255, 255, 255\)', svg) or "fill: rgb(255, 255, 255)" in svg

    with page.expect_download() as info:
        page.get_by_role("button", name="Overview as SVG").click()
    svg = info.value.path().read_text(encoding="utf-8")
    assert sentence in svg and "all 6 layers" in svg
    assert 'class="xtick"' in svg and ">dogs<" in svg  # the tokens as tick labels …
    assert ">L1 H1<" in svg and ">L6 H8<" in svg  # … and every tile named

    with page.expect_download() as info:
        page.get_by_role("button", name="Overview as PNG").click()
    image = Image.open(io.BytesIO(info.value.path().read_bytes())).convert("RGBA")
    assert image.getpixel((2, 2)) == (255, 255, 255, 255)  # opaque white, not transparent
    background = page.evaluate(f"() => ({GD})('overview').layout.paper_bgcolor")
    assert re.fullmatch(r"rgba\(0, ?0, ?0, ?0\)", background), background
    assert title(page, "detail") == detail_title


def test_an_own_translation_shows_both_translations_and_each_tokens_probability(kept: KeptPages, server: str):
    page = opened(kept, server)
    model_translation = value(page, "translation")
    assert "rennen" in model_translation  # the shipped model's own: "Zwei Hunde rennen durch den Schnee."
    given = model_translation.replace("rennen", "laufen")
    page.fill("#target textarea", given)
    page.click("#run")
    page.wait_for_function(GIVEN_VISIBLE)
    page.wait_for_function("() => document.querySelector('#status').textContent.includes('teacher forcing')")
    page.wait_for_function(f"(id) => ({GD})(id)?.data?.[0]?.type === 'bar'", arg="given-probs")
    assert value(page, "translation") == model_translation  # the model's, beside …
    assert value(page, "target") == given  # … the user's
    bars = page.evaluate(f"""() => {{ const t = ({GD})('given-probs').data[0];
        return {{ticks: ({GD})('given-probs').layout.xaxis.ticktext, colors: t.marker.color, text: t.text,
                 y: Array.from(t.y)}}; }}""")
    i = bars["ticks"].index("laufen")
    assert bars["colors"][i] == DISAGREE_COLOR and "rennen" in bars["text"][i]  # the model would write "rennen"
    assert bars["ticks"][-1] == "&lt;/s&gt;" and all(0 <= p <= 1 for p in bars["y"])
    assert sum(c == DISAGREE_COLOR for c in bars["colors"]) < len(bars["colors"])  # it agrees elsewhere
    # back to the model's own translation: the probabilities go
    page.fill("#target textarea", "")
    page.click("#run")
    page.wait_for_function(f"() => !({GIVEN_VISIBLE})()")


# -------------------------------------------------------------------------- controls redraw what they change, bad input
def test_an_edited_or_empty_sentence_is_noticed_and_the_last_view_stays(kept: KeptPages, server: str):
    page = opened(kept, server)
    # an edited sentence is marked out of date until it is run
    # (the model may translate the longer sentence the same way: the status's token count tells the run has come;
    # not its whole text, which holds Gradio's progress tracker while the run is pending)
    n_tokens = source_tokens(page)
    page.locator("#source textarea").press_sequentially(" Quickly")
    page.wait_for_function(f"() => ({NOTICE})('notice').includes('still show the last run')")
    page.click("#run")
    page.wait_for_function("(n) => { const m = /(\\d+) source tokens/"
                           ".exec(document.querySelector('#status').textContent); return !!m && Number(m[1]) !== n; }",
                           arg=n_tokens)
    page.wait_for_function(f"() => !({NOTICE})('notice').trim()")

    # an empty sentence keeps the last view and says why; a good run clears the notice
    translation, detail_title = value(page, "translation"), title(page, "detail")
    page.fill("#source textarea", "   ")
    page.click("#run")
    page.wait_for_function(f"() => ({NOTICE})('notice').includes('empty')")
    assert "still show the last good run" in page.inner_text("#notice")
    assert value(page, "translation") == translation and title(page, "detail") == detail_title
    for plot_id in ("overview", "detail"):
        assert page.evaluate(HAS_HEATMAP, plot_id)
    assert any_error_badge(page) == 0
    page.fill("#source textarea", "A dog runs.")
    page.click("#run")
    page.wait_for_function(f"(old) => ({VALUE})('translation') !== old", arg=translation)
    page.wait_for_function(f"() => !({NOTICE})('notice').trim()")


def test_the_scale_slider_redraws_part_3_and_an_empty_live_sentence_keeps_it(kept: KeptPages, server: str):
    page = opened(kept, server)
    select_tab(page, "Why 1/√d_k")
    page.wait_for_function(HAS_HEATMAP, arg="live-changed")
    page.wait_for_function(f"() => ({LIVE_TITLE})().includes('no scaling')")  # the slider starts at 1
    page.click("#factor-own")  # the factor the model was trained with, said as a multiplication
    page.wait_for_function(f"() => ({LIVE_TITLE})().includes('× 1/√24 = × 0.204 (the model')")
    page.wait_for_function("() => document.querySelector('#factor-note').textContent.includes('× 0.2041 (= × 1/√24)')")
    set_number(page, "#scale-factor", 0.5)  # one meaning: × 0.5 for the model and for the random vectors
    page.wait_for_function(f"() => ({LIVE_TITLE})().includes('changed: × 0.5 = × 1/√4')")  # layer: the subtitle
    page.wait_for_function("() => document.querySelector('#factor-note').textContent.includes('× 0.5 (= × 1/√4)')")
    page.wait_for_function("() => document.body.textContent.includes('Multiplied by 0.5 instead')")  # part 2

    # … and its own empty sentence keeps its last view too
    live_title = page.evaluate(LIVE_TITLE)
    box = page.get_by_role("textbox", name="English sentence").locator("visible=true")
    box.fill("")
    page.click("#live-run")
    page.wait_for_function(f"() => ({NOTICE})('live-notice').includes('empty')")
    assert page.evaluate(LIVE_TITLE) == live_title and any_error_badge(page) == 0


def test_a_why_tab_map_is_saved_with_its_title_and_a_colour_bar_of_its_own(kept: KeptPages, server: str):
    """The Why tab shows one colour bar for its two maps and each map's title above it (viz.views.scaling.page_map):
    a map saved from the page has both in the image, and the page's map stays as it was."""
    page = opened(kept, server)
    select_tab(page, "Why 1/√d_k")
    page.wait_for_function(HAS_HEATMAP, arg="live-changed")
    page.wait_for_function(f"() => ({LIVE_TITLE})().startsWith('changed')")
    assert page.locator("#live-weight-bar .attn-weight-ramp").is_visible()
    with page.expect_download() as info:
        page.evaluate("() => window.attnDownload('live-changed', 'svg')")
    svg = info.value.path().read_text(encoding="utf-8")
    assert re.search(r'class="[^"]*\bcolorbar\b', svg)  # its own colour bar …
    assert page.evaluate(LIVE_TITLE).split(" (")[0] in html.unescape(svg)  # … and its title
    assert page.evaluate(f"() => ({GD})('live-changed').data[0].showscale") is False
    assert page.locator("#live-changed .colorbar").count() == 0


# -------------------------------------------------------------------------------------------------------------- a phone
def test_a_phone_layout_without_overlaps(browser: Browser, server: str):
    """At 390×844 (light: the layout is not the theme's; presentation mode's contrast is measured in both); a
    projector's: tests/test_browser_classroom.py."""
    with new_page(browser, 390, 844) as page:
        open_app(page, server)
        assert_layout_without_overlaps(page, 390)

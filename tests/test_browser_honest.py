"""Issue 20 in a real browser: the page never shows a stale or misleading picture.

The fixtures (`server`, `browser`, `page`: one app and one Chromium for the module, a fresh page per test that
fails on console errors, dialogs or requests off loopback) and helpers come from tests/test_browser.py.
Screenshots at 390×844 (a phone) and 1280×720 (a projector), light and dark, land in `screenshots/`.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator

import pytest
import test_browser as shared
from PIL import Image
from playwright.sync_api import Browser, Page
from test_browser import GD, HAS_HEATMAP, SHOTS, TIMEOUT_MS, VALUE, Watch, open_app, select_tab, title, value

from viz.heatmaps import MASKED_HOVER
from viz.probs import DISAGREE_COLOR
from viz.views import examples

# test_browser's page fixture (the app and Chromium are tests/conftest.py's, one for the whole run)
page = shared.page

LIVE_TITLE = f"() => ({GD})('live-changed')?.layout?.title?.text || ''"
NOTICE = "(id) => document.querySelector(`#${id}`)?.textContent || ''"
GIVEN_VISIBLE = "() => { const e = document.querySelector('#given'); return !!(e && e.offsetParent !== null); }"


# ---------------------------------------------------------------------------------------------------- helpers
def cell_point(page: Page, plot_id: str, x: float, y: float) -> tuple[float, float]:
    """The page coordinates of the data point (x, y) of a plot (its first x and y axes)."""
    page.locator(f"#{plot_id}").scroll_into_view_if_needed()
    return page.evaluate(
        f"""([id, x, y]) => {{
            const gd = ({GD})(id), fl = gd._fullLayout, box = gd.getBoundingClientRect();
            return [box.left + fl.xaxis._offset + fl.xaxis.l2p(x), box.top + fl.yaxis._offset + fl.yaxis.l2p(y)];
        }}""",
        [plot_id, x, y],
    )


def hover_text(page: Page, plot_id: str, x: float, y: float) -> str:
    """Move the mouse over data point (x, y) and return the hover label plotly draws."""
    page.mouse.move(*cell_point(page, plot_id, x, y))
    label = page.locator(f"#{plot_id} .hoverlayer .hovertext")
    label.first.wait_for()
    return label.first.text_content() or ""


def choose_kind(page: Page, label: str) -> None:
    page.locator("#kind label", has_text=label).click()


def set_number(page: Page, root: str, number: int | float) -> None:
    """Type a value into a Gradio slider's number box and confirm it (a change event)."""
    box = page.locator(f"{root} input[type=number]").first
    box.fill(str(number))
    box.press("Enter")


def any_error_badge(page: Page) -> int:
    """Gradio's red error marks: a status tracker in its error state, or an error toast."""
    return page.evaluate(
        "() => document.querySelectorAll('.toast-body.error, [data-testid=\"status-tracker\"].error, "
        ".wrap.error, .error-text').length"
    )


def select_any_tab(page: Page, name: str, shown: str) -> None:
    """Like test_browser.select_tab, also on a phone, where tabs beyond the first fold into a "More tabs" menu;
    waits until the element ``shown`` (a selector inside the tab) is visible."""
    tab = page.get_by_role("tab", name=name)
    if tab.count() and tab.first.is_visible():
        tab.first.click()
    else:
        page.get_by_role("button", name="More tabs").click()
        page.locator(".overflow-dropdown button", has_text=name).click()
    page.locator(shown).first.wait_for(state="visible")


def boxes_overlap(a: dict | None, b: dict | None) -> bool:
    if not a or not b:
        return False
    apart = a["right"] <= b["left"] or b["right"] <= a["left"] or a["bottom"] <= b["top"] or b["bottom"] <= a["top"]
    return not apart


def rect(page: Page, selector: str) -> dict | None:
    return page.evaluate(
        "(s) => { const e = document.querySelector(s); if (!e) return null; const r = e.getBoundingClientRect();"
        " return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width}; }",
        selector,
    )


# ------------------------------------------------------------------------------ 1. controls redraw what they change
def test_an_example_runs_the_model_and_opens_its_view(page: Page, server: str):
    open_app(page, server)
    before = value(page, "translation")
    index = next(i for i, e in enumerate(examples.EXAMPLES) if e.sentence != value(page, "source"))
    example = examples.EXAMPLES[index]
    page.locator("#example input").click()
    page.get_by_role("option", name=example.label).click()
    page.wait_for_function(f"(s) => ({VALUE})('source') === s", arg=example.sentence)
    page.wait_for_function(f"(old) => ({VALUE})('translation') !== old", arg=before)
    word = re.findall(r"[A-Za-z]{4,}", example.sentence)[0]
    # the figures are this sentence's: its tokens label the overview, the close-up shows the example's view
    page.wait_for_function(
        f"(w) => {{ const gd = ({GD})('overview'); return gd && gd.data[0].x.concat(gd.data[0].y)"
        ".some(l => l.includes(w)); }",
        arg=word,
    )
    which = "mean of" if example.head == 0 else f"head {example.head}"
    page.wait_for_function(f"(t) => ({GD})('detail').layout.title.text.includes(t)",
                           arg=f"layer {example.layer} · {which}")


def test_the_scale_slider_redraws_part_3_of_the_scaling_tab(page: Page, server: str):
    open_app(page, server)
    select_tab(page, "Why 1/√d_k")
    page.wait_for_function(f"() => ({LIVE_TITLE})().includes('no scaling')")  # the slider starts at 1
    set_number(page, "#alpha", 0)
    page.wait_for_function(f"() => ({LIVE_TITLE})().includes('(the paper')")  # "× 0.204 (the paper's 1/√d_k)"
    set_number(page, "#alpha", 0.5)
    page.wait_for_function(f"() => /changed: × 0\\.\\d+ · layer/.test(({LIVE_TITLE})())")
    assert "changed: × 0." in page.evaluate(LIVE_TITLE)


def test_an_edited_sentence_is_marked_out_of_date_until_it_is_run(page: Page, server: str):
    open_app(page, server)
    translation = value(page, "translation")
    page.locator("#source textarea").press_sequentially(" Quickly")
    page.wait_for_function(f"() => ({NOTICE})('notice').includes('still show the last run')")
    page.click("#run")
    page.wait_for_function(f"(old) => ({VALUE})('translation') !== old", arg=translation)
    page.wait_for_function(f"() => !({NOTICE})('notice').trim()")


# ------------------------------------------------------------------------------- 2–3. masked cells, the shift
def test_masked_cells_are_grey_with_a_legend_and_their_hover_says_so(page: Page, server: str):
    open_app(page, server)
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


def test_the_page_and_the_hover_say_which_token_a_decoder_row_predicts(page: Page, server: str):
    open_app(page, server)
    choose_kind(page, "Encoder–decoder attention")
    page.wait_for_function(f"() => ({GD})('detail').layout.title.text.startsWith('Encoder–decoder')")
    note = page.inner_text("#shift-note")
    assert "row i is fed token i and predicts token i+1" in note.replace("\n", " ")
    rows = page.evaluate(f"() => ({GD})('detail').layout.yaxis.ticktext")  # <s>, Zwei, Hunde, …
    text = hover_text(page, "detail", 0, 1)  # the row fed the first word predicts the second
    assert f"this row predicts: {rows[2]}" in text, (rows, text)
    choose_kind(page, "Encoder self-attention")
    page.wait_for_function("() => !document.querySelector('#shift-note').textContent.trim()")


# ------------------------------------------------------------------------------------- 4. bad input keeps the view
def test_an_empty_sentence_keeps_the_last_view_and_says_why(page: Page, server: str):
    open_app(page, server)
    translation, detail_title = value(page, "translation"), title(page, "detail")
    page.fill("#source textarea", "   ")
    page.click("#run")
    page.wait_for_function(f"() => ({NOTICE})('notice').includes('empty')")
    assert "still show the last good run" in page.inner_text("#notice")
    assert value(page, "translation") == translation and title(page, "detail") == detail_title
    for plot_id in ("overview", "detail"):
        assert page.evaluate(HAS_HEATMAP, plot_id)
    assert any_error_badge(page) == 0
    # a good run clears the notice
    page.fill("#source textarea", "A dog runs.")
    page.click("#run")
    page.wait_for_function(f"(old) => ({VALUE})('translation') !== old", arg=translation)
    page.wait_for_function(f"() => !({NOTICE})('notice').trim()")

    select_tab(page, "Why 1/√d_k")
    page.wait_for_function(HAS_HEATMAP, arg="live-changed")
    live_title = page.evaluate(LIVE_TITLE)
    box = page.get_by_role("textbox", name="English sentence").locator("visible=true")
    box.fill("")
    page.click("#live-run")
    page.wait_for_function(f"() => ({NOTICE})('live-notice').includes('empty')")
    assert page.evaluate(LIVE_TITLE) == live_title and any_error_badge(page) == 0


# -------------------------------------------------------------------------------- 5. a translation of one's own
def test_an_own_translation_shows_both_translations_and_each_tokens_probability(page: Page, server: str):
    open_app(page, server)
    model_translation = value(page, "translation")
    assert "laufen" in model_translation  # the shipped model's own: "Zwei Hunde laufen durch den Schnee."
    given = model_translation.replace("laufen", "rennen")
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
    i = bars["ticks"].index("rennen")
    assert bars["colors"][i] == DISAGREE_COLOR and "laufen" in bars["text"][i]  # the model would write "laufen"
    assert bars["ticks"][-1] == "&lt;/s&gt;" and all(0 <= p <= 1 for p in bars["y"])
    assert sum(c == DISAGREE_COLOR for c in bars["colors"]) < len(bars["colors"])  # it agrees elsewhere
    shot(page, "given-translation-1400")
    # back to the model's own translation: the probabilities go
    page.fill("#target textarea", "")
    page.click("#run")
    page.wait_for_function(f"() => !({GIVEN_VISIBLE})()")


# ------------------------------------------------------------------------------------ 6. exports carry context
def test_exported_figures_carry_sentence_kind_layer_head_tokens_and_a_white_background(page: Page, server: str):
    open_app(page, server)
    sentence, detail_title = value(page, "source"), title(page, "detail")
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
    # the page's own figures keep their transparent background and their own title
    background = page.evaluate(f"() => ({GD})('overview').layout.paper_bgcolor")
    assert re.fullmatch(r"rgba\(0, ?0, ?0, ?0\)", background), background
    assert title(page, "detail") == detail_title


# ------------------------------------------------------------------------- 7. phone and projector, light and dark
@pytest.fixture
def sized(browser: Browser) -> Iterator:
    """A page factory at a given viewport and colour theme; every page also fails on console errors."""
    contexts, watches = [], []

    def make(width: int, height: int) -> Page:
        context = browser.new_context(viewport={"width": width, "height": height}, accept_downloads=True)
        context.set_default_timeout(TIMEOUT_MS)
        contexts.append(context)
        page = context.new_page()
        watches.append(Watch(page))
        return page

    yield make
    for context in contexts:
        context.close()
    for watch in watches:
        assert watch.errors == [] and watch.outside == [] and watch.dialogs == [], watch.errors


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(exist_ok=True)
    page.evaluate("() => document.fonts.ready.then(() => new Promise(r => requestAnimationFrame(() => "
                  "requestAnimationFrame(r))))")
    page.screenshot(path=str(SHOTS / f"honest-{name}.png"), full_page=True)


@pytest.mark.parametrize("width, height", [(390, 844), (1280, 720)])
@pytest.mark.parametrize("theme", ["light", "dark"])
def test_phone_and_projector_layouts_without_overlaps(sized, server: str, width: int, height: int, theme: str):
    page = sized(width, height)
    open_app(page, server + ("?__theme=dark" if theme == "dark" else ""))
    size = f"{width}-{theme}"
    choose_kind(page, "Decoder self-attention")
    page.wait_for_function(f"() => (({GD})('detail').layout.shapes || []).length > 0")
    # the close-up's title is whole (inside its figure) and no plot label covers it
    title_box, plot_box = rect(page, "#detail .gtitle"), rect(page, "#detail .main-svg")
    assert title_box and title_box["right"] <= plot_box["right"] + 1, (title_box, plot_box)
    assert not boxes_overlap(rect(page, "#detail [data-testid=block-label]"), title_box)
    shot(page, f"attention-{size}")

    select_any_tab(page, "Why 1/√d_k", "#curves")
    page.wait_for_selector("#curves .js-plotly-plot .legend")
    page.wait_for_function(HAS_HEATMAP, arg="live-changed")
    # the "Against d_k" legend is clear of the plot's label, the subplot titles clear of each other
    assert not boxes_overlap(rect(page, "#curves [data-testid=block-label]"), rect(page, "#curves .legend"))
    for plot_id in ("curves", "softmax-weights"):
        titles = page.evaluate(
            "(id) => [...document.querySelectorAll(`#${id} .annotation-text`)].map(e => {"
            " const r = e.getBoundingClientRect(); return {left: r.left, right: r.right, top: r.top, bottom: r.bottom};"
            " })", plot_id)
        for i, a in enumerate(titles):
            for b in titles[i + 1:]:
                assert not boxes_overlap(a, b), (plot_id, a, b)
    shot(page, f"scaling-{size}")

    select_any_tab(page, "Architecture", "#figure1")
    page.wait_for_selector("#figure1 svg [data-attention='cross']")
    # Figure 1 at a legible size: at least its own width (its smallest text 9.5 px), scrolled sideways on a phone
    assert rect(page, "#figure1 svg")["width"] >= min(890, width - 80)
    smallest = page.evaluate("() => Math.min(...[...document.querySelectorAll('#figure1 svg text')]"
                             ".map(t => t.getBoundingClientRect().height).filter(h => h > 0))")
    assert smallest >= 8, smallest
    shot(page, f"architecture-{size}")

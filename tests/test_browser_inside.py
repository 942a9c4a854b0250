"""Issue #13 in a real browser: the "Inside a head" tab, a click on a row of the close-up, the contributions toggle.

The app, the browser and the page checks (no console error, no request off loopback) are tests/test_browser.py's.
The tab is shown at 1280×720 (a projector), light and dark: a screenshot per kind of attention lands in
screenshots/ (inside-<kind>[-dark].png: the first screen; -full: the whole tab), to be looked at.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page
from test_browser import GD, SHOTS, TIMEOUT_MS, TITLE, Watch, open_app, select_tab

KINDS = {"encoder_self": "Encoder self-attention", "decoder_self": "Decoder self-attention (masked)",
         "cross": "Encoder–decoder attention"}
STEPS = "() => document.querySelector('#in-steps')?.textContent || ''"
COLORBAR = f"(id) => {{ const gd = ({GD})(id); return gd ? gd.data[0].colorbar.title.text : ''; }}"


@pytest.fixture
def projector(browser: Browser) -> Iterator[Page]:  # noqa: F811
    """A page at 1280×720, checked like test_browser's ``page``."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    watch = Watch(page)
    yield page
    context.close()
    assert watch.errors == [] and watch.outside == [] and watch.dialogs == [], vars(watch)


def steps_show(page: Page, text: str) -> None:
    page.wait_for_function(f"(t) => ({STEPS})().includes(t)", arg=text)


def drawn(page: Page, *plot_ids: str) -> None:
    for plot_id in plot_ids:
        page.wait_for_selector(f"#{plot_id} .js-plotly-plot .main-svg")


def choose(page: Page, elem_id: str, value) -> None:
    page.locator(f"#{elem_id} label:has(input[value='{value}'])").click()


def pick_kind(page: Page, kind: str) -> None:
    """The tab's kind is a dropdown."""
    page.locator("#in-kind input").click()
    page.get_by_role("option", name=KINDS[kind]).click()


def shoot(page: Page, name: str) -> None:
    SHOTS.mkdir(exist_ok=True)
    page.evaluate("() => document.fonts.ready.then(() => new Promise(r => requestAnimationFrame(() => "
                  "requestAnimationFrame(r))))")
    page.screenshot(path=str(SHOTS / f"inside-{name}.png"))
    page.screenshot(path=str(SHOTS / f"inside-{name}-full.png"), full_page=True)


@pytest.mark.parametrize("theme", ["", "?__theme=dark"])
def test_pick_a_token_and_each_kind_updates_the_view(projector: Page, server: str, theme: str):  # noqa: F811
    page = projector
    open_app(page, server + theme)
    select_tab(page, "Inside a head")  # it follows the Attention tab's view
    layer = page.locator("#layer input[type=number]").input_value()
    steps_show(page, f"layer {layer}, head ")
    drawn(page, "in-scores", "in-figure2")
    choose(page, "in-query", 3)
    steps_show(page, "query 3")
    assert "query 3" in page.evaluate(f"() => ({GD})('in-scores').layout.annotations.at(-1).text")
    for kind in ("encoder_self", "decoder_self", "cross"):
        pick_kind(page, kind)
        choose(page, "in-head", 2)
        choose(page, "in-query", 2)
        steps_show(page, f"{KINDS[kind]}, layer {layer}, head 2, query 2")
        drawn(page, "in-scores", "in-figure2", "in-projections", "in-head_output", "in-contributions")
        if kind == "decoder_self":  # the keys after the query are shown masked (−∞ markers)
            page.wait_for_function(f"() => ({GD})('in-scores').data.some(t => t.mode === 'markers+text')")
        shoot(page, kind.replace("_", "-") + ("-dark" if theme else ""))


def test_a_click_on_a_row_of_the_close_up_opens_the_tab_on_that_query(projector: Page, server: str):  # noqa: F811
    page = projector
    open_app(page, server)
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
    page.wait_for_function(
        "() => [...document.querySelectorAll('[role=tab]')].some(t => t.textContent.trim() === 'Inside a head'"
        " && t.getAttribute('aria-selected') === 'true')")
    steps_show(page, f"Encoder–decoder attention, layer {layer}, head 3, query 2")
    assert page.locator("#in-query input[value='2']").is_checked()
    assert page.locator("#in-kind input").input_value() == KINDS["cross"]


def test_the_contributions_toggle_and_the_why_tab_links(projector: Page, server: str):  # noqa: F811
    page = projector
    open_app(page, server)
    assert page.evaluate(COLORBAR, "detail") == "weight"
    choose(page, "measure", "contributions")
    page.wait_for_function(f"() => ({COLORBAR})('detail') === 'contribution'")
    page.wait_for_function(f"() => ({COLORBAR})('overview') === 'contribution'")
    choose(page, "head", 4)  # a redraw keeps the choice
    page.wait_for_function(f"() => ({TITLE})('detail').includes('head 4 · contributions')")
    choose(page, "measure", "weights")
    page.wait_for_function(f"() => ({COLORBAR})('detail') === 'weight'")

    select_tab(page, "Inside a head")
    steps_show(page, "head 4, query 0")
    page.click("#in-take-factor")  # the Why tab's slider starts at 1: no scaling
    steps_show(page, "the weights with the factor")
    assert page.locator("#in-factor textarea").input_value() == "1"
    page.fill("#in-factor textarea", "")
    page.press("#in-factor textarea", "Enter")
    steps_show(page, "the weights (a row of the heatmap)")
    assert "factor:" not in page.inner_text("#in-footnote4-text")
    page.click("#in-to-why")
    page.wait_for_selector("#to-inside", state="visible")
    page.click("#to-inside")  # back, with the Why tab's factor (its slider starts at 1: no scaling)
    page.wait_for_function("() => document.querySelector('#in-footnote4-text').textContent.includes('factor: × 1')")
    assert page.locator("#in-factor textarea").input_value() == "1"

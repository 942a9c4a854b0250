"""A 100-token sentence in Chromium stays readable: the close-up's tick labels never overlap, measured on the
drawn SVG text (bounding boxes), on a wide screen, on a 390×844 phone (the wide page resized: the figure is drawn
for any width) and on a 430×932 one; focusing on tokens 41–60 with <s>/</s> hidden shows every label of the window
and says so in the title (on the wide page of the first test: ``kept``). The app and Chromium are
tests/conftest.py's. Screenshots are not tests:
``python -m bench.screenshots --only long``.
"""

from __future__ import annotations

from helpers.browser import KeptPages, choose_kind, new_page, open_app
from helpers.layout import assert_no_overlapping_labels, run_long_sentence
from helpers.scripts import GD, LABELS, SETTLED, TITLE
from playwright.sync_api import Browser, Page

SUBTITLE = f"(id) => ({GD})(id)?.layout?.title?.subtitle?.text || ''"  # what the close-up's focus leaves out


def test_a_100_token_close_up_has_no_overlapping_labels(kept: KeptPages, server: str):
    page = kept.open(server)
    run_long_sentence(page)
    assert_no_overlapping_labels(page)


def test_focus_on_tokens_41_to_60_without_special_tokens_shows_every_label_of_the_window(kept: KeptPages, server: str):
    page = kept.open(server)  # the wide page of the test before, its long sentence run
    run_long_sentence(page)
    page.locator("#kind input[value='encoder_self']").check()  # 100 source tokens on both axes
    page.wait_for_function(f"() => ({TITLE})('detail').startsWith('Encoder self-attention')")
    page.get_by_text("Long sentence? Focus the close-up").click()
    for elem_id, value in (("focus-first", "41"), ("focus-last", "60")):
        number = page.locator(f"#{elem_id} input[type=number]")
        number.fill(value)
        number.press("Enter")
    page.wait_for_function(f"() => ({SUBTITLE})('detail').includes('tokens 41–60')")
    page.locator("#hide-special input[type=checkbox]").check()
    page.wait_for_function(f"() => ({SUBTITLE})('detail').includes('hidden, rows renormalised')")
    page.evaluate(SETTLED, "detail")
    labels = page.evaluate(LABELS, "detail")
    assert labels == {"x": 20, "y": 20, "xOverlaps": 0, "yOverlaps": 0}, labels


def test_a_100_token_close_up_resized_to_a_phone_has_no_overlapping_labels(page: Page, server: str):
    """The wide page narrowed to 390×844: plotly redraws the figures at the new width."""
    open_app(page, server)
    run_long_sentence(page)
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_function("() => document.querySelector('#detail .main-svg')?.getBoundingClientRect().width < 390")
    page.evaluate(SETTLED, "detail")
    assert_no_overlapping_labels(page)


def test_a_100_token_cross_attention_close_up_on_a_larger_phone_has_no_overlapping_labels(
        browser: Browser, server: str):
    """430×932, opened at that size (light: the layout is not the theme's)."""
    with new_page(browser, 430, 932) as page:
        open_app(page, server)
        choose_kind(page, "Encoder–decoder attention")
        page.wait_for_function(f"() => ({GD})('detail').layout.title.text.startsWith('Encoder–decoder')")
        run_long_sentence(page)
        assert_no_overlapping_labels(page)

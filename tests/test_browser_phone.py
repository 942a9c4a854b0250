"""Every tab on a phone (390×844), and the small things, in a real browser.

Each tab is opened at 390×844, on one kept page (``kept``): the first by its link (``?tab=…``), the next by a tap
on its name; and measured as drawn (``helpers.layout.PHONE_PROBLEMS``):
stacked, no figure text over other text or past its figure, no text of the page clipped, nothing wider than the
screen, no blank half-screen. Then: every tab one tap away, plotly's toolbar over nothing, a dropdown's text clear
of its arrow, "Copy link" leaving its row still, Head analysis's roles in words at a legible size, and the word-piece
"·" explained. The Attention tab on a phone: tests/test_browser_honest.py. The app and Chromium are
tests/conftest.py's; every page fails its test on a console error or a request off loopback.
"""

from __future__ import annotations

import pytest
from helpers.browser import KeptPages, goto, new_page, open_app
from helpers.layout import PHONE_PROBLEMS
from helpers.scripts import FIGURES_STILL, GD, HAS_HEATMAP
from playwright.sync_api import Browser, Page, expect

PHONE, WIDE = (390, 844), (1280, 720)
# what shows that a tab is drawn: selectors, then page functions
DRAWN = {
    "decoding": (("#decode-top5 .main-svg", "#decode-self .main-svg", "#decode-cross .main-svg"),
                 ("() => (document.querySelector('#decode-status')?.textContent || '').includes('Step 1 of')",)),
    "scaling": (("#variance .main-svg", "#histogram .main-svg", "#softmax-weights .main-svg", "#curves .main-svg",
                 "#live-entropy .main-svg"), (f"() => ({HAS_HEATMAP})('live-changed')",)),
    "inside": (("#in-scores .main-svg", "#in-figure2 .main-svg", "#in-projections .main-svg",
                "#in-head_output .main-svg", "#in-contributions .main-svg", "#in-footnote4 .main-svg"),
               ("() => (document.querySelector('#in-steps')?.textContent || '').includes('softmax')",)),
    "heads": (("#heads-grid .main-svg", "#rollout-enc .hm image", "#rollout-cross .hm image"), ()),
    "architecture": (("#figure1 svg [data-attention='cross']", "#figure2 svg"), ()),
    "lab": (("#lab-summary",), ("() => !!document.querySelector('#lab-heads .main-svg') || (document.querySelector("
                                "'#lab-summary')?.textContent || '').includes('still training')",)),
}


def open_tab(page: Page, server: str, tab: str, query: str = "") -> None:
    """Open the app on ``tab`` by its link, until the tab is drawn and still."""
    goto(page, f"{server}?tab={tab}{query}")
    wait_drawn(page, tab)


def on_phone(kept: KeptPages, server: str, tab: str) -> Page:
    """The module's kept phone page on ``tab``: opened by the tab's link on a page load, else by a tap on its name
    (every tab name shows on a phone)."""
    page = kept.open(server, *PHONE, load=lambda p, _: open_tab(p, server, tab))
    if page.evaluate(f"() => document.querySelector(\"[role=tab][aria-selected=true]\")?.dataset.tabId !== '{tab}'"):
        page.locator(f"[role=tab][data-tab-id='{tab}']").click()
        wait_drawn(page, tab)
    return page


def wait_drawn(page: Page, tab: str) -> None:
    """Until ``tab`` is the one selected, drawn and still."""
    page.wait_for_function(f"() => document.querySelector(\"[role=tab][data-tab-id='{tab}']\")"
                           "?.getAttribute('aria-selected') === 'true'")
    selectors, functions = DRAWN.get(tab, ((), ()))
    for selector in selectors:
        page.locator(selector).first.wait_for(state="visible")
    for function in functions:
        page.wait_for_function(function)
    page.evaluate(FIGURES_STILL)


CELLS = f"""() => [...({GD})('heads-grid').querySelectorAll('.heatmap-label text')]
    .map((t) => ({{text: t.textContent, px: parseFloat(getComputedStyle(t).fontSize)}}))"""
ROLES = f"() => ({GD})('heads-grid').data.map((t) => [t.customdata[0][0][0], t.customdata.flat().map((c) => c[3])])"
WORDS = {"EOS", "<s>", "prev", "next", "self", "punct", "align", "broad", "mixed"}


def assert_roles_in_words(page: Page, least_px: int) -> None:
    """The grid showed "·" for a head of no role, called a decoder head parked on <s> an EOS-sink (its keys hold
    no EOS), and wrote its cells at 10–11 px."""
    cells = page.evaluate(CELLS)
    assert cells and min(c["px"] for c in cells) >= least_px, cells
    words = {c["text"] for c in cells}
    assert words <= WORDS and "<s>" in words, words  # "·" was the word for mixed
    roles = dict(page.evaluate(ROLES))
    assert "EOS-sink" not in roles["decoder_self"] and "start-sink" not in roles["encoder_self"] + roles["cross"]
    assert "start-sink" in roles["decoder_self"]  # this sentence's decoder has heads parked on <s>
    assert "start-sink" in page.inner_text("#heads-rules")


# ------------------------------------------------------------------------------------------------ every tab on a phone
@pytest.mark.parametrize("tab", list(DRAWN))
def test_a_tab_on_a_phone_is_stacked_without_overlapping_or_cut_text_or_blank_screens(kept: KeptPages, server: str,
                                                                                      tab: str):
    """Inside a head was the worst: the score chart and the steps table side by side (the table squeezed to its
    first column, the page 8,200 px tall), panel labels printed over each other ("α · 12 × 1" over "α_j v_j"),
    titles cut at the right edge."""
    page = on_phone(kept, server, tab)
    assert page.evaluate(PHONE_PROBLEMS) == []
    if tab == "inside":  # the steps table: a card per step, its "what" column a readable width
        what = page.evaluate("() => Math.min(...[...document.querySelectorAll('#in-steps td:nth-child(2)')]"
                             ".filter((td) => td.textContent.trim())"
                             ".map((td) => td.getBoundingClientRect().width))")
        assert what > 250, what
    if tab == "heads":  # its roles in words, 12 px or more, on a phone too
        assert_roles_in_words(page, 12)


def test_head_analysis_writes_its_roles_at_16_px_in_presentation_mode(browser: Browser, server: str):
    with new_page(browser, *WIDE) as page:
        open_tab(page, server, "heads", "&present=1")
        page.wait_for_function("() => document.body.classList.contains('attn-present')")
        assert_roles_in_words(page, 16)


# ------------------------------------------------------------------------------------------------- the small things
def assert_dropdown_text_clear_of_its_arrow(page: Page) -> None:
    """The examples menu's prompt ran under its arrow ("… to open its vie▾")."""
    boxes = page.evaluate("""() => [...document.querySelectorAll('input[role=combobox]')]
        .filter((i) => i.offsetParent && i.closest('.wrap')?.querySelector('.icon-wrap'))
        .map((i) => { const r = i.getBoundingClientRect(), cs = getComputedStyle(i);
                      const icon = i.closest('.wrap').querySelector('.icon-wrap').getBoundingClientRect();
                      return {id: i.closest('[id]')?.id, text_right: r.right - parseFloat(cs.paddingRight),
                              arrow_left: icon.left}; })""")
    assert any(b["id"] == "example" for b in boxes), boxes
    for b in boxes:
        assert b["text_right"] <= b["arrow_left"] + 0.5, b


ROW = ("() => [...document.querySelectorAll('#action-row > *')].filter((e) => e.id !== 'copy-link-note')"
       ".map((e) => { const r = e.getBoundingClientRect(); return [e.id, r.left, r.top, r.width, r.height]; })")


def assert_copy_link_keeps_its_row(page: Page, size: tuple[int, int]) -> None:
    """"Link copied." went into the button row as a new item, and the row reflowed (the example menu shrank, the
    presentation switch wrapped); now it is a note over the page's foot, gone after a few seconds."""
    before = page.evaluate(ROW)
    page.click("#copy-link")
    page.wait_for_function("() => /copied|address bar/.test(document.querySelector('#copy-link-note')?.textContent"
                           " || '')")
    assert page.evaluate(ROW) == before
    note = page.locator("#copy-link-note").bounding_box()
    assert note["y"] + note["height"] <= size[1] and note["x"] >= 0 and note["x"] + note["width"] <= size[0]
    page.wait_for_function("() => !document.querySelector('#copy-link-note')?.textContent")


def test_on_a_phone_every_tab_is_one_tap_away_and_nothing_covers_or_runs_under_anything(browser: Browser,
                                                                                       server: str):
    """Only one or two tab names showed, the rest behind a "More tabs" menu; plotly's toolbar, shown on a tap,
    covered titles and legends; the examples menu's text ran under its arrow; "Copy link" reflowed its row."""
    with new_page(browser, *PHONE) as page:
        open_app(page, server)
        assert_dropdown_text_clear_of_its_arrow(page)
        assert_copy_link_keeps_its_row(page, PHONE)
        tabs = page.evaluate("() => [...document.querySelectorAll('[role=tab]')].map((t) => {"
                             " const r = t.getBoundingClientRect();"
                             " return [t.dataset.tabId, r.left, r.right, r.width]; })")
        assert len(tabs) >= 7 and all(w > 0 and left >= 0 and right <= PHONE[0] for _, left, right, w in tabs), tabs
        assert not page.get_by_role("button", name="More tabs").is_visible()
        page.get_by_role("tab", name="Head analysis").click()  # a far tab, in one tap
        page.locator("#heads-grid .main-svg").first.wait_for()
        box = page.locator("#heads-grid .js-plotly-plot").bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 40)  # hover: plotly's cue to show its toolbar
        page.mouse.click(box["x"] + 5, box["y"] + 5)
        bar = page.evaluate(f"() => {{ const m = ({GD})('heads-grid')?.querySelector('.modebar-container');"
                            " if (!m) return null; const r = m.getBoundingClientRect();"
                            " return {shown: getComputedStyle(m).display !== 'none' && r.width > 0, w: r.width}; }")
        assert not bar or not bar["shown"], bar


def test_on_a_wide_screen_too_and_the_word_piece_dot_is_explained(browser: Browser, server: str):
    """The dropdown and "Copy link" on a projector's screen; then "eine ·m", "·ing": the dot before a word piece was
    never explained. The status line says what it means with a word of the sentence (every tab's "How to read
    this" that shows pieces says it too: tests/test_views.py)."""
    with new_page(browser, *WIDE) as page:
        open_app(page, server)
        assert_dropdown_text_clear_of_its_arrow(page)
        assert_copy_link_keeps_its_row(page, WIDE)
        page.fill("#source textarea", "A juggler performs tricks on the halfpipe.")
        page.click("#run")
        page.wait_for_function("() => /continues the word before it/.test(document.querySelector('#status')"
                               "?.textContent || '')")
        status = page.inner_text("#status")
        assert "“·” marks a word piece that continues the word before it" in status
        assert "juggle ·r = juggler" in status or "perform ·s = performs" in status, status
        page.locator("#attention-tab .how-to-read").first.click()  # unfolded (Gradio draws its text as it opens)
        expect(page.locator("#attention-tab .how-to-read").first).to_contain_text("continues the word before it")


# A word of a cell broken over lines (its text's rects on more than one line), as the Model card's were: "d_ m o d el"
BROKEN_WORDS = """(root) => {
  const broken = [];
  for (const cell of document.querySelectorAll(`${root} :is(td, th)`)) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.textContent.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()].filter((r) => r.width).map((r) => Math.round(r.top)));
        if (tops.size > 1) broken.push(m[0]);
      }
    }
  }
  return broken;
}"""


def test_on_a_phone_a_shared_link_opens_at_its_figure_and_tables_keep_their_words(browser: Browser, server: str):
    """A shared Attention link drew its close-up two screens down (y ≈ 1,430): the page now opens scrolled to it. The
    Model card's tables broke words letter by letter; now each word stays on one line, a table wider than the screen
    scrolls sideways in its box, says so, and keeps its first column in view."""
    with new_page(browser, *PHONE) as page:
        goto(page, f"{server}?tab=attention&kind=cross&layer=5&head=4")
        page.wait_for_function(f"() => ({HAS_HEATMAP})('detail')")
        page.wait_for_function("() => { const r = document.getElementById('detail').getBoundingClientRect();"
                               " return r.top >= 0 && r.top <= 40 && scrollY > 0; }")
        page.locator("[role=tab][data-tab-id='model-card']").click()
        page.locator("#model-card-text table").first.wait_for(state="visible")
        assert page.evaluate(BROKEN_WORDS, "#model-card-text") == []
        tables = page.evaluate("""() => [...document.querySelectorAll('#model-card-text table')].map((t) => ({
            wide: t.scrollWidth > t.clientWidth + 1, scrolls: getComputedStyle(t).overflowX === 'auto',
            cue: getComputedStyle(t, '::before').content,
            sticky: getComputedStyle(t.querySelector('td, th')).position}))""")
        assert tables and all(t["scrolls"] and "scroll sideways" in t["cue"] and t["sticky"] == "sticky"
                              for t in tables), tables
        assert any(t["wide"] for t in tables), tables  # (the check above is about something: a table does scroll)

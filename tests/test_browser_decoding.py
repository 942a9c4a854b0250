"""Step-by-step decoding in a real browser: the Decoding tab (step-through, arrow keys, predict-then-reveal) and the
alignment (lines) view of the Attention tab, with Debian's Chromium driven by Playwright.

One `python app.py` (the shipped model) and one browser for the whole run (tests/conftest.py). The tests take turns on
two kept pages at 1280×720 (``kept``: one dark, one light; each test sets the view it needs), which fail a test on a
console error, a page error, a dialog or a request off loopback. The time from a click to the
alignment view drawn at 60 tokens a side is the benchmark's (``python -m bench --sections browser``), not a test's.
Screenshots are not tests: ``python -m bench.screenshots``.
"""

from __future__ import annotations

import re

from helpers.browser import KeptPages, value
from helpers.scripts import GD, TITLE, VALUE, still
from playwright.sync_api import Page

from bench.browser import DOT, LINES_WORDS
from bench.common import words
from viz.views.decode_steps import HELD_STEPS

TAB_LABELS = {"attention": "Attention", "decoding": "Decoding, step by step"}
LONG_TEXT = words(LINES_WORDS)  # 60 SentencePiece tokens with EOS (the shipped model's tokenizer)
# a sentence of more than HELD_STEPS steps (21) in the shipped model's translation
LONG_SENTENCE = ("A group of young children in colorful uniforms are playing soccer on a large green field next to a "
                 "school.")

STATUS = "() => document.querySelector('#decode-status')?.textContent || ''"
N_BARS = f"(id) => {{ const gd = ({GD})(id); return gd ? gd.data.filter(t => t.type === 'bar').length : -1; }}"
# The alignment view as drawn now: per line trace its head and the (query, key) of each segment shown (the page
# script hides the path.js-line of the others; plotly draws one per segment, in the order of the trace's meta).
SEGMENTS = f"""() => [...({GD})('lines').querySelectorAll('.scatterlayer .trace')].map(g => {{
  const tr = g.__data__ && g.__data__[0] && g.__data__[0].trace, m = tr && tr.meta && tr.meta.attnLines;
  if (!m) return null;
  const paths = [...g.querySelectorAll('path.js-line')];
  if (paths.length !== m.q.length) throw new Error(`trace ${{tr.index}}: ${{paths.length}} paths`);
  const segs = paths.map((p, s) => [m.q[s], m.k[s], p.style.display]).filter(s => s[2] !== 'none')
    .map(s => s.slice(0, 2));
  return {{head: m.head, all: m.q.length, segs}};
}}).filter(Boolean)"""
# Plotly's events for a figure drawn again or changed through its API (a token's lines are shown without any)
REPLOTS = ("plotly_afterplot", "plotly_react", "plotly_restyle", "plotly_relayout", "plotly_update", "plotly_redraw")


def opened(kept: KeptPages, url: str) -> Page:
    """The module's kept page at 1280×720 opened on ``url`` (downloads allowed)."""
    return kept.open(url, 1280, 720)


# ---------------------------------------------------------------------------------------------- helpers
def status(page: Page) -> str:
    return page.evaluate(STATUS)


def wait_status(page: Page, pattern: str) -> str:
    page.wait_for_function(f"(p) => new RegExp(p).test(({STATUS})())", arg=pattern)
    return status(page)


def select(page: Page, tab_id: str) -> None:
    """Open a tab by its id; on a narrow page Gradio lists most tabs in a "More tabs" menu (by label only)."""
    tab = page.locator(f"[role=tab][data-tab-id={tab_id}]")
    if tab.count() and tab.first.is_visible():
        tab.first.click()
    else:
        page.get_by_role("button", name="More tabs").click()
        page.locator(".overflow-dropdown button", has_text=TAB_LABELS[tab_id]).click()
    page.wait_for_function(f"() => document.querySelector('[role=tab][data-tab-id={tab_id}]')"
                           "?.getAttribute('aria-selected') === 'true'")


def open_decoding(page: Page) -> int:
    """Open the tab (it takes over the Attention tab's sentence) at step 1 (an earlier test may have left a later
    one); the number of steps."""
    select(page, "decoding")
    text = wait_status(page, r"Step \d+ of \d+")
    while (step := int(re.search(r"Step (\d+) of", text)[1])) > 1:
        page.click("#step-prev")
        text = wait_status(page, f"Step {step - 1} of")
    return int(re.search(r"Step 1 of (\d+)", text)[1])


LINES_STILL = still("#lines .main-svg, #lines .scatterlayer path")


def dot(page: Page, which: list) -> tuple[float, float]:
    """Where a token's dot of the alignment view is on screen, once the figure keeps still (Gradio resizes a plot
    after drawing it: a click at a box read before that may miss the dot)."""
    page.evaluate(LINES_STILL)
    return page.evaluate(DOT, which)


def lines_drawn(page: Page, title_part: str = "") -> None:
    """The alignment view shows ``title_part``. It is drawn once it is on screen (the page asks for it): scrolled
    there first."""
    page.locator("#lines").scroll_into_view_if_needed()
    page.wait_for_function(
        f"(part) => {{ const gd = ({GD})('lines'); return !!(gd && gd.data.some(t => t.meta && t.meta.attnLines)"
        " && gd.querySelector('.scatterlayer path') && gd.layout.title.text.includes(part)); }",
        arg=title_part,
    )


def shown_segments(page: Page) -> list[list[int]]:
    return [seg for t in page.evaluate(SEGMENTS) for seg in t["segs"]]


def wait_segments(page: Page, n: int) -> None:
    """Until exactly ``n`` line segments are shown."""
    page.wait_for_function(f"(n) => ({SEGMENTS})().reduce((s, t) => s + t.segs.length, 0) === n", arg=n)


def step_to_3(page: Page, n_steps: int) -> str:
    """From step 1, two clicks on Next: step 3, drawn; its status text."""
    page.click("#step-next")
    page.click("#step-next")
    text = wait_status(page, f"Step 3 of {n_steps}")
    page.wait_for_function(f"() => ({TITLE})('decode-cross').includes('step 3')")
    return text


# ------------------------------------------------------------------------------------------- the Decoding tab
def test_the_decoding_tab_takes_the_sentence_over_and_steps_with_buttons_and_arrow_keys(kept: KeptPages, server: str):
    page = opened(kept, server + "?__theme=dark")
    assert page.evaluate("() => document.body.classList.contains('dark')")
    n_steps = open_decoding(page)
    assert n_steps > 4
    assert page.evaluate(VALUE, "decode-source") == page.evaluate(VALUE, "source")  # follows the Attention tab
    assert page.evaluate(N_BARS, "decode-top5") == 1

    text = step_to_3(page, n_steps)
    chosen = re.search(r"Next token: (\S+)", text)[1].lstrip("·")  # the token step 3 writes...
    page.click("#step-prev")
    wait_status(page, f"Step 2 of {n_steps}")
    page.locator("#decode-status").click()  # focus off the fields: the arrow keys step
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    text = wait_status(page, f"Step 4 of {n_steps}")
    assert re.search(r"Written so far.*" + re.escape(chosen), text), text  # ...is in step 4's prefix
    page.keyboard.press("ArrowLeft")
    wait_status(page, f"Step 3 of {n_steps}")
    # step 3 sees 3 positions; the n - 3 not written yet are drawn masked, their tokens never named
    page.wait_for_function(f"() => ({TITLE})('decode-self').includes('step 3')")
    masked = page.evaluate(f"() => ({GD})('decode-self').calcdata[1].length")  # after decoding bdata
    assert masked == n_steps - 3
    assert page.evaluate(f"() => ({GD})('decode-top5').layout.yaxis.ticktext[0]").endswith("✓ chosen")


def test_predict_then_reveal_hides_the_next_token_until_reveal(kept: KeptPages, server: str):
    page = opened(kept, server + "?__theme=dark")
    n_steps = open_decoding(page)
    chosen = re.search(r"Next token: (\S+)", step_to_3(page, n_steps))[1].lstrip("·")
    assert page.locator("#reveal").is_disabled()
    page.get_by_label("Predict, then reveal").check()
    text = wait_status(page, "Next token: hidden")
    page.wait_for_function(f"() => ({N_BARS})('decode-top5') === 0")
    assert chosen not in text.split("Next token")[1]
    page.locator("#reveal").click()
    wait_status(page, r"Next token: (?!hidden)\S")
    page.wait_for_function(f"() => ({N_BARS})('decode-top5') === 1")
    page.locator("#decode-status").click()
    page.keyboard.press("ArrowRight")  # a new step starts hidden again
    wait_status(page, f"Step 4 of {n_steps}[\\s\\S]*Next token: hidden")
    page.wait_for_function(f"() => ({N_BARS})('decode-top5') === 0")
    page.get_by_label("Predict, then reveal").uncheck()
    wait_status(page, r"Next token: (?!hidden)\S")


def rows_show(page: Page, *parts: str) -> None:
    """Until both attention rows' titles show every one of ``parts``."""
    page.wait_for_function(f"(parts) => ['decode-self', 'decode-cross'].every(id => parts.every(p => ({TITLE})(id)"
                           ".includes(p)))", arg=list(parts))


def test_a_head_is_drawn_from_the_views_the_page_holds_and_beyond_them_asked_of_the_server(kept: KeptPages,
                                                                                             server: str):
    """Once a view is drawn the page holds every head's view of its layer (decode_steps.held_heads): a head chosen is
    drawn with no call to the server, as the server draws it, and a step after it keeps it. A sentence beyond
    HELD_STEPS steps holds none: a head chosen is asked of the server."""
    page = opened(kept, server + "?__theme=dark")
    n_steps = open_decoding(page)
    assert n_steps <= HELD_STEPS
    page.locator("#decode-head input[value='0']").check()
    rows_show(page, "mean of")
    page.wait_for_function(f"() => ({VALUE})('decode-held').length > 0")  # asked for once the page idled
    calls = []
    page.on("request", lambda request: calls.append(request.url) if "/queue/join" in request.url else None)
    page.click("#decode-head label:has(input[value='3'])")
    rows_show(page, "step 1", "layer 6 · head 3")
    assert "layer 6 · head 3" in status(page)
    page.click("#step-next")
    rows_show(page, "step 2", "head 3")
    assert calls == []  # drawn by the page alone
    held_rows = page.evaluate(f"() => ['decode-self', 'decode-cross'].map(id => Array.from(({GD})(id).calcdata[0]"
                              ".map(bar => bar.s)))")
    number = page.locator("#decode-layer input[type=number]")
    for layer in ("5", "6"):  # the server draws layer 6's head 3 again
        number.fill(layer)
        number.press("Enter")
        rows_show(page, "step 2", f"layer {layer} · head 3")
    assert calls
    drawn_rows = page.evaluate(f"() => ['decode-self', 'decode-cross'].map(id => Array.from(({GD})(id).calcdata[0]"
                               ".map(bar => bar.s)))")
    assert drawn_rows == held_rows

    page.fill("#decode-source textarea", LONG_SENTENCE)
    page.click("#decode-run")
    text = wait_status(page, r"Step 1 of \d+")
    assert int(re.search(r"Step 1 of (\d+)", text)[1]) > HELD_STEPS
    calls.clear()
    page.click("#decode-head label:has(input[value='2'])")
    rows_show(page, "step 1", "head 2")
    assert calls  # asked of the server
    page.click("#step-next")
    rows_show(page, "step 2", "head 2")


def test_on_a_phone_a_new_sentence_is_taken_over_when_the_tab_opens_again(kept: KeptPages, server: str):
    """The same page resized: the tab names wrap onto more lines, every tab one tap away."""
    page = opened(kept, server + "?__theme=dark")
    open_decoding(page)
    page.set_viewport_size({"width": 390, "height": 844})
    select(page, "attention")
    # The translation comes in the same event as the session's result. (Not the status's text: while the run is
    # pending it holds Gradio's progress tracker, so it changes before the result has come.)
    before = value(page, "translation")
    page.fill("#source textarea", "The cat sat on the mat.")
    page.click("#run")
    page.wait_for_function(f"(old) => ({VALUE})('translation') !== old", arg=before)
    assert page.locator("[role=tab][data-tab-id=decoding]").first.is_visible()  # no "More tabs" menu
    select(page, "decoding")
    page.wait_for_function(f"() => ({VALUE})('decode-source') === 'The cat sat on the mat.'")
    wait_status(page, "Step 1 of")
    page.click("#step-next")
    page.click("#step-next")
    wait_status(page, r"Step 3 of \d+[\s\S]*Next token: (?!hidden)\S")
    page.wait_for_function(f"() => ({TITLE})('decode-cross').includes('step 3')")


# ------------------------------------------------------------------------------------------ the alignment view
def test_the_alignment_view_draws_every_heads_lines_and_a_hovered_token_keeps_its_own(kept: KeptPages, server: str):
    page = opened(kept, server)
    lines_drawn(page, "all heads")
    every = page.evaluate(SEGMENTS)
    assert {t["head"] for t in every} == set(range(1, 9))
    n_all = sum(len(t["segs"]) for t in every)
    assert n_all == sum(t["all"] for t in every) > 0

    x, y = dot(page, ["q", 2])
    page.mouse.move(x, y)  # hover query token 2: only its lines stay
    page.wait_for_function(f"(n) => ({SEGMENTS})().reduce((s, t) => s + t.segs.length, 0) < n", arg=n_all)
    shown = shown_segments(page)
    assert shown and all(q == 2 for q, _ in shown)
    page.mouse.move(5, 5)  # leave: every line again
    wait_segments(page, n_all)


def test_a_click_pins_a_tokens_lines_and_a_second_click_lets_go(kept: KeptPages, server: str):
    page = opened(kept, server)
    lines_drawn(page, "all heads")
    n_all = sum(len(t["segs"]) for t in page.evaluate(SEGMENTS))
    x, y = dot(page, ["k", 0])
    page.mouse.click(x, y)  # a click pins key token 0's lines...
    page.wait_for_function(f"() => ({GD})('lines').dataset.attnFocus === 'k:0'")
    page.mouse.move(5, 5)  # (plotly's unhover runs in the mouse event; two frames later the page shows it)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    shown = shown_segments(page)
    assert shown and all(k == 0 for _, k in shown) and len(shown) < n_all  # ...past the mouse leaving
    x, y = dot(page, ["k", 0])
    page.mouse.click(x, y)  # a second click lets go
    page.mouse.move(5, 5)
    wait_segments(page, n_all)


def test_the_alignment_view_follows_the_tabs_head_kind_and_layer(kept: KeptPages, server: str):
    page = opened(kept, server)
    lines_drawn(page, "all heads")
    page.locator("#lines-head input[value='3']").check()
    lines_drawn(page, "· head 3")
    assert {t["head"] for t in page.evaluate(SEGMENTS)} == {3}
    page.locator("#kind input[value='cross']").check()
    lines_drawn(page, "Encoder–decoder attention · layer")
    page.locator("#kind input[value='encoder_self']").check()
    lines_drawn(page, "Encoder self-attention · layer")
    number = page.locator("#layer input[type=number]")
    number.fill("2")
    number.press("Enter")
    lines_drawn(page, "Encoder self-attention · layer 2 · head 3")


def test_the_alignment_view_exports_as_svg_named_by_its_view(kept: KeptPages, server: str):
    page = opened(kept, server)
    page.locator("#kind input[value='encoder_self']").check()
    page.locator("#lines-head input[value='3']").check()
    number = page.locator("#layer input[type=number]")
    number.fill("2")
    number.press("Enter")
    lines_drawn(page, "Encoder self-attention · layer 2 · head 3")
    if not page.get_by_role("button", name="Alignment as SVG").is_visible():
        page.get_by_role("button", name="Export").click()
    with page.expect_download() as info:
        page.get_by_role("button", name="Alignment as SVG").click()
    assert info.value.suggested_filename == "encoder_self_lines_layer2_head3.svg"
    assert info.value.path().read_bytes().startswith(b"<svg")


def test_at_60_tokens_a_side_a_tokens_lines_are_shown_without_drawing_the_figure_again(kept: KeptPages, server: str):
    """Encoder self-attention of a 60-token sentence, all 8 heads: a click on a token shows its lines by hiding the
    others in the SVG (a restyle of x and y took a median 1.8 s here); a head choice is a new figure."""
    page = opened(kept, server)
    page.locator("#kind input[value='encoder_self']").check()
    page.locator("#lines-head input[value='0']").check()  # all heads
    page.fill("#source textarea", LONG_TEXT)
    page.click("#run")
    page.wait_for_function("() => /60 source tokens/.test(document.querySelector('#status').textContent)")
    lines_drawn(page, "Encoder self-attention · layer")
    page.wait_for_function(f"() => ({GD})('lines')?.layout?.yaxis?.ticktext?.length === 60")
    n_all = sum(len(t["segs"]) for t in page.evaluate(SEGMENTS))
    page.evaluate(f"""(events) => {{ const gd = ({GD})('lines'); window.attnLines = gd; window.attnReplots = [];
        for (const name of events) gd.on(name, (d) => window.attnReplots.push([name, JSON.stringify(d)])); }}""",
                  list(REPLOTS))
    for i in range(3):
        token = 10 + 7 * i
        x, y = dot(page, ["q", token])
        page.mouse.click(x, y)  # pin
        page.wait_for_function(f"(f) => ({GD})('lines').dataset.attnFocus === f", arg=f"q:{token}")
        shown = shown_segments(page)
        assert shown and all(q == token for q, _ in shown)
        page.mouse.click(x, y)  # and let go: every line again (once the mouse has left the token)
        page.wait_for_function(f"() => !({GD})('lines').dataset.attnFocus")
        page.mouse.move(5, 5)
        wait_segments(page, n_all)
    assert page.evaluate(f"() => ({GD})('lines') === window.attnLines")  # the same figure, drawn once
    replots = page.evaluate("() => window.attnReplots")
    # (Gradio's page resizes the plot now and then: plotly_autosize, then a relayout of nothing; not a change)
    assert [event for event in replots if event != ["plotly_relayout", "{}"]] == []
    for head, title_part in ((5, "· head 5"), (0, "all heads")):  # one head, then all 8 again: a new figure each
        page.locator(f"#lines-head input[value='{head}']").check()
        lines_drawn(page, title_part)
    assert {t["head"] for t in page.evaluate(SEGMENTS)} == set(range(1, 9))

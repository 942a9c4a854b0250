"""Layout checks measured on a page as drawn, shared by the browser test modules: nothing overlaps on a phone or a
projector, and a 100-token close-up keeps its tick labels apart."""

from __future__ import annotations

from playwright.sync_api import Page

from bench.common import SENTENCES
from helpers.browser import choose_kind, select_any_tab, source_tokens
from helpers.scripts import GD, HAS_HEATMAP, LABELS, SETTLED, TEXT_QUADS

LONG = " ".join(SENTENCES)  # ~140 words: cut to the model's 100 tokens (with a warning)


def rect(page: Page, selector: str) -> dict | None:
    return page.evaluate(
        "(s) => { const e = document.querySelector(s); if (!e) return null; const r = e.getBoundingClientRect();"
        " return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width}; }",
        selector,
    )


def boxes_overlap(a: dict | None, b: dict | None) -> bool:
    if not a or not b:
        return False
    apart = a["right"] <= b["left"] or b["right"] <= a["left"] or a["bottom"] <= b["top"] or b["bottom"] <= a["top"]
    return not apart


def assert_layout_without_overlaps(page: Page, width: int) -> None:
    """On the page as it is (a phone's or a projector's viewport): the close-up's title whole and clear of its label,
    the scaling tab's legend and subplot titles clear of each other, Figure 1 at a legible size. It ends on the
    Architecture tab."""
    choose_kind(page, "Decoder self-attention")
    page.wait_for_function(f"() => (({GD})('detail').layout.shapes || []).length > 0")
    # the close-up's title is whole (inside its figure) and no plot label covers it
    title_box, plot_box = rect(page, "#detail .gtitle"), rect(page, "#detail .main-svg")
    assert title_box and title_box["right"] <= plot_box["right"] + 1, (title_box, plot_box)
    assert not boxes_overlap(rect(page, "#detail [data-testid=block-label]"), title_box)

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

    select_any_tab(page, "Architecture", "#figure1")
    page.wait_for_selector("#figure1 svg [data-attention='cross']")
    # Figure 1 at a legible size: at least its own width (its smallest text 9.5 px), scrolled sideways on a phone
    # (waited for: the tab's own Figure 1, with the session's shapes, replaces the first one as the tab opens)
    page.wait_for_function("(w) => (document.querySelector('#figure1 svg')?.getBoundingClientRect().width || 0) >= w",
                           arg=min(890, width - 80))
    smallest = page.evaluate("() => Math.min(...[...document.querySelectorAll('#figure1 svg text')]"
                             ".map(t => t.getBoundingClientRect().height).filter(h => h > 0))")
    assert smallest >= 8, smallest


# The open tab as drawn on a phone: what is wrong with it, as a list of lines (empty when nothing is). Every figure's
# text (titles, labels, legends, cell text; the hover aside) inside its figure and the screen and clear of the
# figure's other text; no text of the page clipped by its box; nothing wider than the screen; every figure as wide
# as the tab (stacked, never squeezed beside a table or another figure); and no blank stretch longer than half a
# screen between two drawn things (text, inputs, images, a trace's marks). Plotly's hover layer is left out.
PHONE_PROBLEMS = """() => {
    const panel = [...document.querySelectorAll('[role=tabpanel]')].find((p) => p.offsetParent);
    const problems = [], W = document.documentElement.clientWidth, H = window.innerHeight;
    const shown = (e) => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
    """ + TEXT_QUADS + """
    const where = (e) => e.closest('[id]:not(.js-plotly-plot)')?.id || '?';
    const width = panel.getBoundingClientRect().width;
    for (const gd of panel.querySelectorAll('.js-plotly-plot')) {
        if (!shown(gd)) continue;
        const box = gd.querySelector('.main-svg').getBoundingClientRect();
        if (box.width < 0.85 * width) problems.push(`${where(gd)}: squeezed: ${Math.round(box.width)} of ${width} px`);
        const texts = [...gd.querySelectorAll('.main-svg text')]
            .filter((t) => !t.closest('.hoverlayer') && t.textContent.trim() && shown(t)
                    && getComputedStyle(t).visibility !== 'hidden')
            .map((t) => ({text: t.textContent.trim().slice(0, 40), r: t.getBoundingClientRect(), q: quad(t)}));
        for (const t of texts)
            if (t.r.left < box.left - 1 || t.r.right > box.right + 1 || t.r.right > W + 1 || t.r.left < -1)
                problems.push(`${where(gd)}: cut: "${t.text}"`);
        for (let i = 0; i < texts.length; i++)
            for (let j = i + 1; j < texts.length; j++)
                if (hit(texts[i].q, texts[j].q))
                    problems.push(`${where(gd)}: "${texts[i].text}" over "${texts[j].text}"`);
    }
    for (const e of panel.querySelectorAll('*')) {
        if (!shown(e) || e.closest('.js-plotly-plot') || e.matches('input, textarea, select')) continue;
        if (![...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
        const cs = getComputedStyle(e);
        if (cs.clipPath === 'inset(50%)') continue;  // text for screen readers only (a11y.css), never seen
        if ((cs.textOverflow === 'ellipsis' || cs.overflowX === 'hidden') && e.scrollWidth > e.clientWidth + 1)
            problems.push(`text cut: "${e.textContent.trim().slice(0, 50)}"`);
    }
    if (document.documentElement.scrollWidth > W + 1)
        problems.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} px`);
    const marks = [];
    const walker = document.createTreeWalker(panel, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        if (!n.textContent.trim()) continue;
        const range = document.createRange();
        range.selectNodeContents(n);
        marks.push(...[...range.getClientRects()].filter((r) => r.width > 0 && r.height > 0));
    }
    const drawn = 'input, textarea, button, img, canvas, svg image, .trace path, .trace rect, .shapelayer path,'
        + ' svg rect';
    marks.push(...[...panel.querySelectorAll(drawn)].map((e) => e.getBoundingClientRect()).filter((r) => r.height > 0));
    marks.sort((a, b) => a.top - b.top);
    let reach = panel.getBoundingClientRect().top;
    for (const r of marks) {
        if (r.top - reach > H / 2)
            problems.push(`${Math.round(r.top - reach)} px blank at ${Math.round(reach + scrollY)}`);
        reach = Math.max(reach, r.bottom);
    }
    return problems;
}"""


def run_long_sentence(page: Page) -> None:
    """Run the long sentence on the Attention tab of a page already open; until its close-up is drawn and still."""
    page.fill("#source textarea", LONG)
    page.click("#run")
    page.wait_for_function("() => /100 source tokens/.test(document.querySelector('#status').textContent)")
    page.wait_for_function("() => document.querySelectorAll('#detail .xtick text').length > 0")
    page.evaluate(SETTLED, "detail")


def assert_no_overlapping_labels(page: Page) -> None:
    assert source_tokens(page) == 100
    labels = page.evaluate(LABELS, "detail")
    assert labels["xOverlaps"] == 0 and labels["yOverlaps"] == 0, labels
    assert labels["x"] >= 8 and labels["y"] >= 15, labels  # thinned, not emptied

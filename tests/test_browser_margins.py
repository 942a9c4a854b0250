"""The overview and the close-up drawn with the margins the server worked out (viz.margins: drawn once), in Chromium:
nothing is cut or overlaps — every text of the figure inside it, tick labels beside the plot area (not over it, not
over each other), axis titles clear of the labels, colour bar and legend right of the plot — for long words, CJK
and emoji, each kind of attention, presentation mode, and after the page is narrowed to a phone (the page script
picks the column labels' angle again); another tab and back draws nothing again. And the width table of
viz.margins is never narrower than the fonts this machine draws with. The app and Chromium are
tests/conftest.py's.
"""

from __future__ import annotations

import pytest
from helpers.browser import KeptPages, new_page, open_app, select_tab
from helpers.scripts import GD, SETTLED
from playwright.sync_api import Browser, Page

from viz import margins

SENTENCES = ("Supercalifragilisticexpialidocious internationalization WWWWWWWW mmmmmm.",
             "The 東京 tower 🎉 is tall, isn't it?")
# What is wrong with one drawn plot: texts outside the figure, tick labels over the plot area or over each other,
# axis titles over their tick labels, the colour bar or legend over the plot area; [] when nothing is.
PROBLEMS = f"""(id) => {{
    const gd = ({GD})(id), bad = [];
    if (!gd || !gd._fullLayout) return ['not drawn'];
    if (!gd.layout.meta || !gd.layout.meta.margins) bad.push('no margins from the server');
    if (gd.layout.margin.autoexpand !== false) bad.push('plotly sized the margins');
    const svg = gd.querySelector('.main-svg').getBoundingClientRect();
    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;  // the plot area as drawn (square cells: a part)
    const plot = {{left: svg.left + xa._offset, right: svg.left + xa._offset + xa._length,
                   top: svg.top + ya._offset, bottom: svg.top + ya._offset + ya._length}};
    const boxes = (sel) => [...gd.querySelectorAll(sel)].map((e) => [e.textContent, e.getBoundingClientRect()])
        .filter(([, r]) => r.width > 0 && r.height > 0);
    const round = (r) => [r.left, r.top, r.right, r.bottom].map(Math.round).join(',');
    const meet = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
    for (const [t, r] of boxes('.main-svg text')) {{
        if (r.left < svg.left - 1 || r.right > svg.right + 1 || r.top < svg.top - 1 || r.bottom > svg.bottom + 1)
            bad.push(`cut: "${{t}}" at ${{round(r)}} in ${{round(svg)}}`);
    }}
    const xs = boxes('.xtick text'), ys = boxes('.ytick text');
    for (const [t, r] of xs) if (r.top < plot.bottom - 1) bad.push(`column label over the plot: "${{t}}"`);
    for (const [t, r] of ys) if (r.right > plot.left + 1) bad.push(`row label over the plot: "${{t}}"`);
    const angle = Math.abs(Number(gd.layout.xaxis.tickangle) || 0);  // slanted labels' boxes meet by design
    for (let i = 1; i < xs.length && angle % 90 === 0; i++) {{
        if (meet(xs[i - 1][1], xs[i][1])) bad.push(`column labels overlap: "${{xs[i - 1][0]}}", "${{xs[i][0]}}"`);
    }}
    for (const [t, r] of boxes('.g-xtitle text, .g-ytitle text')) {{
        for (const [l, b] of [...xs, ...ys]) if (meet(r, b)) bad.push(`axis title "${{t}}" over label "${{l}}"`);
    }}
    for (const [t, r] of boxes('.colorbar text, .legend text'))
        if (r.left < plot.right - 1) bad.push(`colour bar or legend over the plot: "${{t}}"`);
    return bad;
}}"""


def redrawn(page: Page, action) -> None:
    """Do ``action`` and wait until both figures are new and their labels still."""
    page.evaluate(f"() => {{ window.attnOld = ['overview', 'detail'].map((id) => ({GD})(id)); }}")
    action()
    page.wait_for_function(f"""() => ['overview', 'detail'].every((id, i) => {{
        const gd = ({GD})(id); return gd && gd._fullLayout && (gd !== window.attnOld[i]); }})""")
    for plot_id in ("overview", "detail"):
        page.evaluate(SETTLED, plot_id)


def problems(page: Page) -> dict[str, list[str]]:
    return {plot_id: page.evaluate(PROBLEMS, plot_id) for plot_id in ("overview", "detail")}


def open_settled(page: Page, server: str) -> None:
    open_app(page, server)
    for plot_id in ("overview", "detail"):
        page.evaluate(SETTLED, plot_id)


def kept_settled(kept: KeptPages, server: str) -> Page:
    """The module's kept page: the tests before the narrowed one take turns on it, each from the view the one before
    left (the first on the view the page opens with)."""
    return kept.open(server, load=open_settled)


def test_nothing_is_cut_in_the_view_the_page_opens_with(kept: KeptPages, server: str):
    page = kept_settled(kept, server)
    assert problems(page) == {"overview": [], "detail": []}


@pytest.mark.parametrize("text", SENTENCES, ids=["long-words", "cjk-and-emoji"])
def test_nothing_is_cut_for_long_words_cjk_and_emoji_in_each_kind(kept: KeptPages, server: str, text: str):
    page = kept_settled(kept, server)
    cross = page.locator("#kind input[value='cross']")
    if not cross.is_checked():  # the kind the page opens with; the test before this one left another
        redrawn(page, cross.check)
    seen = {}
    redrawn(page, lambda: (page.fill("#source textarea", text), page.click("#run")))
    seen["cross"] = problems(page)
    for kind in ("encoder_self", "decoder_self"):
        redrawn(page, lambda k=kind: page.locator(f"#kind input[value='{k}']").check())
        seen[kind] = problems(page)
    assert {k: v for k, v in seen.items() if v["overview"] or v["detail"]} == {}


def test_nothing_is_cut_in_presentation_mode(kept: KeptPages, server: str):
    """Larger text, the same margins rule."""
    page = kept_settled(kept, server)
    redrawn(page, lambda: page.locator("#present input[type=checkbox]").check())
    assert problems(page) == {"overview": [], "detail": []}


def test_another_tab_and_back_draws_nothing_again(kept: KeptPages, server: str):
    """The hidden plots keep their margins: no plotly_afterplot while the tab is away and back."""
    page = kept_settled(kept, server)
    page.evaluate(f"""() => {{ window.attnDraws = 0; for (const id of ['overview', 'detail'])
        ({GD})(id).on('plotly_afterplot', () => {{ window.attnDraws += 1; }}); }}""")
    select_tab(page, "Model card")
    select_tab(page, "Attention")
    page.wait_for_timeout(500)  # room for a redraw, were there one (it must not come)
    for plot_id in ("overview", "detail"):
        page.evaluate(SETTLED, plot_id)
    assert page.evaluate("() => window.attnDraws") == 0


def test_narrowed_to_a_phone_the_column_labels_turn_upright_and_nothing_is_cut(page: Page, server: str):
    """The page script picks the column labels' angle for the plot's width: slanted on a wide page, upright on a
    phone (390×844, the wide page resized)."""
    open_settled(page, server)
    angle = "() => document.querySelector('#detail .js-plotly-plot').layout.xaxis.tickangle"
    wide = page.evaluate(angle)
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_function("() => document.querySelector('#detail .main-svg')?.getBoundingClientRect().width < 390")
    for plot_id in ("overview", "detail"):
        page.evaluate(SETTLED, plot_id)
    assert problems(page) == {"overview": [], "detail": []}
    assert wide == -30 and page.evaluate(angle) == -90  # the wide page had room for them slanted, the phone has not


def test_the_width_table_is_never_narrower_than_the_fonts_here(browser: Browser):
    chars = "".join(sorted(margins._WIDTHS)) + "…�·␣→—Юéüß"  # beyond ASCII: escape_token's symbols, letters
    fonts = ['"Open Sans", verdana, arial, sans-serif', "DejaVu Sans", "Liberation Sans", "sans-serif"]
    with new_page(browser, 800, 600) as page:
        page.set_content("<html><body></body></html>")
        measured = page.evaluate("""([chars, fonts]) => fonts.map((font) => {
            const c = document.createElement('canvas').getContext('2d');
            c.font = '100px ' + font;
            return Array.from(chars).map((ch) => c.measureText(ch).width / 100);
        })""", [chars, fonts])
    wider = {(font, ch): round(w, 3) for font, widths in zip(fonts, measured) for ch, w in zip(chars, widths)
             if w > margins.char_em(ch) + 1e-6}
    assert wider == {}
    assert len(margins._WIDTHS) == 95  # every printable ASCII character has its width

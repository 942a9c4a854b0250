"""Head analysis in a real browser: the "Head analysis" tab — the statistics grid, a click on a cell that opens that
head on the Attention tab, and a head ablation with its progress bar and its result.

The app and the browser are tests/conftest.py's; the tests take turns on one kept page (``kept``), which fails a test
on a console error or a request off loopback. The tab is shown at 1280×720 (a projector), dark; the suite's only
ablation in a browser (it decodes the shipped 200-sentence sample). Screenshots are not tests:
``python -m bench.screenshots``.
"""

from __future__ import annotations

from helpers.browser import KeptPages, is_dark, open_app, select_tab, wait_tab
from helpers.scripts import GD, TITLE, VALUE
from playwright.sync_api import Page

from model.probes.ablation import load_ranking

GRID = "heads-grid"
TRACE_KINDS = (f"() => {{ const gd = ({GD})('{GRID}'); "
               "return gd && gd.data ? gd.data.map(t => t.customdata[0][0][0]) : []; }")
ABLATION = "() => document.querySelector('#ablation')?.textContent || ''"


def grid_kinds(page: Page) -> list[str]:
    return page.evaluate(TRACE_KINDS)


def open_tab(page: Page, url: str) -> None:
    open_app(page, url)
    select_tab(page, "Head analysis")
    page.wait_for_function(f"() => ({TRACE_KINDS})().length === 3")  # spread: a panel per kind
    for plot_id in ("rollout-enc-raw", "rollout-enc", "rollout-cross-raw", "rollout-cross"):
        page.wait_for_selector(f"#{plot_id} .js-plotly-plot .hm image")


def on_tab(kept: KeptPages, server: str) -> Page:
    """The module's kept page (1280×720, dark) on Head analysis: the tests take turns on it, each from the view the one
    before left (the first on the view the tab opens with)."""
    page = kept.open(server + "?__theme=dark", 1280, 720, load=open_tab)
    select_tab(page, "Head analysis")
    return page


def cell_centre(page: Page, kind: str, layer: int, head: int) -> tuple[float, float]:
    """Where the grid cell of ``kind`` (its panel), ``layer`` and ``head`` (1-based) is drawn on the page."""
    return page.evaluate(
        f"""([kind, layer, head]) => {{
            const gd = ({GD})('{GRID}'), fl = gd._fullLayout;
            const i = gd.data.findIndex(t => t.customdata[0][0][0] === kind), suffix = i === 0 ? '' : String(i + 1);
            const xa = fl['xaxis' + suffix], ya = fl['yaxis' + suffix], box = gd.getBoundingClientRect();
            return [box.left + xa._offset + xa.l2p(head), box.top + ya._offset + ya.l2p(layer)];
        }}""",
        [kind, layer, head],
    )


def test_the_grid_shows_every_kinds_heads_with_their_roles_in_dark(kept: KeptPages, server: str):
    page = on_tab(kept, server)
    assert is_dark(page)
    assert grid_kinds(page) == ["encoder_self", "decoder_self", "cross"]
    rules = page.inner_text("#heads-rules")
    assert "this sentence" in rules and "EOS-sink" in rules and "first" in rules and "40%" in rules
    roles = page.evaluate(f"() => ({GD})('{GRID}').data.flatMap(t => t.customdata.flat().map(c => c[3]))")
    assert len(roles) == 3 * 6 * 8 and all(roles), roles[:10]


def test_an_ablation_shows_its_progress_then_both_translations_the_maps_and_the_scores(kept: KeptPages, server: str):
    page = on_tab(kept, server)
    # Heads to switch off: the shipped ranking's top five, and one more picked in the menu (a new set: nothing cached)
    translation = page.evaluate(VALUE, "translation")
    page.click("#heads-top")
    page.wait_for_function("() => document.querySelectorAll('#heads-off .token').length === 5")
    heads = [t.strip() for t in page.locator("#heads-off .token").all_inner_texts()]
    assert heads == [h["head"] for h in load_ranking()["heads"][:5]], heads  # the shipped ranking's order
    extra = "encoder_self:1:1"
    assert extra not in heads, heads
    page.get_by_label("Heads to switch off (kind:layer:head; type to filter)").fill(extra)
    page.get_by_role("option", name=extra, exact=True).click()
    page.wait_for_function("() => document.querySelectorAll('#heads-off .token').length === 6")
    heads.append(extra)
    page.click("#ablate")
    # Gradio's progress bar over the maps, with the sample's decoding as its text
    page.wait_for_function("() => /(every head|heads off): translat/.test(document.querySelector('#ablated').innerText)"
                           " && !!document.querySelector('#ablated .progress-bar')")
    page.wait_for_function(f"() => ({ABLATION})().includes('Switched off:')", timeout=300_000)
    text = page.inner_text("#ablation")
    assert all(h in text for h in heads) and "sample BLEU (200 sentences)" in text and "chrF" in text, text
    assert translation in text  # the sentence with every head, beside the one without them
    # the text and the figure arrive in one answer, but the page may draw the figure a moment after the text
    offs = f"() => (({GD})('ablated')?.layout.shapes || []).map(s => s.name).filter(n => / off$/.test(n))"
    expected = sorted(f"L{h.split(':')[1]} H{h.split(':')[2]} off" for h in heads if h.startswith("cross"))
    page.wait_for_function(f"(n) => ({GD})('ablated') && ({offs})().length === n", arg=len(expected))
    assert sorted(page.evaluate(offs)) == expected
    page.locator("#ablated-kind label:has(input[value='encoder_self'])").click()  # another kind: from the cache
    page.wait_for_function(f"() => JSON.stringify(({GD})('ablated').layout.meta).includes('Encoder self-attention')")
    assert page.evaluate(f"() => ({GD})('ablated').layout.shapes.some(s => s.name === 'L1 H1 off')")


def test_the_shipped_samples_statistics_and_a_self_attention_statistic_in_two_panels(kept: KeptPages, server: str):
    page = on_tab(kept, server)
    page.locator("#heads-scope label:has(input[value='sample'])").click()  # the shipped sample, from its file
    page.wait_for_function("() => document.querySelector('#heads-rules').textContent.includes('200 sentences')")
    page.get_by_label("Colour shows").click()
    asked = []  # another statistic is drawn from every statistic's grid the page holds: no request to the server
    def ask(request) -> None:
        if "/gradio_api/queue/join" in request.url:
            asked.append(request.url)

    page.on("request", ask)
    try:
        page.get_by_role("option", name="weight on the previous token").click()  # self-attention only: two panels
        page.wait_for_function(f"() => ({TRACE_KINDS})().length === 2")
    finally:
        page.remove_listener("request", ask)  # (the page goes on to other tests)
    assert grid_kinds(page) == ["encoder_self", "decoder_self"] and asked == []


def test_a_click_on_a_cell_opens_that_head_on_the_attention_tab(kept: KeptPages, server: str):
    page = on_tab(kept, server)
    page.locator(f"#{GRID}").scroll_into_view_if_needed()
    x, y = cell_centre(page, "decoder_self", 4, 6)
    page.mouse.click(x, y)
    wait_tab(page, "Attention")
    page.wait_for_function("() => document.querySelector('#kind input[value=decoder_self]')?.checked")
    page.wait_for_function(f"() => ({TITLE})('detail').startsWith('Decoder self-attention')"
                           f" && ({TITLE})('detail').includes('layer 4 · head 6')")
    assert page.locator("#layer input[type=number]").input_value() == "4"
    assert page.locator("#head input[value='6']").is_checked()

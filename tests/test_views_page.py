"""app.py's composition, without a server: the page-script contract, the endpoints, and the one listener helper.

The browser tests (test_browser.py) and the API tests (test_app_api.py) drive the served app; these check,
in a second, what they would only show as a timeout.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import gradio as gr
import pytest
from gradio.components.plot import PlotData

import app
from model.network.inference import Translator
from viz.heatmaps import HEAD_LABEL, LAYER_LABEL, overview_spec
from viz.ui.patches import progress_on_components, shows_progress
from viz.ui.wiring import MOVING, WHILE_MOVING, listener
from viz.views.outputs import finish_figure
from viz.views.page import PAGE, SCRIPTS, WEB

ENDPOINTS = {"visualise", "render_views", "render_detail", "export", "figure1", "scaling_live", "scaling_variance",
             "scaling_saturation", "translate", "attention"}


@pytest.fixture(scope="module")
def demo(tiny_model_dir) -> gr.Blocks:
    return app.create_app(Translator(tiny_model_dir, device="cpu"))


def test_the_page_script_reads_exactly_the_contract_app_py_writes(demo):
    script = app.page_script()
    assert set(re.findall(r"(?<![\w./])page\.(\w+)", script)) == set(PAGE)  # not viz.views.page.X, web/page.js
    elem_ids = {block.elem_id for block in demo.blocks.values()}
    for key in ("overview", "tileClick", "figure1", "blockClick"):
        assert PAGE[key] in elem_ids, key
    assert (PAGE["layerLabel"], PAGE["headLabel"]) == (LAYER_LABEL, HEAD_LABEL)
    assert script.endswith(f")({json.dumps(PAGE)})")


def test_every_hidden_textbox_keeps_its_size_whatever_text_it_carries(demo):
    """The hidden textboxes carry figures as JSON between server and page (a Why-tab run: ~29 kB): a Gradio Textbox
    whose lines differ from its max_lines fits its height to every new text, a forced layout of the whole text on the
    way to drawing it (viz.ui.wiring.hidden_box). Two lines, so that the page script finds a <textarea>."""
    hidden = [b for b in demo.blocks.values() if isinstance(b, gr.Textbox) and b.visible == "hidden"]
    ids = {b.elem_id for b in hidden}
    assert {"live-frames", "decode-frames", "decode-held", "heads-frames", "in-frames", "in-held",
            PAGE["tileClick"]} <= ids
    assert [(b.elem_id, b.lines, b.max_lines) for b in hidden if not b.lines == b.max_lines == 2] == []


def test_the_page_script_is_its_files_in_order():
    """page.js, then one file per feature under assets/web/, each in the script once, in the order of ``SCRIPTS``
    (events.js there is the listeners' own, not the page script's)."""
    script = app.page_script()
    assert SCRIPTS[0] == "page.js" and set(SCRIPTS) <= {path.name for path in WEB.glob("*.js")} - {"events.js"}
    texts = [(WEB / name).read_text(encoding="utf-8").strip() for name in SCRIPTS]
    assert [script.count(text) for text in texts] == [1] * len(SCRIPTS)
    at = [script.index(text) for text in texts]
    assert at == sorted(at)


def test_the_label_patterns_read_layer_and_head_off_the_overview():
    tokens = ["▁a", "▁dog"]
    weights = [[[[0.5, 0.5], [1.0, 0.0]]] * 3] * 2  # (L=2, H=3, Q=2, K=2)
    heatmap = overview_spec(weights, tokens, tokens)["data"][0]
    layers = [int(m[1]) for y in heatmap["y"] if (m := re.match(LAYER_LABEL, y))]
    heads = [int(m[1]) for x in heatmap["x"] if (m := re.match(HEAD_LABEL, x))]
    assert layers == [1, 1, 2, 2] and heads == [1, 1, 2, 2, 3, 3]  # gap rows and columns match neither


def test_an_event_shows_its_progress_where_its_answer_is_read(demo):
    """Gradio's page refreshes every progress target there ever was on each status message of any event, and re-reads
    every component inside a layout block: the tabs as one would make every click walk the whole app
    (progress_on_components)."""
    tabs_events = [fn for fn in demo.fns.values() if any(isinstance(o, gr.Tabs) for o in fn.outputs)]
    assert len(tabs_events) >= 5  # links, tiles and buttons open tabs
    for fn in demo.fns.values():
        targets = fn.show_progress_on if fn.show_progress_on is not None else fn.outputs
        assert not [t for t in targets if getattr(t, "children", None)], fn.name
    # where the answer is read: a link's event shows its progress on the Attention tab's translation, status line and
    # figures (not on the seven controls it sets, its caption still hidden, the tabs or the link box)
    opened = next(fn for fn in demo.fns.values() if fn.name == "open_link")
    assert len(opened.outputs) > 12
    assert [t.elem_id for t in opened.show_progress_on] == ["translation", "status", "overview", "detail"]
    controls = (gr.Radio, gr.Slider, gr.Checkbox, gr.Dropdown, gr.Number, gr.State)
    for fn in demo.fns.values():
        if fn.outputs and any(shows_progress(o) for o in fn.outputs):
            assert all(shows_progress(t) for t in fn.show_progress_on), fn.name
            assert not [t for t in fn.show_progress_on if isinstance(t, controls) or t.visible is not True], fn.name
    # an event that shows no progress keeps one target (Inside a head's new query updates 17 outputs, a lecture's move
    # dozens: each target is refreshed on every status message of every event after it)
    hidden = {fn.name: fn for fn in demo.fns.values() if fn.show_progress == "hidden" and fn.outputs}
    assert {"show_query", "move"} <= set(hidden) and len(hidden["move"].outputs) > 30, sorted(hidden)
    assert {name: len(fn.show_progress_on) for name, fn in hidden.items() if len(fn.show_progress_on) != 1} == {}
    with gr.Blocks() as other, gr.Tabs() as tabs:
        with gr.Tab("a"):
            button = gr.Button()
        button.click(lambda: gr.Tabs(selected="a"), None, tabs)
    with pytest.raises(ValueError, match="only layout blocks"):
        progress_on_components(other)


def test_a_choice_made_while_a_figure_is_drawn_is_drawn_next(demo):
    """Every event that no click or Enter starts runs again for a choice made while it runs (``always_last``):
    Gradio 6.31.0 makes an event whose first trigger is not a ``change`` ``once``, which drops it while pending
    (latest_choice_wins). The close-up's own choices, the chain after a tile or an arrow key, and a run's redraw are
    among them."""
    config = demo.get_config_file()
    by_name = {dep["api_name"]: dep for dep in config["dependencies"]}
    choices = [dep for dep in config["dependencies"] if not {e for _, e in dep["targets"]} & {"click", "submit"}]
    assert len(choices) > 60 and [dep["api_name"] for dep in choices if dep["trigger_mode"] != "always_last"] == []
    assert {by_name[name]["trigger_mode"] for name in ("render_detail", "render_views", "after_run")} == {"always_last"}
    starts = [dep for dep in config["dependencies"] if {event for _, event in dep["targets"]} == {"click", "submit"}]
    assert starts and {dep["trigger_mode"] for dep in starts} == {"once"}  # a double click on Translate: one run
    # a menu's choice is its select: Gradio 6.31.0's dropdown sends input on every blur too (a second run)
    menus = {block._id for block in demo.blocks.values() if isinstance(block, gr.Dropdown)}
    menu_inputs = [(dep["api_name"], target) for dep in config["dependencies"] for target in dep["targets"]
                   if target[0] in menus and target[1] == "input"]
    assert menus and menu_inputs == []
    tile = next(dep for dep in config["dependencies"] if dep["api_name"] == "open_tile")
    after_tile = [dep for dep in config["dependencies"] if dep["trigger_after"] == tile["id"]]
    assert after_tile and {dep["trigger_mode"] for dep in after_tile} == {"always_last"}


def test_a_tab_opening_that_a_lectures_move_brings_draws_nothing_while_the_move_is_on_its_way(demo):
    """Inside a head's opening and its draw (a chain: its later step's inputs are read as the page showed the last
    stop, its states may already be the next one's), and the Decoding tab's opening, take the lecture's query first,
    which the page replaces with ``MOVING`` while a move is on its way (``WHILE_MOVING``); so asked, they change
    nothing."""
    config = demo.get_config_file()
    go = next(b._id for b in demo.blocks.values() if getattr(b, "elem_id", None) == "lecture-go")
    gated = [dep for dep in config["dependencies"] if dep["js"] == WHILE_MOVING]
    assert sorted(dep["api_name"] for dep in gated) == ["follow", "opening", "show_opened"]  # (follow: Decoding's)
    for dep in gated:
        assert dep["inputs"][0] == go
        fn = demo.fns[dep["id"]].fn
        assert fn(MOVING, *[None] * (len(dep["inputs"]) - 1)) == tuple(gr.skip() for _ in dep["outputs"])


def test_every_named_endpoint_is_there(demo):
    named = {dep.api_name for dep in demo.fns.values() if dep.api_visibility != "private"}
    assert ENDPOINTS <= named


def test_listener_turns_figures_into_plots_and_errors_into_messages():
    def present(bound: int, value: int):
        """Doubles."""
        if value < 0:
            raise ValueError("value must not be negative")
        return finish_figure({"data": [], "layout": {}}, "f"), bound * value, [value]

    run = listener(present, 3)
    figure, number, items = run(2)
    assert isinstance(figure, PlotData) and json.loads(figure.plot)["config"]["toImageButtonOptions"]["filename"] == "f"
    assert (number, items) == (6, [2])
    assert run.__name__ == "present" and run.__doc__ == "Doubles."
    with pytest.raises(gr.Error, match="value must not be negative"):
        run(-1)
    with pytest.raises(ZeroDivisionError):  # not a user's mistake: not turned into a message
        listener(lambda: 1 / 0)()


def test_a_plain_visit_asks_the_server_only_for_the_attention_tabs_view(demo, tiny_model_dir):
    """A page load runs one event of its own: the Attention tab's view (``open_link``, then what follows every run).
    The Why tab's first figures are in the page from the start (the same for everyone); the other tabs' part of a link
    and the lecture's caption run when there is a link (``page.link`` changes from None); and the Attention tab's
    first layer and head are those the plain visit opens, so that its run changes no choice (a change would draw the
    close-up a second time)."""
    from model.serving.runs import Runs
    from viz.views import scaling
    from viz.views.attention import classroom, share

    config = demo.get_config_file()
    deps = config["dependencies"]
    assert [d["api_name"] for d in deps if any(event == "load" for _, event in d["targets"])] == ["open_link"]
    by_id = {block.elem_id: block for block in demo.blocks.values() if block.elem_id}
    # what the plain visit opens (no query) is what the tab starts with; a link is parsed for the other tabs
    runs = Runs(Translator(tiny_model_dir, device="cpu"))
    *shown, opened, link = classroom.open_link(runs, lambda message: None, ["attention"], {})
    assert (by_id["layer"].value, by_id["head"].value) == tuple(shown[3:5]) and link is None
    assert isinstance(classroom.open_link(runs, lambda message: None, ["attention"], {"head": "2"})[-1], share.View)
    link_id = next(d["outputs"][-1] for d in deps if d["api_name"] == "open_link")
    followers = {d["api_name"] for d in deps if [tuple(t) for t in d["targets"]] == [(link_id, "change")]}
    assert followers == {"open_linked", "caption"}
    # the Why tab's sections 1 and 2, as its endpoints answer its first values
    first = (by_id["log2-dk"].value, by_id["seed"].value)
    assert first == (9, 0)
    variance = scaling.variance_checked(*first, device="cpu")
    saturation = scaling.saturation_checked(first[0], by_id["n-keys"].value, by_id["scale-factor"].value, first[1],
                                            device="cpu")
    figures = (*variance[:2], *saturation[:2])
    for elem_id, figure in zip(("variance", "histogram", "softmax-weights", "curves"), figures, strict=True):
        assert json.loads(by_id[elem_id].value["plot"]) == json.loads(json.dumps(figure)), elem_id


def test_a_figure_whose_events_alone_write_it_is_drawn_again_only_for_new_values():
    """``unless_drawn``: the same values again (a tab opened again) change nothing, new ones draw and say what they
    drew; a link that drew the figure with the same key (``drawn_key``) counts as drawn."""
    from viz.ui.wiring import unless_drawn
    from viz.views.outputs import SKIP, drawn_key

    calls = []

    def curves(kind, layer):
        calls.append((kind, layer))
        return f"figure {kind} {layer}", "note"

    run = unless_drawn(curves, 2)
    figure, note, key = run(None, "cross", 2)
    assert (figure, note, calls) == ("figure cross 2", "note", [("cross", 2)]) and key == drawn_key("cross", 2)
    assert run(key, "cross", 2) == (SKIP, SKIP, SKIP) and len(calls) == 1
    assert run(key, "cross", 3)[0] == "figure cross 3" and len(calls) == 2
    assert run(drawn_key("cross", 4), "cross", 4) == (SKIP, SKIP, SKIP) and len(calls) == 2


def test_the_page_fetches_plotly_by_the_file_gradio_ships():
    """page.js imports plotly's module as the page loads: PAGE names Gradio's own file, which must exist (a Gradio
    whose build names it otherwise leaves the entry empty: the page then waits for Gradio's own import)."""
    from viz.views.page import plotly_module

    assert PAGE["plotly"] == plotly_module() and re.fullmatch(r"assets/PlotlyPlot-[\w-]+\.js", PAGE["plotly"])
    assert (Path(gr.__file__).parent / "templates" / "frontend" / PAGE["plotly"]).is_file()

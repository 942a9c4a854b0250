"""The tabs' listeners as presenters, without a server: what each returns for the page's outputs, in order —
values, figures, ``Update``s (a tab opened, a slider's range, a section shown) and ``SKIP`` (no change) — and
``viz.ui.wiring.listener``'s translation of those for Gradio. The tiny model; the served page is the browser tests'.
"""

from __future__ import annotations

import json

import gradio as gr
import pytest
from gradio.utils import get_type_hints
from helpers.plotly import apply_changes

from model.network.inference import Translator
from model.serving.cache import ByteLRU
from model.serving.runs import Runs
from viz.ui.wiring import listener
from viz.views import api, architecture
from viz.views import decode_steps as decoding
from viz.views import head_analysis as heads_view
from viz.views import inside_head as inside_view
from viz.views.attention import classroom, closeup, examples, share, teacher
from viz.views.attention import contributions as measures
from viz.views.attention import maps as attention
from viz.views.outputs import SKIP, Update, changes, open_tab, skipped

TEXT = "a big dog runs in the park."
GIVEN = "ein großer hund."


@pytest.fixture(scope="module")
def runs(tiny_model_dir) -> Runs:
    return Runs(Translator(tiny_model_dir, device="cpu"), cache=ByteLRU(64 << 20))


def same_figure(a, b) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


# ------------------------------------------------------------------------------------- listener and updates
def test_listener_turns_updates_into_gradio_updates():
    run = listener(lambda: (open_tab("inside"), SKIP, Update(choices=[("a", 0)], value=0), 3))
    assert run() == ({"__type__": "update", "selected": "inside"}, gr.skip(), gr.update(choices=[("a", 0)], value=0),
                     3)
    assert skipped(2) == (SKIP, SKIP) and Update(value=1) == Update(value=1) != Update(value=2)


def test_a_bound_endpoint_keeps_its_signature_and_type_hints(runs):
    run = listener(api.inside_head, runs)
    assert list(run.__annotations__) == ["text", "target", "kind", "layer", "head", "query", "factor", "return"]
    assert get_type_hints(run) == {"text": str, "target": str, "kind": str, "layer": float, "head": float,
                                   "query": float, "factor": float | None, "return": dict}  # gr.api reads these
    assert run.__doc__ == api.inside_head.__doc__
    with pytest.raises(gr.Error, match="sentence"):
        listener(api.translate, runs)("")


# ------------------------------------------------------------------------------------------ the endpoints
def test_the_endpoints_answer_with_the_runs_results(runs):
    # /attention's dict, written as JSON once per result and shared (JSONText): the same bytes object each time
    assert json.loads(api.attention_maps(runs, TEXT).data) == runs.attention(TEXT).to_json_dict()
    assert api.attention_maps(runs, TEXT).data is api.attention_maps(runs, TEXT).data
    given = json.loads(api.attention_maps(runs, TEXT, GIVEN).data)
    assert given["translation"] == runs.attention(TEXT, GIVEN).translation
    assert api.translate(runs, TEXT, 1) == runs.translate(TEXT, 1)
    assert api.decode_steps(runs, TEXT) == runs.steps(TEXT).to_json_dict()
    assert api.inside_head(runs, TEXT, "", "cross", 2, 3, 1)["weights"] == pytest.approx(
        runs.attention(TEXT).cross[1, 2, 1].tolist(), abs=1e-5)  # JSON keeps 5 decimals
    with pytest.raises(ValueError, match="Beam size"):
        api.translate(runs, TEXT, 0)
    with pytest.raises(ValueError, match="[Ss]cale"):
        api.attention_maps(runs, TEXT, "", 0)
    with pytest.raises(ValueError, match="sentence"):
        api.head_stats(runs, None)


# ------------------------------------------------------------------------------------------ the Attention tab
def test_visualise_shows_the_run_and_keeps_only_its_key(runs):
    warned = []
    out = attention.visualise(runs, warned.append, TEXT, GIVEN, "cross", 2, 0)
    result = runs.attention(TEXT, GIVEN)
    assert out.translation == result.translation and out.session.get() is result
    assert out.status == attention.status_text(result, runs.translator.device_label)
    assert all(same_figure(a, b) for a, b in zip(out[2:4], attention.views(runs.cfg, result, "cross", 2, 0)))
    assert warned == result.warnings
    with pytest.raises(ValueError, match="layer"):
        attention.visualise(runs, warned.append, TEXT, "", "cross", 9, 0)


def test_a_click_on_a_tile_picks_its_layer_and_head_or_changes_nothing(runs):
    assert attention.open_tile(runs.cfg, "2,3,1712") == (2, 3)
    assert attention.open_tile(runs.cfg, "9,1,1") == attention.open_tile(runs.cfg, "") == (SKIP, SKIP)


def test_after_a_run_the_contributions_follow_only_when_chosen(runs):
    result = runs.attention(TEXT)
    choices = (result, "cross", 2, 1, False, "fixed")
    assert closeup.after_run(runs.cfg, runs.contributions, *choices, measures.WEIGHTS) == (SKIP, SKIP)
    shown = closeup.after_run(runs.cfg, runs.contributions, *choices, measures.CONTRIBUTIONS)
    expected = closeup.views(runs.cfg, runs.contributions, *choices, measures.CONTRIBUTIONS)
    assert all(same_figure(a, b) for a, b in zip(shown, expected))


def test_a_given_translation_shows_its_probabilities_beside_the_models_own(runs):
    outputs = teacher.given_outputs(runs.trained, runs.token_probs, runs.attention(TEXT, GIVEN))
    assert outputs[0] == runs.attention(TEXT).translation and outputs[1] == Update(visible=True)
    assert outputs[2]["config"]["toImageButtonOptions"]["filename"] == "your_translation_probabilities"
    own = runs.attention(TEXT)  # the run wrote the model's translation: only the section is hidden
    assert teacher.given_outputs(runs.trained, runs.token_probs, own) == (SKIP, Update(visible=False), SKIP)
    assert teacher.given_outputs(runs.trained, runs.token_probs, None) == skipped(3)


# ------------------------------------------------------------------------------------------ links and examples
class Refuses:
    """``runs`` that refuse one sentence (as the model refuses some), the rest as they are."""

    def __init__(self, runs: Runs, refused: str):
        self.runs, self.refused = runs, refused

    def __getattr__(self, name):
        return getattr(self.runs, name)

    def attention(self, text, target=None, scale=None):
        if text == self.refused:
            raise ValueError("refused")
        return self.runs.attention(text, target, scale)


def test_a_link_opens_its_view_on_its_tab(runs):
    warned = []
    link = share.View(TEXT, "", "encoder_self", 2, 1, "decoding", step=3)
    out = classroom.open_link(runs, warned.append, ["attention", "decoding"], link.query_params())
    assert len(out) == classroom.N_OUTPUTS + 2 and out[-2] == open_tab("decoding") and out[-1] == link
    assert out[:7] == (TEXT, "", "encoder_self", 2, 1, False, "fixed") and out[7] == Update(value="", visible=False)
    assert out[8] == runs.attention(TEXT).translation and out[12].get() is runs.attention(TEXT) and warned == []
    # a tab that takes its own part of the link opens itself (viz.ui.wiring.on_link), after this view
    out = classroom.open_link(runs, warned.append, ["attention", "decoding"], link.query_params(), {}, {"decoding"})
    assert out[-2] is SKIP and out[-1] == link


def test_a_link_whose_sentence_is_refused_opens_the_default_one_and_says_so(runs):
    warned = []
    out = classroom.open_link(Refuses(runs, TEXT), warned.append, ["attention"], {"text": TEXT, "kind": "cross",
                                                                                   "layer": "7"})
    assert out[0] == attention.DEFAULT_SOURCE and out[2] == "cross" and out[-2] == open_tab("attention")
    assert out[7].props["visible"] and classroom.LINK_FAILED in out[7].props["value"] and "layer" in warned[0]
    assert out[12].get() is runs.attention(attention.DEFAULT_SOURCE)


def test_an_example_opens_its_view_with_its_caption(runs, monkeypatch):
    example = examples.Example("Tiny", TEXT, "A lesson.", "cross", 2, 3, row="x", column="y", writes="z")
    monkeypatch.setattr(examples, "EXAMPLES", (example,))
    out = classroom.pick_example(runs, [].append, "0", True, "row")
    assert out[:7] == (TEXT, "", "cross", 2, 3, True, "row")
    assert out[7] == Update(value=examples.markdown([example.caption]), visible=True)
    assert classroom.pick_example(runs, [].append, examples.PROMPT, False, "fixed") == skipped(classroom.N_OUTPUTS)
    with pytest.raises(ValueError, match="Colour scale"):
        classroom.pick_example(runs, [].append, 0, False, "neon")


# ------------------------------------------------------------------------------------------ the Decoding tab
def test_changes_turn_one_json_value_into_another():
    base = {"a": 1, "gone": 2, "list": [{"x": 1}, {"x": 2}], "flat": [1, 2], "nested": {"k": "v"}}
    other = {"a": 1.0, "list": [{"x": 1}, {"x": 3, "y": 0}], "flat": [1, 2, 3], "nested": {"k": "w"}, "new": None}
    found = changes(base, other)
    assert apply_changes(base, found) == other and json.dumps(apply_changes(base, found)) == json.dumps(other)
    assert [["gone"]] in found and [["list", 1, "x"], 3] in found and [["flat"], [1, 2, 3]] in found
    assert changes(base, base) == [] and apply_changes(base, changes(base, [1])) == [1]


def test_decoding_starts_follows_and_predicts_then_reveals(runs):
    steps, n = runs.steps, runs.steps(TEXT).n_steps

    def view(step, reveal):
        return tuple(decoding.decode_step_view(steps(TEXT), step, 2, 0, reveal=reveal))

    def same(a, b):
        return all(same_figure(x, y) if isinstance(x, dict) else x == y for x, y in zip(a, b, strict=True))

    frames = decoding.step_frames(steps(TEXT), 2, 0)
    started = decoding.start(steps, TEXT, 2, 0, True)
    assert started[:3] == (TEXT, Update(maximum=n, value=1), False) and same(started[3:7], view(1, False))
    assert started[7] == frames
    assert same(decoding.start(steps, TEXT, 2, 0, False)[3:7], view(1, True))
    assert decoding.start(steps, TEXT, 2, 0, False, n)[1] == Update(maximum=n, value=n)
    with pytest.raises(ValueError, match="sentence"):
        decoding.start(steps, " ", 2, 0, False)
    assert decoding.follow(steps, runs.attention(TEXT), "", 2, 0, False)[:3] == (TEXT, TEXT, TEXT)
    assert decoding.follow(steps, runs.attention(TEXT), TEXT, 2, 0, False) == skipped(10)  # already taken over
    toggled = decoding.toggle_predict(steps, TEXT, 1, 2, 0, True)
    assert toggled[:2] == (False, Update(interactive=True, variant="primary")) and same(toggled[2:], view(1, False))
    assert decoding.toggle_predict(steps, TEXT, 1, 2, 0, False)[1] == Update(interactive=False, variant="secondary")
    redrawn = decoding.redraw(steps, TEXT, 1, 2, 0, True, True)
    assert same(redrawn[:4], view(1, True)) and redrawn[4] == frames  # a reveal holds
    assert same(decoding.redraw(steps, TEXT, 1, 2, 0, True, False)[:4], view(1, False))
    assert decoding.redraw(steps, "", 1, 2, 0, False, False) == skipped(5)  # no sentence yet


def drawn_view(frames: dict, step: int, head: int, reveal: bool) -> list:
    """A step's view as the page builds it from frames (assets/web/decoding.js, viewOf)."""
    view = apply_changes(frames["base"], frames["steps"][step - 1][0])
    if not reveal:
        view = apply_changes(view, frames["steps"][step - 1][1])
    rows, markdown, hidden = frames["heads"][str(head)][step - 1]
    view = apply_changes(view, rows)
    view[0] = markdown if reveal else hidden
    return view


def test_the_page_draws_every_step_and_its_reveal_from_one_answer(runs):
    """step_frames holds every step's view, revealed and hidden, as the page rebuilds it (a step or a Reveal without
    a round trip, assets/web/decoding.js): exactly the views the server draws."""
    decoded = runs.steps(TEXT)
    for layer, head in ((2, 0), (1, 3)):
        frames = json.loads(decoding.step_frames(decoded, layer, head))
        assert (frames["text"], frames["layer"], list(frames["heads"])) == (decoded.source_text, layer, [str(head)])
        assert len(frames["steps"]) == decoded.n_steps
        for t in range(1, decoded.n_steps + 1):
            for reveal in (True, False):
                want = json.loads(json.dumps(list(decoding.decode_step_view(decoded, t, layer, head, reveal))))
                assert drawn_view(frames, t, head, reveal) == want, (t, reveal)
    with pytest.raises(ValueError, match="head"):
        decoding.step_frames(decoded, 1, 99)


def test_the_page_holds_every_heads_view_of_the_layer_shown(runs, monkeypatch):
    """held_heads: every head's and the mean's view of every step for the layer shown, as the page rebuilds it (a head
    chosen without a round trip): exactly the views the server draws. None beyond HELD_STEPS steps, or before the tab
    has a sentence: the page asks the server for a head then."""
    decoded, n_heads = runs.steps(TEXT), runs.steps(TEXT).cross.shape[1]
    monkeypatch.setattr(decoding, "HELD_STEPS", decoded.n_steps)  # (the tiny model writes on to its longest)
    held = json.loads(decoding.held_heads(runs.steps, TEXT, 2))
    assert (held["text"], held["layer"]) == (decoded.source_text, 2)
    assert list(held["heads"]) == [str(head) for head in range(n_heads + 1)]
    for head in range(n_heads + 1):
        for t in range(1, decoded.n_steps + 1):
            for reveal in (True, False):
                want = json.loads(json.dumps(list(decoding.decode_step_view(decoded, t, 2, head, reveal))))
                assert drawn_view(held, t, head, reveal) == want, (head, t, reveal)
    assert decoding.held_heads(runs.steps, "", 2) == ""
    monkeypatch.setattr(decoding, "HELD_STEPS", decoded.n_steps - 1)
    assert decoding.held_heads(runs.steps, TEXT, 2) == ""
    with pytest.raises(ValueError, match="layer"):
        decoding.held_heads(runs.steps, TEXT, 99)


def test_a_link_opens_the_decoding_tab_at_its_layer_head_and_step(runs):
    steps, n = runs.steps, runs.steps(TEXT).n_steps
    result, warned = runs.attention(TEXT), []
    out = decoding.open_link(steps, warned.append, 2, share.View(TEXT, tab="decoding", layer=1, head=3, step=2),
                             result, False)
    assert out[:4] == (1, 3, result.source_text, result.source_text) and out[-1] == open_tab("decoding")
    assert out[4:-1][:3] == (result.source_text, Update(maximum=n, value=2), False)
    assert out[7].startswith("**Step 2 of") and "layer 1 · head 3" in out[7] and warned == []
    out = decoding.open_link(steps, warned.append, 2, share.View(TEXT, tab="decoding", step=999), result, True)
    assert out[:2] == (2, 0) and out[5] == Update(maximum=n, value=n) and f"1 to {n}" in warned[0]  # defaults
    assert "hidden" in out[7]  # predicting: the step's next token is hidden
    for link in (None, share.View(TEXT, tab="attention", step=2)):
        assert decoding.open_link(steps, warned.append, 2, link, result, False) == skipped(4 + decoding.N_START + 1)


# ------------------------------------------------------------------------------- Inside a head, Head analysis
def test_inside_a_head_takes_over_the_view_and_opens_on_a_clicked_row(runs):
    result = runs.attention(TEXT)
    kind, layer, head, query = inside_view.take_over(runs.cfg, result, "decoder_self", 2, 0, 3)
    chips = inside_view.query_choices(result.target_tokens)
    assert (kind, layer, head, query) == ("decoder_self", 2, 1, Update(choices=chips, value=3))
    clicked = inside_view.row_clicked(runs.cfg, "2,1712", result, "cross", 1, 2)
    assert clicked == ("cross", 1, 2, Update(choices=chips, value=2), open_tab("inside"))
    assert inside_view.row_clicked(runs.cfg, "x", result, "cross", 1, 2) == skipped(5)


def test_a_row_of_the_means_close_up_says_which_head_this_tab_opened():
    note = inside_view.mean_note(8, 3, 0, 1)
    assert "mean of layer 3's 8 heads" in note and "opened **head 1**" in note
    assert inside_view.mean_note(8, 3, "0", 2).endswith("pick another head above.")
    assert inside_view.mean_note(8, 3, 4, 4) == ""  # the close-up showed that head: nothing to say


def test_the_other_tabs_take_their_part_of_a_link(runs):
    from viz.views import inside_matrices as matrix_view
    from viz.views import lab as lab_view

    result, elsewhere = runs.attention(TEXT), share.View(TEXT, tab="attention", step=2, query=1, stat="entropy")
    assert architecture.open_link(share.View(TEXT, tab="architecture"), "cross", 2) == ("cross", 2,
                                                                                         open_tab("architecture"))
    link = share.View(TEXT, tab="heads", stat="entropy")
    assert heads_view.open_link(link, "cross") == (SKIP, "entropy", "cross", open_tab("heads"))
    assert lab_view.open_link(share.View(TEXT, tab="lab", runs=("h8",))) == (["h8"], open_tab("lab"))
    assert lab_view.open_link(share.View(TEXT, tab="lab")) == (SKIP, open_tab("lab"))  # the tab's own default
    opened = matrix_view.open_link(runs.cfg, share.View(TEXT, tab="inside", query=3), result, "decoder_self", 2, 2)
    chips = inside_view.query_choices(result.target_tokens)
    assert opened[:4] == ("decoder_self", 2, 2, Update(choices=chips, value=3)) and opened[-1] == open_tab("inside")
    assert opened[4] == matrix_view.seen_key(result, "decoder_self", 2, 2)  # the tab's opening keeps the query
    assert opened[5] is SKIP  # no view in the link: the tab's own
    whole = matrix_view.open_link(runs.cfg, share.View(TEXT, tab="inside", show="matrix"), result, "cross", 1, 1)
    assert whole[5] == matrix_view.MATRIX and whole[-1] == open_tab("inside")  # the link's view: every query at once
    for link in (None, elsewhere):
        assert architecture.open_link(link, "cross", 2) == (SKIP,) * 3
        assert heads_view.open_link(link, "cross") == skipped(4) and lab_view.open_link(link) == (SKIP, SKIP)
        assert matrix_view.open_link(runs.cfg, link, result, "cross", 1, 1) == skipped(7)


def test_a_grid_cell_opens_its_head_on_the_attention_tab(runs):
    assert heads_view.open_cell(2, 4, "cross,2,3,99") == ("cross", 2, 3, open_tab("attention"))
    assert heads_view.open_cell(2, 4, "cross,3,1,99") == heads_view.open_cell(2, 4, "") == skipped(4)


# ------------------------------------------------------------------------------------------- Architecture
def test_a_block_or_the_button_opens_the_attention_tab(runs):
    assert architecture.open_block("cross|17") == ("cross", open_tab("attention"))
    assert architecture.open_block("ffn|17") == (SKIP, SKIP)
    assert architecture.show(runs.cfg, "decoder_self", 2.0) == ("decoder_self", 2, open_tab("attention"))
    with pytest.raises(ValueError, match="layer"):
        architecture.show(runs.cfg, "cross", 3)

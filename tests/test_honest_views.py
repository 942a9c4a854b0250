"""Views that cannot be misread, without a server: figures (the tiny model's results in, figures out).

- the decoder's shift: which token each decoder row predicts, in the close-up's hover and beside the views;
- masked cells drawn from the mask in the Attention tab's figures;
- exports that carry their context (sentence, kind, layer, head) for the page script;
- a translation of one's own: the model's probability of each of its tokens, checked against a recomputation
  that decodes one position at a time (the KV-cache path, not the full teacher-forced pass it checks).
"""

from __future__ import annotations

import html
import json

import numpy as np
import pytest
import torch
from helpers.plotly import array

from model.network.inference import Translator
from model.probes.forcing import TokenProbs, token_probs
from viz.heatmaps import MASKED_HOVER
from viz.probs import AGREE_COLOR, DISAGREE_COLOR, token_probs_spec
from viz.views.attention import maps as attention
from viz.views.attention import teacher
from viz.views.attention.context import CUT_OFF, export_title, next_tokens, shift_note, with_export
from viz.views.outputs import finish_figure

TEXT = "a big dog runs in the park."
GIVEN = "ein großer hund rennt in dem park."


@pytest.fixture(scope="module")
def greedy(translator):
    return translator.attention(TEXT)


@pytest.fixture(scope="module")
def forced(translator):
    return translator.attention(TEXT, target=GIVEN)


def notes(fig) -> np.ndarray:
    """The close-up's per-cell hover notes (customdata column 4), (Q, K)."""
    return np.asarray(fig["data"][0]["customdata"], dtype=object)[..., 4]


# ------------------------------------------------------------------------------ the shift: row i predicts i+1
def test_each_decoder_row_predicts_the_next_rows_input_then_eos(forced):
    predicted = next_tokens(forced)
    assert predicted == forced.target_tokens[1:] + ["</s>"]


def test_a_cut_off_translation_does_not_claim_its_last_row_predicts_eos(greedy):
    # the 3-step tiny model never writes EOS: its greedy run stops at the length limit, one row per written token
    assert len(greedy.target_ids) == len(greedy.target_tokens)
    predicted = next_tokens(greedy)
    assert predicted[:-1] == greedy.target_tokens[1:] and predicted[-1] == CUT_OFF
    finished = type(greedy)(**{**greedy.__dict__, "target_ids": greedy.target_ids[:-1]})
    assert next_tokens(finished)[-1] == "</s>"


def test_the_close_up_hover_says_what_each_decoder_row_predicts(translator, forced):
    cfg = translator.cfg
    for kind in ("decoder_self", "cross"):
        fig = attention.detail_plot(cfg, forced, kind, 2, 3)
        rows = notes(fig)[:, 0]
        for row, token in zip(rows, next_tokens(forced)):
            assert f"this row predicts: {html.escape(token.lstrip(chr(0x2581)), quote=False)}" in row or \
                token == "</s>" and "&lt;/s&gt;" in row
        assert "%{customdata[4]}" in fig["data"][0]["hovertemplate"]
    enc = attention.detail_plot(cfg, forced, "encoder_self", 1, 0)
    assert len(enc["data"][0]["customdata"][0][0]) == 4  # the encoder's rows predict nothing


def test_shift_note_beside_the_decoder_views_only():
    assert shift_note("encoder_self") == ""
    for kind in ("decoder_self", "cross"):
        assert "row *i* is fed token *i*" in shift_note(kind) and "predicts token *i*+1" in shift_note(kind)
    assert "masked" in shift_note("decoder_self") and "−∞" in shift_note("decoder_self")
    assert "masked" not in shift_note("cross")


# ------------------------------------------------------------------------------------------- masked cells
def test_decoder_self_attention_is_drawn_masked_in_both_figures(translator, greedy):
    cfg, t = translator.cfg, len(greedy.target_tokens)
    detail = attention.detail_plot(cfg, greedy, "decoder_self", 1, 1)
    (shape,) = detail["layout"]["shapes"]
    assert shape["showlegend"] is True and "masked" in shape["name"]
    masked = {(i, j) for i in range(t) for j in range(t) if MASKED_HOVER in notes(detail)[i, j]}
    assert masked == {(i, j) for i in range(t) for j in range(t) if j > i}
    overview = attention.overview_plot(greedy, "decoder_self")
    assert overview["layout"]["shapes"][0]["path"].count("M") == cfg.n_layers * cfg.n_heads
    for kind in ("encoder_self", "cross"):  # nothing is masked there
        assert "shapes" not in attention.overview_plot(greedy, kind)["layout"]
        assert "shapes" not in attention.detail_plot(cfg, greedy, kind, 1, 1)["layout"]


# ------------------------------------------------------------------------------------------------ exports
def test_exports_carry_sentence_kind_layer_and_head(translator, forced):
    detail = attention.detail_plot(translator.cfg, forced, "cross", 2, 3)
    title = detail["layout"]["meta"]["export"]["title"]
    for part in (forced.source_text, forced.translation, "Encoder–decoder attention", "layer 2", "head 3",
                 "teacher forcing"):
        assert part in html.unescape(title), part
    overview = attention.overview_plot(forced, "encoder_self")
    export = overview["layout"]["meta"]["export"]
    assert export["categoryTicks"] is True
    cfg = translator.cfg
    assert f"Encoder self-attention · all {cfg.n_layers} layers (rows) × {cfg.n_heads} heads" in export["title"]
    assert forced.source_text in html.unescape(export["title"])
    json.dumps(detail)  # plain JSON, as gr.Plot sends it


def test_export_title_escapes_markup_and_shortens_long_sentences(greedy):
    nasty = type(greedy)(**{**greedy.__dict__, "source_text": "<b>bold</b> " + "x" * 200, "translation": "$y$"})
    title = export_title(nasty, "<i>what</i>")
    assert "<b>" not in title and "<i>" not in title and "$" not in title
    assert "&lt;b&gt;bold" in title and "&lt;i&gt;what" in title and "…" in title
    assert title.count("<br>") == 2 and len(title) < 200
    fig = with_export(finish_figure({"data": [], "layout": {}}, "f"), title)
    assert fig["layout"]["meta"]["export"] == {"title": title}


# ------------------------------------------------------------------- a translation of one's own: teacher forcing
def recomputed_probs(translator: Translator, forced) -> np.ndarray:
    """The probability of each given next token, decoding ONE position at a time with the KV cache."""
    model, cfg = translator.model, translator.cfg
    wanted = forced.target_ids + [cfg.eos_id]
    with torch.inference_mode():
        src = torch.tensor([translator.token_ids(forced.source_text)])
        memory, src_mask = model.encode(src)
        state, out = model.new_state(), []
        for i, token in enumerate([cfg.bos_id] + wanted[:-1]):
            logits = model.decode(torch.tensor([[token]]), memory, src_mask, state=state)  # (1, 1, V)
            out.append(torch.softmax(logits[0, -1].double(), -1)[wanted[i]].item())
    return np.array(out)


def test_token_probabilities_match_a_step_by_step_recomputation(translator, forced):
    probs = token_probs(translator, forced)
    assert isinstance(probs, TokenProbs)
    np.testing.assert_allclose(probs.probs, recomputed_probs(translator, forced), atol=1e-5)
    assert probs.tokens[:-1] == forced.target_tokens[1:] and probs.tokens[-1] == "</s>"  # labelled as the rows
    assert np.all(probs.top_probs >= probs.probs - 1e-7)  # the first choice is at least as likely
    agree = [a == b for a, b in zip(probs.tokens, probs.top_tokens)]
    np.testing.assert_allclose(probs.top_probs[agree], probs.probs[agree], atol=1e-6)


def test_token_probabilities_need_a_given_translation(translator, greedy):
    with pytest.raises(ValueError, match="translation you gave"):
        token_probs(translator, greedy)


def test_forced_plot_shows_each_given_token_and_marks_disagreement(translator, forced, greedy):
    probs = token_probs(translator, forced)
    fig = teacher.forced_plot(forced, probs)
    (bars,) = fig["data"]
    assert bars["type"] == "bar"
    ticks = [html.unescape(t) for t in fig["layout"]["xaxis"]["ticktext"]]
    assert ticks[-1] == "</s>" and len(ticks) == len(probs.tokens)
    np.testing.assert_allclose(array(bars["y"]), probs.probs, atol=1e-6)
    agree = [a == b for a, b in zip(probs.tokens, probs.top_tokens)]
    assert bars["marker"]["color"] == [AGREE_COLOR if a else DISAGREE_COLOR for a in agree]
    assert [bool(t) for t in bars["text"]] == [not a for a in agree]  # the model's choice above a disagreeing bar
    assert "first choice" in bars["hovertemplate"]
    assert "How likely the model finds each of your tokens" in fig["layout"]["title"]["text"]
    assert "teacher forcing" in html.unescape(fig["layout"]["meta"]["export"]["title"])
    assert teacher.forced_plot(greedy, None) is None and teacher.forced_plot(None, probs) is None


def test_token_probs_spec_rejects_what_is_not_a_probability():
    with pytest.raises(ValueError, match="one probability"):
        token_probs_spec(["\u2581a"], [0.5, 0.5], ["\u2581a"], [0.5])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        token_probs_spec(["\u2581a"], [1.5], ["\u2581a"], [1.5])
    spec = token_probs_spec(["\u2581<b>"], [0.2], ["\u2581$x$"], [0.7], ("<i>t</i>",))
    text = json.dumps({k: v for k, v in spec["layout"].items() if k != "template"}) + str(spec["data"][0]["text"])
    assert "<b>" not in text and "<i>" not in text and "$x$" not in text

"""Decoding step by step (model.probes.steps) and its presenter (viz.views.decode_steps); the Attention tab's
alignment view (viz.views.attention.alignment)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch
from helpers.plotly import array

from model.network.decode import greedy_decode
from model.network.inference import ASSETS, Translator
from model.probes.steps import DECIMALS, TOP_K, DecodeSteps, decode_steps
from model.serving.runs import Runs
from viz.encode import plotly_json
from viz.text import md_escape
from viz.views.attention.alignment import alignment_plot
from viz.views.decode_steps import MEAN, decode_step_view, sentence_to_follow

TEXT = "a red dog runs in the park."
STEP_KEYS = {"prefix_tokens", "top_tokens", "top_probs", "chosen_token", "cross", "decoder_self"}


@pytest.fixture(scope="module")
def steps(translator) -> DecodeSteps:
    return decode_steps(translator, TEXT)


def test_rows_are_the_rows_of_attention(translator, steps):
    r = translator.attention(TEXT)
    assert (steps.source_tokens, steps.target_tokens, steps.translation) == (
        r.source_tokens, r.target_tokens, r.translation)
    assert steps.n_steps == len(r.target_tokens) > 1
    for t in range(steps.n_steps):
        assert steps.prefix_tokens(t) == r.target_tokens[: t + 1]
        np.testing.assert_array_equal(steps.cross_rows(t), r.cross[:, :, t, :])
        np.testing.assert_array_equal(steps.self_rows(t), r.decoder_self[:, :, t, : t + 1])


def test_attention_result_carries_the_translation_ids(translator):
    greedy = greedy_decode(translator.model, torch.tensor([translator.token_ids(TEXT)]))[0]
    assert translator.attention(TEXT).target_ids == greedy
    forced = translator.attention(TEXT, target="ein hund rennt.")
    assert forced.target_ids == translator.tokenizer.encode("ein hund rennt.")
    assert forced.target_tokens[1:] == translator.tokenizer.pieces(forced.target_ids)


def _incremental_probs(translator: Translator, text: str, fed: list[int]) -> torch.Tensor:
    """Recompute each step's next-token distribution with the cached, one-token-at-a-time decoder."""
    model = translator.model
    src = torch.tensor([translator.token_ids(text)])
    with torch.inference_mode():
        memory, _ = model.encode(src)
        state = model.new_state()
        rows = [torch.softmax(model.decode(torch.tensor([[i]]), memory, None, state=state)[0, -1], -1) for i in fed]
    return torch.stack(rows)  # (T, V)


def check_top_tokens(translator: Translator, text: str, s: DecodeSteps) -> None:
    cfg = translator.cfg
    out = greedy_decode(translator.model, torch.tensor([translator.token_ids(text)]))[0]
    assert s.chosen_ids == (out + [cfg.eos_id])[: s.n_steps]  # the greedy run, EOS last when it finished
    probs = _incremental_probs(translator, text, [cfg.bos_id] + s.chosen_ids[:-1])  # (T, V)
    want_p, want_ids = probs.topk(TOP_K, dim=-1)
    np.testing.assert_array_equal(s.top_ids[:, 0], s.chosen_ids)  # top-1 is the greedy token at every step
    np.testing.assert_array_equal(s.top_ids, want_ids.numpy())
    np.testing.assert_allclose(s.top_probs, want_p.numpy(), atol=1e-5)
    assert [top[0] for top in s.top_tokens] == s.chosen_tokens
    assert s.chosen_tokens[:-1] == s.target_tokens[1:]
    # a distribution: sorted, in [0, 1], the top 5 sum to at most 1
    assert s.top_probs.shape == (s.n_steps, TOP_K)
    assert np.all(np.diff(s.top_probs, axis=1) <= 0)
    assert np.all((s.top_probs >= 0) & (s.top_probs <= 1))
    assert np.all(s.top_probs.sum(axis=1) <= 1 + 1e-6)
    assert not s.warnings


def test_top_tokens_are_the_greedy_tokens(translator, steps):
    check_top_tokens(translator, TEXT, steps)


def test_json_has_the_steps_rounded_as_attention(translator, steps):
    data = json.loads(steps.to_json())
    att = translator.attention(TEXT).to_json_dict()
    assert data["source_tokens"] == att["source_tokens"] and data["target_tokens"] == att["target_tokens"]
    assert len(data["steps"]) == steps.n_steps
    n_layers, n_heads, s = steps.cross.shape[0], steps.cross.shape[1], len(steps.source_tokens)
    for t, step in enumerate(data["steps"]):
        assert set(step) == STEP_KEYS
        assert step["prefix_tokens"] == steps.target_tokens[: t + 1]
        assert step["chosen_token"] == steps.chosen_tokens[t] and step["top_tokens"] == steps.top_tokens[t]
        assert len(step["top_tokens"]) == len(step["top_probs"]) == TOP_K
        assert np.array(step["cross"]).shape == (n_layers, n_heads, s)
        assert np.array(step["decoder_self"]).shape == (n_layers, n_heads, t + 1)
        # what /attention sends for row t, to the last decimal (it rounds in float32, 0.09703999757766724
        # for our 0.09704, so a value near a rounding boundary may land one unit of 1e-5 away)
        ulp = 1.01 * 10.0**-DECIMALS
        np.testing.assert_allclose(step["cross"], np.array(att["cross"])[:, :, t], rtol=0, atol=ulp)
        np.testing.assert_allclose(step["decoder_self"], np.array(att["decoder_self"])[:, :, t, : t + 1], rtol=0,
                                   atol=ulp)
        for p, want in zip(step["top_probs"], steps.top_probs[t]):
            assert p == round(float(want), 5) and len(repr(p)) <= 8  # compact: 0.01687, not 0.016869999…


@pytest.mark.parametrize("bad", ["", "   ", "\x00\x07", None])
def test_bad_input_is_a_clear_value_error(translator, bad):
    with pytest.raises(ValueError, match="source sentence"):
        decode_steps(translator, bad)


def test_shipped_model_steps_end_with_eos():
    translator = Translator(ASSETS, device="cpu")
    text = "Two dogs are running through the snow."
    s = decode_steps(translator, text)
    check_top_tokens(translator, text, s)
    assert s.chosen_tokens[-1] == "</s>"
    assert s.top_probs[:, 0].min() > 0.1  # a trained model, not noise


# ---------------------------------------------------------------------------------------------- presenter
def test_view_draws_the_step_rows(translator, steps):
    r = translator.attention(TEXT)
    t, layer = 2, 2
    view = decode_step_view(steps, t, layer, MEAN, reveal=True)
    bars, masked = view.self_row["data"]
    np.testing.assert_allclose(array(bars["y"]), r.decoder_self[layer - 1, :, t - 1, :t].mean(axis=0), atol=1e-6)
    assert array(masked["x"]).tolist() == list(range(t, steps.n_steps))  # every position not yet written, masked
    ticks = view.self_row["layout"]["xaxis"]["ticktext"]
    assert ticks[t:] == ["?"] * (steps.n_steps - t)  # future tokens are never named
    one_head = decode_step_view(steps, t, layer, 3, reveal=True)
    np.testing.assert_allclose(array(one_head.cross_row["data"][0]["y"]), r.cross[layer - 1, 2, t - 1], atol=1e-6)
    assert "Step 2 of" in view.markdown


def test_reveal_shows_the_top_tokens_with_the_chosen_one_marked(steps):
    t = steps.n_steps
    view = decode_step_view(steps, t, 1, MEAN, reveal=True)
    (bars,) = view.top5["data"]
    np.testing.assert_allclose(array(bars["x"]), steps.top_probs[t - 1], atol=1e-6)
    assert view.top5["layout"]["yaxis"]["ticktext"][0].endswith("✓ chosen")
    assert sum(label.endswith("✓ chosen") for label in bars["customdata"]) == 1
    assert bars["marker"]["color"][0] != bars["marker"]["color"][1]
    assert "Next token: **" in view.markdown


def test_hidden_view_holds_nothing_of_the_next_token(steps):
    t = 2
    i = t - 1
    hidden = decode_step_view(steps, t, 1, MEAN, reveal=False)
    assert hidden.top5["data"] == []
    # Give step t another next token and other probabilities: the hidden view must not change at all.
    top_ids, top_probs = steps.top_ids.copy(), steps.top_probs.copy()
    top_ids[i], top_probs[i] = top_ids[i][::-1], np.array([0.9, 0.04, 0.03, 0.02, 0.01], dtype=np.float32)
    chosen_tokens, top_tokens = list(steps.chosen_tokens), [list(x) for x in steps.top_tokens]
    chosen_tokens[i], top_tokens[i] = "▁SECRET", ["▁SECRET", "▁b", "▁c", "▁d", "▁e"]
    chosen_ids = list(steps.chosen_ids)
    chosen_ids[i] = int(top_ids[i][0])
    other = dataclasses.replace(steps, top_ids=top_ids, top_probs=top_probs, chosen_ids=chosen_ids,
                                chosen_tokens=chosen_tokens, top_tokens=top_tokens)
    again = decode_step_view(other, t, 1, MEAN, reveal=False)
    assert plotly_json(again._asdict()) == plotly_json(hidden._asdict())
    assert "SECRET" in decode_step_view(other, t, 1, MEAN, reveal=True).markdown


def _synthetic(tokens: list[str]) -> DecodeSteps:
    """Three steps over a two-token source, with markup in every token."""
    rng = np.random.default_rng(0)
    n_layers, h, t, s = 2, 2, 3, 2
    cross = rng.dirichlet(np.ones(s), size=(n_layers, h, t)).astype(np.float32)  # (L, H, T, S)
    dec = np.tril(rng.random((n_layers, h, t, t)).astype(np.float32))
    dec /= dec.sum(-1, keepdims=True)
    probs = np.array([[0.5, 0.2, 0.1, 0.05, 0.01]] * t, dtype=np.float32)
    return DecodeSteps(
        source_text="x", translation="y", source_tokens=["▁<b>src</b>", "</s>"],
        target_tokens=["<s>", tokens[0], tokens[1]], chosen_ids=[10, 11, 2], chosen_tokens=[*tokens, "</s>"],
        top_ids=np.array([[10, 1, 2, 3, 4], [11, 1, 2, 3, 4], [2, 1, 3, 4, 5]]),
        top_tokens=[[tokens[0], "▁<i>", "$x$", "[a](b)", "*"]] * 2 + [["</s>", "▁<i>", "$x$", "[a](b)", "*"]],
        top_probs=probs, decoder_self=dec, cross=cross)


def test_tokens_are_escaped_in_figures_and_markdown():
    s = _synthetic(["▁<b>bold</b>", "▁<a href='x'>"])
    for t in (1, 2, 3):
        view = decode_step_view(s, t, 1, MEAN, reveal=True)
        for fig in (view.top5, view.self_row, view.cross_row):
            text = json.dumps([fig["layout"]["xaxis"].get("ticktext"), fig["layout"]["yaxis"].get("ticktext"),
                               fig["layout"]["title"]["text"], [d.get("customdata") for d in fig["data"]]])
            assert "<b>" not in text and "<a " not in text and "<i>" not in text and "$x$" not in text
        assert "<b>" not in view.markdown and "<a " not in view.markdown
    assert "&lt;b&gt;bold&lt;/b&gt;" in decode_step_view(s, 3, 1, MEAN, True).markdown
    assert md_escape("*a* [l](u) <b> $x$ & `c`") == r"\*a\* \[l\]\(u\) &lt;b&gt; &#36;x&#36; &amp; \`c\`"


@pytest.mark.parametrize("step, layer, head", [(0, 1, 0), (4, 1, 0), (1, 3, 0), (1, 1, 3), ("x", 1, 0), (1, None, 0)])
def test_bad_choices_are_clear_value_errors(step, layer, head):
    with pytest.raises(ValueError, match="Step must be 1–3, layer 1–2 and head 0–2"):
        decode_step_view(_synthetic(["▁a", "▁b"]), step, layer, head)


def test_every_step_is_drawn_from_the_stored_steps_alone(steps):
    """Stepping runs no model: a view is made from ``DecodeSteps`` only (no translator to call), for every step."""
    for t in range(1, steps.n_steps + 1):
        view = decode_step_view(steps, t, 1, MEAN, reveal=True)
        assert view.markdown.startswith(f"**Step {t} of {steps.n_steps}**")
        assert view.top5["data"] and view.self_row["data"] and view.cross_row["data"]


def test_alignment_plot_draws_the_attention_maps(translator):
    r = translator.attention(TEXT)
    fig = alignment_plot(r, "cross", 2, 0)
    lines = [tr for tr in fig["data"] if "attnLines" in (tr.get("meta") or {})]
    assert {tr["meta"]["attnLines"]["head"] for tr in lines} == set(range(1, translator.cfg.n_heads + 1))
    for tr in lines:
        m = tr["meta"]["attnLines"]
        weights = r.cross[1, m["head"] - 1, m["q"], m["k"]]
        np.testing.assert_array_equal(np.rint(weights.astype(np.float64) * 10), m["level"])
    assert fig["config"]["toImageButtonOptions"]["filename"] == "cross_lines_layer2_all"
    assert "layer 2 · all heads" in fig["layout"]["title"]["text"]
    with pytest.raises(ValueError, match="kind"):
        alignment_plot(r, "nope", 1, 0)
    with pytest.raises(ValueError, match="layer must be"):
        alignment_plot(r, "cross", 9, 0)
    with pytest.raises(ValueError, match="Layer must be"):
        alignment_plot(r, "cross", "x", 0)


def test_alignment_plot_waits_for_a_result():
    assert alignment_plot(None, "cross", 1, 0) is None


def test_the_decoding_tab_follows_the_attention_tabs_sentence(translator):
    r = translator.attention(TEXT)
    assert sentence_to_follow(r, "") == r.source_text  # not taken over yet: follow it
    assert sentence_to_follow(r, r.source_text) is None  # taken over already: a sentence typed since stays
    assert sentence_to_follow(None, "") is None  # the Attention tab has shown nothing yet


def test_runs_cache_steps_per_sentence(translator):
    runs = Runs(translator)
    first = runs.steps(TEXT)
    assert runs.steps(f"  {TEXT}\n") is first  # the same sentence as the model reads it: no second run
    check_top_tokens(translator, TEXT, first)
    with pytest.raises(ValueError, match="empty"):
        runs.steps("   ")

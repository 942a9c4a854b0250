"""model.probes.inside, viz.inside and viz.views.inside_head: one head's pieces are the model's own numbers.

The forward-pass ground truth comes from hooks on the attention sub-layer's SublayerConnection while
`Translator.attention` runs (greedy decoding runs one cached step per query, so the greedy cases check
against the incremental path the Attention tab uses); hooks are removed before `inside_head` runs.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from model.network.inference import ASSETS, Translator
from model.probes.inside import contribution_maps, inside_head
from model.probes.replay import prepare
from model.terms import KINDS
from viz import inside as figs
from viz.encode import plotly_dict, plotly_json
from viz.views.inside_head import InsideHeadView, inside_head_view, present, query_choices

FIGURES = InsideHeadView._fields[2:]  # after the two Markdown texts

SOURCE = "a big dog runs in the park near the water."
TARGET = "ein großer hund rennt in dem park."
ATOL, RTOL = 1e-5, 1e-4


def sublayer_module(model, kind: str, layer: int):
    """The SublayerConnection (Add & Norm) around one attention sub-layer."""
    if kind == "encoder_self":
        return model.encoder.layers[layer - 1].sublayer[0]
    return model.decoder.layers[layer - 1].sublayer[0 if kind == "decoder_self" else 1]


def forward_truth(translator: Translator, kind: str, layer: int, target: str | None):
    """Run the Attention tab's pass; return its result and, per query position, (x, Sublayer(x), output)."""
    calls = []

    def hook(module, args, output):
        calls.append((args[0][0].clone(), args[1][0].clone(), output[0].clone()))  # each (Lq, d_model)

    handle = sublayer_module(translator.model, kind, layer).register_forward_hook(hook)
    try:
        result = translator.attention(SOURCE, target)
    finally:
        handle.remove()
    rows = [tuple(t[i].numpy() for t in call) for call in calls for i in range(call[0].size(0))]
    return result, rows  # greedy: one call per step, one row each; teacher forcing: one call, T rows


def layer_norm(module, v: np.ndarray) -> np.ndarray:
    mu, var = v.mean(), v.var()
    return (v - mu) / np.sqrt(var + module.eps) * module.weight.detach().numpy() + module.bias.detach().numpy()


@pytest.mark.parametrize("target", [None, TARGET], ids=["greedy", "teacher_forced"])
@pytest.mark.parametrize("kind", KINDS)
def test_pieces_recompose_the_models_forward_pass(translator, kind, target):
    cfg, model = translator.cfg, translator.model
    dk, sentence = cfg.d_k, prepare(translator, SOURCE, target)  # (the text path is the same: see below)
    for layer in range(1, cfg.n_layers + 1):
        result, rows = forward_truth(translator, kind, layer, target)
        n_q = len(result.tokens(kind)[0])
        assert len(rows) == n_q
        sub = sublayer_module(model, kind, layer)
        mha = (model.encoder.layers[layer - 1].self_attn if kind == "encoder_self" else
               model.decoder.layers[layer - 1].self_attn if kind == "decoder_self" else
               model.decoder.layers[layer - 1].src_attn)
        w_o, b_o = mha.w_o.weight.detach().numpy(), mha.w_o.bias.detach().numpy()
        for query in sorted({0, n_q // 2, n_q - 1}):
            for head in range(1, cfg.n_heads + 1):
                hi = inside_head(translator, sentence, None, kind, layer, head, query)
                x, sublayer_out, out = rows[query]
                # the pieces are the model's: its sub-layer input, output and Add & Norm
                np.testing.assert_allclose(hi.x, x, rtol=RTOL, atol=ATOL)
                np.testing.assert_allclose(hi.sublayer_output, sublayer_out, rtol=RTOL, atol=ATOL)
                np.testing.assert_allclose(hi.layer_output, out, rtol=RTOL, atol=ATOL)
                # recomposed by hand: Concat(head_1..h) W^O + b, then LayerNorm(x + .)
                np.testing.assert_allclose(hi.head_outputs.reshape(-1) @ w_o.T + b_o, sublayer_out, rtol=RTOL,
                                           atol=ATOL)
                np.testing.assert_allclose(layer_norm(sub.norm, hi.x + hi.sublayer_output), out, rtol=RTOL,
                                           atol=1e-4)
                # one head: q, K, V from the projections' slices, α from the scores, head_i = Σ α_j v_j
                sl = slice((head - 1) * dk, head * dk)
                for name, proj, src in (("q", mha.w_q, hi.x), ("k", mha.w_k, hi.x_kv), ("v", mha.w_v, hi.x_kv)):
                    expected = src @ proj.weight.detach().numpy()[sl].T + proj.bias.detach().numpy()[sl]
                    np.testing.assert_allclose(getattr(hi, name), expected, rtol=RTOL, atol=ATOL, err_msg=name)
                np.testing.assert_allclose(hi.scores, hi.k @ hi.q, rtol=RTOL, atol=ATOL)
                np.testing.assert_allclose(hi.weights, result.maps(kind)[layer - 1, head - 1, query], atol=1e-6)
                np.testing.assert_allclose(hi.output, hi.weights @ hi.v, rtol=RTOL, atol=ATOL)
                np.testing.assert_array_equal(hi.output, hi.head_outputs[head - 1])
                assert hi.scale == cfg.scale and hi.query_token == result.tokens(kind)[0][query]
                assert hi.key_tokens == result.tokens(kind)[1]


def test_cross_keys_come_from_the_encoder_output(translator):
    hi = inside_head(translator, SOURCE, None, "cross", 2, 1, 0)
    memory, _ = translator.model.encode(torch.tensor([prepare(translator, SOURCE).src_ids]))
    np.testing.assert_allclose(hi.x_kv, memory[0].detach().numpy(), rtol=RTOL, atol=ATOL)
    assert hi.x_kv.shape[0] == len(hi.key_tokens) == len(prepare(translator, SOURCE).source_tokens)


def test_decoder_self_masks_the_keys_after_the_query(translator):
    n = len(prepare(translator, SOURCE, TARGET).target_tokens)
    for query in range(n):
        hi = inside_head(translator, SOURCE, TARGET, "decoder_self", 1, 1, query)
        np.testing.assert_array_equal(hi.masked, np.arange(n) > query)
        assert (hi.weights[hi.masked] == 0).all() and (hi.weights[~hi.masked] > 0).all()
        assert math.isclose(float(hi.weights.sum()), 1.0, rel_tol=1e-5)
    for kind in ("encoder_self", "cross"):
        assert not inside_head(translator, SOURCE, TARGET, kind, 1, 1, 1).masked.any()


def test_contributions_match_a_hand_computation(translator):
    cfg = translator.cfg
    for kind in KINDS:
        maps = contribution_maps(translator, SOURCE, kind)
        result = translator.attention(SOURCE)
        assert maps.shape == result.maps(kind).shape
        np.testing.assert_allclose(maps.sum(-1), 1.0, rtol=1e-5)
        layer, head, query = cfg.n_layers, 2, maps.shape[2] - 1
        hi = inside_head(translator, SOURCE, None, kind, layer, head, query)
        mha = sublayer_owner(translator.model, kind, layer)
        w_o_i = mha.w_o.weight.detach().double().numpy()[:, (head - 1) * cfg.d_k : head * cfg.d_k]  # (d_model, d_v)
        by_hand = np.array([np.linalg.norm(a * (w_o_i @ v)) for a, v in zip(hi.weights.astype(float), hi.v)])
        np.testing.assert_allclose(hi.contributions, by_hand, rtol=1e-4, atol=1e-7)
        np.testing.assert_allclose(hi.contributions_normalised, by_hand / by_hand.sum(), rtol=1e-4, atol=1e-7)
        np.testing.assert_allclose(maps[layer - 1, head - 1, query], by_hand / by_hand.sum(), rtol=1e-4, atol=1e-6)


def sublayer_owner(model, kind: str, layer: int):
    if kind == "encoder_self":
        return model.encoder.layers[layer - 1].self_attn
    lay = model.decoder.layers[layer - 1]
    return lay.self_attn if kind == "decoder_self" else lay.src_attn


def test_factor_changes_the_weights_but_not_q_k_v(translator):
    trained = inside_head(translator, SOURCE, TARGET, "cross", 2, 3, 2)
    unscaled = inside_head(translator, SOURCE, TARGET, "cross", 2, 3, 2, factor="1")
    for name in ("x", "x_kv", "q", "k", "v", "scores"):
        np.testing.assert_array_equal(getattr(trained, name), getattr(unscaled, name), err_msg=name)
    assert unscaled.scale == 1.0 and trained.scale == translator.cfg.scale
    assert not np.allclose(trained.weights, unscaled.weights)
    e = np.exp(unscaled.scores.astype(np.float64) - unscaled.scores.max())
    np.testing.assert_allclose(unscaled.weights, e / e.sum(), rtol=1e-4, atol=1e-7)
    # footnote 4: trained, × 1 and the factor, computed from the same raw scores
    assert [c.scale for c in unscaled.scale_cases] == [translator.cfg.scale, 1.0, 1.0]
    np.testing.assert_allclose(unscaled.scale_cases[0].weights, trained.weights, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(unscaled.scale_cases[1].weights, unscaled.weights, rtol=1e-4, atol=1e-7)
    # without a factor, the third case is "scaled twice" (× 1/d_k): always three series, × 1 sharpest
    twice = trained.scale_cases[2]
    assert len(trained.scale_cases) == 3 and twice.scale == pytest.approx(translator.cfg.scale ** 2)
    assert trained.scale_cases[1].entropy <= trained.scale_cases[0].entropy + 1e-9 <= twice.entropy + 2e-9
    assert math.isclose(trained.score_std, float(np.std(trained.scores.astype(np.float64))), rel_tol=1e-9)


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(kind="self"), "unknown attention kind"),
        (dict(layer=0), "layer must be a whole number from 1 to 2"),
        (dict(layer=3), "layer must be"),
        (dict(layer=1.5), "layer must be"),
        (dict(layer=float("nan")), "layer must be"),
        (dict(layer="two"), "layer must be"),
        (dict(layer=None), "layer must be"),
        (dict(head=0), "head must be a whole number from 1 to 4"),
        (dict(head=5), "head must be"),
        (dict(head=True), "head must be"),
        (dict(query=-1), "query must be a whole number from 0"),
        (dict(query=10_000), "query must be"),
        (dict(query=float("inf")), "query must be"),
        (dict(factor=0), "factor must be a positive number"),
        (dict(factor=-1.0), "factor must be"),
        (dict(factor=float("nan")), "factor must be"),
        (dict(factor=float("inf")), "factor must be"),
        (dict(factor=1e9), "factor must be"),
        (dict(factor="abc"), "factor must be"),
        (dict(text="   "), "empty"),
    ],
)
def test_bad_input_raises_a_clear_value_error(translator, change, message):
    args = dict(text=SOURCE, target="", kind="decoder_self", layer=1, head=1, query=0, factor=None) | change
    with pytest.raises(ValueError, match=message):
        inside_head(translator, **args)


def test_contribution_maps_reject_an_unknown_kind(translator):
    with pytest.raises(ValueError, match="unknown attention kind"):
        contribution_maps(translator, SOURCE, "both")


def test_the_shared_model_is_left_untouched(translator):
    model = translator.model
    before = {k: v.clone() for k, v in model.state_dict().items()}
    sentence = prepare(translator, SOURCE)
    for kind in KINDS:
        inside_head(translator, sentence, None, kind, 2, 1, 0, factor=1.0)
        contribution_maps(translator, sentence, kind)
    after = model.state_dict()
    assert before.keys() == after.keys()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert not model.training
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


def test_a_prepared_sentence_gives_the_same_numbers(translator):
    sentence = prepare(translator, SOURCE, TARGET)
    a = inside_head(translator, sentence, None, "cross", 1, 2, 1)
    b = inside_head(translator, SOURCE, TARGET, "cross", 1, 2, 1)
    np.testing.assert_array_equal(a.weights, b.weights)
    np.testing.assert_array_equal(a.layer_output, b.layer_output)
    assert sentence.teacher_forced and sentence.target_tokens[0] == "<s>"


def test_json_has_the_endpoint_keys_rounded(translator):
    hi = inside_head(translator, SOURCE, TARGET, "decoder_self", 2, 2, 3, factor=0.5)
    data = json.loads(json.dumps(hi.to_json_dict()))
    n, dk, cfg = len(hi.key_tokens), translator.cfg.d_k, translator.cfg
    expected = {"query_token": hi.query_token, "key_tokens": hi.key_tokens, "scale": 0.5}
    assert {k: data[k] for k in expected} == expected
    assert np.shape(data["q"]) == (dk,) and np.shape(data["k"]) == np.shape(data["v"]) == (n, dk)
    assert len(data["scores"]) == len(data["weights"]) == len(data["contributions"]) == len(data["masked"]) == n
    assert np.shape(data["output"]) == (dk,) and np.shape(data["head_outputs"]) == (cfg.n_heads, dk)
    assert len(data["sublayer_output"]) == len(data["layer_output"]) == cfg.d_model
    assert data["masked"] == [j > 3 for j in range(n)]
    assert data["shapes"]["k"] == [n, dk] and "W^K_i" in data["labels"]["k"]
    np.testing.assert_allclose(data["weights"], hi.weights, atol=1e-5)
    np.testing.assert_allclose(data["scores"], hi.scores, atol=1e-5)
    flat = [v for row in data["v"] for v in row] + data["layer_output"] + data["weights"]
    assert all(len(repr(v).split(".")[-1]) <= 5 for v in flat if isinstance(v, float) and "e" not in repr(v))
    assert [c["scale"] for c in data["footnote4"]] == [round(cfg.scale, 5), 1.0, 0.5]


# ------------------------------------------------------------------------------------------------ presenter
NASTY = ["<b>bold</b>", "▁&amp", "*star*", "$x$", "<s>", "▁a|b"]


def with_tokens(hi):
    """The same numbers, with tokens that would be markup if they were not escaped."""
    keys = [NASTY[j % len(NASTY)] for j in range(len(hi.key_tokens))]
    queries = [NASTY[j % len(NASTY)] for j in range(len(hi.query_tokens))]
    return dataclasses.replace(hi, key_tokens=keys, query_tokens=queries)


@pytest.mark.parametrize("kind", KINDS)
def test_views_serialise_validate_and_escape(translator, kind):
    hi = with_tokens(inside_head(translator, SOURCE, TARGET, kind, 2, 2, 0, factor=0.7))  # query: "<b>bold</b>"
    views = {name: getattr(figs, f"{name}_spec")(hi) for name in FIGURES}
    n, dk, d, h = len(hi.key_tokens), hi.d_k, hi.d_model, hi.n_heads
    for name, spec in views.items():
        text = plotly_json(spec)
        go.Figure(plotly_dict(spec))  # plotly's own schema accepts every property
        assert "<b>bold" not in text and "&lt;b&gt;bold&lt;/b&gt;" in text and "$x$" not in text, name
        if name != "figure2":  # the figures with the key tokens
            assert "&#36;x&#36;" in text and "*star*" in text and "&amp;amp" in text, name
        for trace in spec["data"]:
            assert "layout" not in trace
        assert spec["layout"]["annotations"][0]["font"]["size"] >= 14, name
        assert spec["layout"]["paper_bgcolor"] == "rgba(0,0,0,0)", name
    shapes = {
        "projections": [f"1 × {d}", f"1 × {dk}", f"{n} × {d}", f"{n} × {dk}", "W<sup>K</sup><sub>2</sub>"],
        "scores": [f"1 × {n}", "q·k<sub>j</sub>", "× 0.7", "softmax"],
        "head_output": [f"{n} × {dk}", f"1 × {dk}", "Σ<sub>j</sub>"],
        "figure2": [f"{h} × {dk}", f"1 × {h * dk}", f"1 × {d}", "Concat", "LayerNorm", "W<sup>O</sup>"],
        "footnote4": ["√d_k", "unscaled: × 1", "factor: × 0.7"],
    }
    for name, needles in shapes.items():
        text = plotly_json(views[name])
        for needle in needles:
            assert needle in text, (name, needle)
    z = {tuple(np.shape(t["z"])) for t in views["projections"]["data"]}
    assert z == {(1, d), (1, dk), (n, d), (n, dk)}
    fig2 = {tuple(np.shape(t["z"])) for t in views["figure2"]["data"]}
    assert fig2 == {(1, d), (h, dk), (1, h * dk)}
    if kind == "decoder_self":
        assert "−∞" in plotly_json(views["scores"])
    md = inside_head_view(hi).markdown
    assert "<b>" not in md and "&lt;b&gt;bold&lt;/b&gt;" in md
    starred = inside_head_view(dataclasses.replace(hi, query_tokens=["$*star*|"] * len(hi.query_tokens))).markdown
    assert "“·&#36;\\*star\\*\\|”" in starred and "*star*" not in starred
    assert f"| 1 × {d} |" in md and f"{hi.entropy:.3f}" in md


def test_the_view_is_finished_figures_in_the_listeners_order(translator):
    def run(*args):
        run.calls.append(args)
        return inside_head(translator, prepare(translator, SOURCE), None, *args[1:])

    run.calls = []
    result = translator.attention(SOURCE)
    view = present(run, translator.cfg, result, "cross", "2", 1.0, 0, "")  # the way a form sends numbers
    assert run.calls == [(result, "cross", 2, 1, 0, None)] and isinstance(view, InsideHeadView)
    assert view.markdown.startswith("**Encoder–decoder attention, layer 2, head 1")
    assert view.footnote4_text.startswith("**Footnote 4 on this head.**")
    for name in FIGURES:
        filename = json.loads(json.dumps(getattr(view, name)))["config"]["toImageButtonOptions"]["filename"]
        assert filename == f"cross_layer2_head1_query0_{name}"
        assert "title" not in getattr(view, name)["layout"] and getattr(view, name)["layout"]["margin"]["t"] >= 30
    present(run, translator.cfg, result, "cross", 2, 1, 0, " 0.5 ")
    assert run.calls[-1][-1] == 0.5  # the factor box's text, as a number
    for choices, message in [((2, 9, 0, ""), "head must be between 1 and 4"),
                             ((2, 1, len(result.target_tokens), ""), "query must be between 0 and"),
                             ((2, 1, 0, "abc"), "scale factor must be a number"),
                             ((2, 1, 0, "-1"), "factor must be a positive number")]:
        with pytest.raises(ValueError, match=message):
            present(run, translator.cfg, result, "cross", *choices)
    with pytest.raises(ValueError, match="Visualise a sentence"):
        present(run, translator.cfg, None, "cross", 1, 1, 0)
    assert len(run.calls) == 2  # a bad choice never runs the model


def test_every_axis_draws_its_tick_labels_as_they_are(translator):
    """viz.axes.bare_axis: plotly's default ("hide past div") measures each tick label's box after drawing it, a forced
    layout each time, to hide labels that no figure here lets reach its edge."""
    result = translator.attention(SOURCE)
    view = present(lambda *args: inside_head(translator, prepare(translator, SOURCE), None, *args[1:]),
                   translator.cfg, result, "decoder_self", 1, 1, 1, "")
    for name in FIGURES:
        layout = json.loads(json.dumps(getattr(view, name)))["layout"]
        axes = {key: axis for key, axis in layout.items() if re.fullmatch(r"[xy]axis\d*", key)}
        assert axes and [key for key, axis in axes.items() if axis.get("ticklabeloverflow") != "allow"] == [], name


def test_query_choices_are_plain_text_labels():
    assert query_choices(["▁Two", "dogs", "<b>"]) == [("0: Two", 0), ("1: ·dogs", 1), ("2: <b>", 2)]


# ----------------------------------------------------------------------------------------- shipped model
def test_shipped_model_greedy_cross_matches_the_attention_tab():
    shipped = Translator(ASSETS, device="cpu")
    text = "Two dogs are running through the snow."
    result = shipped.attention(text)
    for kind in KINDS:
        n_q = len(result.tokens(kind)[0])
        hi = inside_head(shipped, text, "", kind, 6, 8, n_q - 1)
        np.testing.assert_allclose(hi.weights, result.maps(kind)[5, 7, n_q - 1], atol=1e-5)
        w_o = sublayer_owner(shipped.model, kind, 6).w_o
        recomposed = hi.head_outputs.reshape(-1) @ w_o.weight.detach().numpy().T + w_o.bias.detach().numpy()
        np.testing.assert_allclose(recomposed, hi.sublayer_output, rtol=1e-4, atol=1e-4)
    assert hi.sentence.translation == result.translation


def test_figure2s_residual_line_runs_clear_of_the_head_labels(translator):
    """The dashed residual (x -> Add & Norm) runs right of every band: the "head 1 … head h" labels sit left of
    the heads band and the arrows' labels in the middle, so it crosses neither (it ran through the head labels)."""
    spec = figs.figure2_spec(inside_head(translator, SOURCE, TARGET, "cross", 2, 1, 0))
    layout = spec["layout"]
    residual = next(s for s in layout["shapes"] if s.get("line", {}).get("dash") == "dot")
    points = [tuple(map(float, p.split(","))) for p in residual["path"].replace("M", "L").split("L")[1:]]
    ends = [layout[k]["domain"][1] for k in layout if k.startswith("xaxis")]
    heads_y = next(layout[k]["domain"] for k in layout if k.startswith("yaxis") and layout[k].get("showticklabels"))
    vertical = [x for (x, y0), (x1, y1) in zip(points, points[1:]) if x == x1]
    assert vertical and all(x > max(ends) for x in vertical)  # right of every band, so right of the head labels
    assert all(y > heads_y[1] or x >= max(ends) for x, y in points)  # no point beside the heads band on the left


def test_head_analysis_rollout_titles_fit_a_phone(translator):
    """The rollout figures' titles are cut at a 390-px phone's right edge unless each line is short (a figure
    ~320 px wide, titles at 11 px there: ~45 characters a line)."""
    from viz.views.head_analysis import rollout_plots

    for figure in rollout_plots(translator.attention(SOURCE), 2):
        title = figure["layout"]["title"]["text"]
        lines = title.split("<br>")
        assert len(lines) == 2 and all(len(line) <= 45 for line in lines), title
        assert "colour 0–" in lines[1] and figure["layout"]["margin"]["t"] >= 58

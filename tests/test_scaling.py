"""model.probes.scaling and viz.scaling: footnote 4's variance, softmax saturation, attention entropy, the figures."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from model.probes import scaling as S
from viz import scaling as V
from viz.views import scaling as views
from viz.views.outputs import finish_figure

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def curves() -> dict:
    return S.saturation_curves()  # defaults: d_k = 1..1024, 16 keys, 512 trials, seed 0


@pytest.fixture(scope="module")
def variance() -> dict:
    return S.dot_product_variance()


# ----------------------------------------------------------------------------- footnote 4


def test_variance_is_d_k_at_64():
    r = S.dot_product_variance(dks=(64,), n_samples=50_000)
    assert abs(r["var"][0] / 64 - 1) < 0.05
    assert abs(r["mean"][0]) < 0.2  # standard error sqrt(64 / 50_000) = 0.036
    assert abs(r["var_scaled"][0] - 1) < 0.05


def test_variance_grows_with_d_k(variance):
    assert list(variance["d_k"]) == [2**i for i in range(11)]
    assert np.all(np.diff(variance["var"]) > 0)
    assert np.all(np.abs(variance["var"] / variance["d_k"] - 1) < 0.2)
    assert np.all(np.abs(variance["var_scaled"] - 1) < 0.2)


def test_samples_are_the_ones_behind_the_variance(variance):
    s = S.dot_product_samples(512)  # same defaults: 4000 samples, seed 0
    assert s.shape == (4000,)
    assert s.var(ddof=1) == pytest.approx(variance["var"][list(variance["d_k"]).index(512)], rel=1e-12)


def test_same_seed_same_numbers_other_seed_other_numbers():
    np.testing.assert_array_equal(S.dot_product_samples(64, 100, seed=3), S.dot_product_samples(64, 100, seed=3))
    assert not np.array_equal(S.dot_product_samples(64, 100, seed=3), S.dot_product_samples(64, 100, seed=4))
    # A d_k's draws do not depend on the rest of the grid.
    a = S.dot_product_variance(dks=(8, 64), n_samples=500, seed=1)
    b = S.dot_product_variance(dks=(64,), n_samples=500, seed=1)
    assert a["var"][1] == b["var"][0]
    c1 = S.saturation_curves(dks=(4, 256), n_trials=64, seed=5)
    c2 = S.saturation_curves(dks=(4, 256), n_trials=64, seed=5)
    c3 = S.saturation_curves(dks=(4, 256), n_trials=64, seed=6)
    for m in S.METRICS:
        np.testing.assert_array_equal(c1["unscaled"][m], c2["unscaled"][m])
    assert not np.array_equal(c1["unscaled"]["entropy"], c3["unscaled"]["entropy"])
    e1, e2 = S.saturation_example(64, 0.5, seed=2), S.saturation_example(64, 0.5, seed=2)
    np.testing.assert_array_equal(e1["chosen"]["weights"], e2["chosen"]["weights"])
    assert not np.array_equal(e1["logits"], S.saturation_example(64, 0.5, seed=3)["logits"])


# ----------------------------------------------------------------------------- saturation


def test_unscaled_softmax_saturates_as_d_k_grows(curves):
    d, un = curves["d_k"], curves["unscaled"]
    assert np.all(np.diff(un["entropy"]) < 0)
    assert np.all(np.diff(un["max_weight"]) > 0)
    late = d >= 32  # below that, sharper softmaxes still have *larger* gradients (the Jacobian peaks near d_k = 8)
    assert np.all(np.diff(un["jacobian_norm"][late]) < 0)
    assert np.all(np.diff(un["grad_q_norm"][late]) < 0)
    assert un["max_weight"][-1] > 0.999 and un["entropy"][-1] < 0.01
    assert un["jacobian_norm"][-1] < 1e-3 * curves["scaled"]["jacobian_norm"][-1]


def test_scaled_softmax_stays_level(curves):
    d = curves["d_k"]
    for m in S.METRICS:
        y = curves["scaled"][m]
        assert y.max() / y.min() < 2.5, m  # over the whole grid (grad_q_norm at d_k = 1 is the low one)
        assert y[d >= 4].max() / y[d >= 4].min() < 1.5, m
    assert np.all(curves["scaled"]["entropy"] > 0.8 * math.log(curves["n_keys"]))


def test_d_k_1_is_the_same_either_way(curves):
    for m in S.METRICS:
        assert curves["scaled"][m][0] == pytest.approx(curves["unscaled"][m][0])


def gradient_ratio(curves: dict, d_k: float, metric: str = "jacobian_norm") -> float:
    """How many times smaller the unscaled gradient is than the scaled one at ``d_k`` (median query)."""
    return V.value_at(curves, "scaled", metric, d_k) / V.value_at(curves, "unscaled", metric, d_k)


def test_unscaled_gradients_are_orders_smaller_at_large_d_k(curves):
    assert gradient_ratio(curves, 512) > 100
    assert gradient_ratio(curves, 512, metric="grad_q_norm") > 10
    assert gradient_ratio(curves, 1) == pytest.approx(1.0)
    # Between grid points the curves are read linearly in log d_k (log value for gradients).
    lo, hi = gradient_ratio(curves, 256), gradient_ratio(curves, 512)
    assert min(lo, hi) <= gradient_ratio(curves, 362) <= max(lo, hi)
    assert V.value_at(curves, "unscaled", "entropy", 512) == pytest.approx(curves["unscaled"]["entropy"][9])


def test_gradients_match_the_formulas():
    """|J|_F against the explicit matrix, and autograd's ∂loss/∂q against factor · Kᵀ J c."""
    q, keys, c = S._sample_attention(16, 8, 32, seed=0, salt=9, dev=torch.device("cpu"))
    factor = 0.7
    m = S._attend(q, keys, c, factor)
    w = m["weights"]  # (T, n)
    jac = torch.diag_embed(w) - w[:, :, None] * w[:, None, :]  # (T, n, n)
    torch.testing.assert_close(m["jacobian_norm"], jac.flatten(1).norm(dim=-1))
    grad_q = factor * torch.einsum("tn,tnd->td", (jac @ c[:, :, None])[..., 0], keys.double())  # (T, d_k)
    torch.testing.assert_close(m["grad_q_norm"], grad_q.norm(dim=-1), rtol=1e-5, atol=1e-9)


def test_example_keeps_tiny_gradients_and_works_under_inference_mode():
    with torch.inference_mode():
        ex = S.saturation_example(1024, factor=1.0)
    assert ex["paper"]["factor"] == pytest.approx(1 / 32)
    assert ex["chosen"]["weights"].shape == (16,) and ex["logits"].shape == (16,)
    assert ex["chosen"]["weights"].sum() == pytest.approx(1.0)
    assert ex["chosen"]["max_weight"] > 0.9 > 0.5 > ex["paper"]["max_weight"]
    assert ex["chosen"]["jacobian_norm"] < ex["paper"]["jacobian_norm"]
    with pytest.raises(ValueError):
        S.saturation_example(64, factor=0)


def test_jacobian_norm_of_a_nearly_one_hot_softmax_is_not_rounded_to_zero():
    # w = (1 - 1e-20, 1e-20): J = [[e, -e], [-e, e]] with e = 1e-20 (1 - e), so |J|_F = 2e-20. In float64
    # w_0 is exactly 1, and the naive w_0 (1 - w_0) would be 0.
    w = torch.tensor([[1.0, 1e-20]], dtype=torch.float64)
    assert S._jacobian_norm(w).item() == pytest.approx(2e-20, rel=1e-9)


# ----------------------------------------------------------------------------- attention entropy


def test_attention_entropy_uniform_and_one_hot():
    uniform = np.full((2, 3, 4, 5), 0.2)
    np.testing.assert_allclose(S.attention_entropy(uniform), np.full((2, 3), math.log(5)))
    one_hot = np.zeros((2, 3, 4, 5))
    one_hot[..., 2] = 1.0
    np.testing.assert_array_equal(S.attention_entropy(one_hot), np.zeros((2, 3)))
    torch.testing.assert_close(
        torch.from_numpy(S.attention_entropy(torch.from_numpy(uniform).float())),
        torch.full((2, 3), math.log(5), dtype=torch.float64),
    )


def test_attention_entropy_masks_and_zeros():
    t = 6
    causal = np.tril(np.ones((t, t)))
    w = np.broadcast_to(causal / causal.sum(-1, keepdims=True), (1, 2, t, t))  # row i uniform over i+1 keys
    out = S.attention_entropy(w)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, np.full((1, 2), np.mean(np.log(np.arange(1, t + 1)))))
    # A key mask drops keys and renormalises; a query row with no key left is left out of the mean.
    uniform = np.full((1, 1, 3, 8), 1 / 8)
    keys = np.arange(8) < 4  # (K,), True = may attend
    np.testing.assert_allclose(S.attention_entropy(uniform, keys), [[math.log(4)]])
    rows = np.ones((3, 8), dtype=bool)
    rows[2] = False  # a padding query
    skewed = uniform.copy()
    skewed[0, 0, 2] = np.eye(8)[0]
    np.testing.assert_allclose(S.attention_entropy(skewed, rows), [[math.log(8)]])
    assert np.isnan(S.attention_entropy(uniform, np.zeros(8, dtype=bool))).all()
    with pytest.raises(ValueError):
        S.attention_entropy(np.ones((3, 4, 4)))
    with pytest.raises(ValueError):
        S.attention_entropy(uniform, np.ones(5, dtype=bool))


# ----------------------------------------------------------------------------- figures and text


def test_variance_figure_and_text(variance):
    fig = V.variance_figure(variance, d_k=64)
    ref = [t for t in fig.data if t.name.startswith("Var = d_k")]
    assert len(ref) == 1
    np.testing.assert_array_equal(ref[0].x, ref[0].y)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert fig.layout.shapes[0].x0 == 64
    text = V.variance_text(variance, 512)
    assert "has mean 0 and variance d_k" in text
    assert f"is {V.fmt(variance['var'][9])} (expected 512)" in text
    fig.to_json()


def test_histogram_figure_shares_the_x_axis():
    s = S.dot_product_samples(256, 2000)
    fig = V.histogram_figure(s, 256, bins=40)
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(bars) == 2 and all(len(b.y) == 40 for b in bars)
    assert fig.layout.xaxis.matches == "x2" or fig.layout.xaxis2.matches == "x"
    assert bars[0].width == pytest.approx(16 * 9 / 40)  # raw: sd 16; scaled: sd 1
    assert bars[1].width == pytest.approx(9 / 40)
    assert "±1.96·√d_k = ±31.4" in V.histogram_text(s, 256)
    fig.to_json()


def test_weights_figure_has_one_bar_per_key():
    ex = S.saturation_example(512, factor=1.0, n_keys=12)
    fig = V.weights_figure(ex)
    assert [t.type for t in fig.data] == ["bar", "bar"]
    assert all(len(t.y) == 12 for t in fig.data)
    assert list(fig.layout.yaxis.range) == [0, 1.02]
    assert "(paper)" in fig.layout.annotations[0].text and "(unscaled)" in fig.layout.annotations[1].text
    assert "times smaller" in V.weights_text(ex)
    assert "slider" in V.weights_text(S.saturation_example(512, factor=1 / math.sqrt(512)))
    fig.to_json()


def test_curves_figure_and_text(curves):
    fig = V.curves_figure(curves, d_k=100)  # off the grid: markers are interpolated
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert len(lines) == 8 and {t.name for t in lines} == {"× 1/√d_k (paper)", "× 1 (unscaled)"}
    assert sum(t.showlegend is not False for t in lines) == 2
    # colour is not the only channel: each setting its own line style and marker, in the legend too
    assert {(t.name, t.line.dash, t.marker.symbol) for t in lines} == {
        ("× 1/√d_k (paper)", "solid", "circle"), ("× 1 (unscaled)", "dash", "square")}
    assert fig.layout.yaxis3.type == "log" and fig.layout.yaxis4.type == "log"
    assert len(fig.layout.shapes) == 4
    text = V.curves_text(curves, 512)
    assert "extremely small gradients" in text
    assert f"{V.times(gradient_ratio(curves, 512))} times smaller" in text
    assert "read between" in V.curves_text(curves, 100)
    fig.to_json()


def test_entropy_comparison_figure_and_text():
    normal, changed = np.full((6, 8), 2.0), np.full((6, 8), 0.5)
    fig = V.entropy_comparison_figure(normal, changed, ("scaled", "unscaled"))
    (trace,) = fig.data  # one map: the changed model's layers at the bottom, two empty rows, the trained one's
    z = np.asarray(trace.z)
    assert trace.type == "heatmap" and trace.coloraxis == "coloraxis" and z.shape == (14, 8)
    assert (z[:6] == 0.5).all() and np.isnan(z[6:8]).all() and (z[8:] == 2.0).all()
    assert list(fig.layout.yaxis.tickvals) == [1, 2, 3, 4, 5, 6, 9, 10, 11, 12, 13, 14]
    assert list(fig.layout.yaxis.ticktext) == [str(k) for k in range(1, 7)] * 2
    assert [(a.text, a.y) for a in fig.layout.annotations] == [("scaled", 14.5), ("unscaled", 6.5)]  # above each half
    assert trace.customdata[0][0] == "unscaled · layer 1" and trace.customdata[13][7] == "scaled · layer 6"
    assert fig.layout.coloraxis.cmax == 2.0  # the larger of the two
    assert not fig.layout.coloraxis.colorbar.title.text and "(nats)" in V.ENTROPY_LABEL  # the unit in the label
    # every tick label drawn as it is (viz.axes.bare_axis: plotly would measure each to hide those past an edge)
    assert {fig.layout.xaxis.ticklabeloverflow, fig.layout.yaxis.ticklabeloverflow,
            fig.layout.coloraxis.colorbar.ticklabeloverflow} == {"allow"}
    text = V.entropy_comparison_text(normal, changed, ("scaled", "unscaled"))
    assert "2 nats with scaled and 0.5 nats with unscaled" in text and "48 of the 48 heads" in text
    with pytest.raises(ValueError):
        V.entropy_comparison_figure(normal, changed[:5])
    fig.to_json()


def test_number_formatting():
    assert V.fmt(512) == "512" and V.fmt(31_000) == "31,000" and V.fmt(-45.6) == "−45.6"
    assert V.fmt(2.4e-7) == "2.4 × 10⁻⁷" and V.fmt(3.1e5) == "3.1 × 10⁵" and V.fmt(0.0442) == "0.0442"
    assert V.weight(0.19) == "0.19" and V.weight(0.99969) == "0.9997" and V.weight(1 - 2e-7) == "1 − 2.0 × 10⁻⁷"
    assert V.times(4.24) == "4.2" and V.times(480.2) == "480" and V.times(3.1e5) == "3.1 × 10⁵"


def test_the_entropy_figure_is_the_one_built_anew():
    """viz.views.scaling.entropy_figure (a figure built once per shape and labels, the numbers written in) gives the
    figure viz.scaling builds for the same numbers, for the app's shape and others, NaN and all."""
    rng = np.random.default_rng(0)
    for shape, labels in (((6, 8), ("× 1/√d_k = 0.204", "changed: × 1 (no scaling)")), ((2, 3), ("a", "b")),
                          ((6, 8), ("× 1/√d_k = 0.204", "changed: × 0.5 = × 1/√4"))):
        for _ in range(3):
            a, b = rng.random(shape) * 3, rng.random(shape).astype(np.float32) * 2
            a[0, 0] = np.nan
            built = finish_figure(V.entropy_comparison_figure(a, b, labels), "entropy_per_head")
            assert json.loads(json.dumps(views.entropy_figure(a, b, labels))) == json.loads(json.dumps(built))
    with pytest.raises(ValueError, match="expected two"):
        views.entropy_figure(np.zeros((6, 8)), np.zeros((6, 7)), ("a", "b"))


def test_a_runs_figures_go_to_the_page_as_json_by_plot_id():
    """viz.views.scaling.live_frames: live_view's three figures as JSON by their Plot's id (the page draws them in the
    figures shown; the maps as the page shows them: tests/test_views.py), the Markdown as it is; each answer its own
    (the page draws every one)."""
    figs = tuple(finish_figure(V.entropy_comparison_figure(np.full((2, 3), i), np.zeros((2, 3))), f"f{i}")
                 for i in range(3))
    frames, summary = views.live_frames((*figs, "**Translation with** …"))
    assert summary == "**Translation with** …"
    sent = json.loads(frames)
    assert list(sent["figures"]) == list(views.LIVE_PLOTS) == ["live-normal", "live-changed", "live-entropy"]
    for plot_id, fig in zip(views.LIVE_PLOTS, figs, strict=True):
        shown = views.page_map(fig)[0] if plot_id != "live-entropy" else fig
        assert sent["figures"][plot_id] == json.loads(json.dumps(shown))
    assert json.loads(views.live_frames((*figs, ""))[0])["answer"] != sent["answer"]


def test_sections_1_and_2_are_built_once_per_choice_and_each_call_gets_figures_of_its_own(monkeypatch):
    """The same for every visitor (seeded samples): built on the first page load, then kept (viz.views.scaling)."""
    built = []
    for name in ("variance_figure", "curves_figure"):
        real = getattr(V, name)
        monkeypatch.setattr(V, name, lambda *a, _real=real, _name=name, **k: built.append(_name) or _real(*a, **k))
    cpu = torch.device("cpu")
    for view, args in ((views.variance_view, (7, 424242)), (views.saturation_view, (7, 12, 0.5, 424242))):
        first, again = view(*args, device=cpu), view(*args, device=cpu)
        assert first == again and first[0] is not again[0]
        first[0]["layout"]["title"] = "changed by its caller"
        assert view(*args, device=cpu)[0]["layout"].get("title") != "changed by its caller"
    assert built == ["variance_figure", "curves_figure"]  # once each (a choice no other test makes)


@pytest.mark.parametrize("n_layers", [2, 6])
def test_the_runs_plots_start_blank_and_as_tall_as_a_runs_entropy_figure(n_layers):
    """viz.views.scaling.live_waiting: the Plots' own figures until a run is drawn in them (assets/web/live.js) — no
    data, the words that say so, and the entropy figure's height for the model's layers (no jump when a run comes)."""
    from model.network.config import TransformerConfig

    cfg = TransformerConfig(vocab_size=20, d_model=16, n_heads=2, n_layers=n_layers, d_ff=32)
    waiting = views.live_waiting(cfg)
    run = V.entropy_comparison_figure(np.ones((n_layers, 2)), np.zeros((n_layers, 2)))
    assert len(waiting) == len(views.LIVE_PLOTS) and all(not w["data"] for w in waiting)
    assert all(w["layout"]["annotations"][0]["text"] == views.WAITING for w in waiting)
    assert waiting[2]["layout"]["height"] == run.layout.height

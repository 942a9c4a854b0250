"""viz.heatmaps and viz.encode: shapes, labels, escaping, payload size and the shape contract. numpy only, no torch."""

import json
import re

import numpy as np
import pytest
from helpers.plotly import array

from viz.encode import plotly_dict, plotly_json, typed_array
from viz.heatmaps import (
    COLORSCALE,
    MASKED_COLOR,
    MASKED_HOVER,
    check_attention,
    detail_figure,
    detail_spec,
    overview_figure,
    overview_spec,
)
from viz.text import escape_token


def attention(*shape: int, seed: int = 0) -> np.ndarray:
    """Random attention `(..., Q, K)` whose rows sum to 1, peaked like real softmax output."""
    rng = np.random.default_rng(seed)
    w = rng.random(shape) ** 4
    return (w / w.sum(-1, keepdims=True)).astype(np.float32)


def tokens(n: int, prefix: str = "tok") -> list[str]:
    return [f"\u2581{prefix}{i}" for i in range(n)]


def overview_tiles(fig) -> dict[tuple[int, int], np.ndarray]:
    """Cut the overview matrix back into tiles, using only the row/column hover labels."""
    trace = fig.data[0]
    z = np.asarray(trace.z)
    tiles: dict[tuple[int, int], np.ndarray] = {}
    layers = sorted({int(m[1]) for m in (re.match(r"L(\d+) query", y) for y in trace.y) if m})
    heads = sorted({int(m[1]) for m in (re.match(r"H(\d+) key", x) for x in trace.x) if m})
    for layer in layers:
        rows = [i for i, y in enumerate(trace.y) if y.startswith(f"L{layer} query ")]
        for head in heads:
            cols = [j for j, x in enumerate(trace.x) if x.startswith(f"H{head} key ")]
            tiles[layer, head] = z[np.ix_(rows, cols)]
    return tiles


# ---------------------------------------------------------------- escape_token


@pytest.mark.parametrize(
    "piece, shown",
    [
        ("\u2581Ein", "Ein"),  # word start: marker dropped
        ("n", "\u00b7n"),  # continuation: middle dot
        ("\u2581", "\u2423"),  # lone marker stays visible
        ("<s>", "&lt;s&gt;"),  # special token: no continuation dot, but escaped
        ("</s>", "&lt;/s&gt;"),
        ("\u2581<b>x</b>", "&lt;b&gt;x&lt;/b&gt;"),
        ("\u2581a&b", "a&amp;b"),
        ("\u2581\"q'", "&#34;q&#39;"),  # plotly knows numeric entities, not &quot;
        ("\u2581$x$", "&#36;x&#36;"),  # never handed to MathJax
        ("\u2581\u05e9\u05dc\u05d5\u05dd", "\u05e9\u05dc\u05d5\u05dd"),  # right-to-left text kept
        ("\u2581\U0001f600", "\U0001f600"),
        ("\u2581a\x07b\n", "a\ufffdb\ufffd"),  # control characters replaced
        ("\u2581a\u202eb", "a\ufffdb"),  # bidi override replaced
    ],
)
def test_escape_token(piece, shown):
    assert escape_token(piece) == shown


def test_escape_token_shortens_long_tokens():
    out = escape_token("\u2581" + "x" * 100, max_len=10)
    assert out == "x" * 9 + "\u2026"
    # shortened before escaping, so an entity is never cut in half
    assert escape_token("\u2581" + "&" * 30, max_len=4) == "&amp;&amp;&amp;\u2026"


def test_escape_token_rejects_non_strings():
    with pytest.raises(ValueError, match="must be a str"):
        escape_token(3)


# ---------------------------------------------------------------- check_attention


def test_check_attention_returns_float32():
    w = attention(2, 3, 4, 5).astype(np.float64)
    out = check_attention(w, tokens(4), tokens(5))
    assert out.dtype == np.float32 and out.shape == (2, 3, 4, 5)


@pytest.mark.parametrize(
    "weights, q, k, ndim, match",
    [
        (attention(4, 5), tokens(3), tokens(5), None, r"4 query rows .* 3 query_tokens"),
        (attention(4, 5), tokens(4), tokens(6), None, r"5 key columns .* 6 key_tokens"),
        (attention(2, 4, 5), tokens(4), tokens(5), 4, r"\(L, H, Q, K\), got 3-D"),
        (attention(2, 3, 4, 5), tokens(4), tokens(5), 2, r"\(Q, K\), got 4-D"),
        (np.ones(5), tokens(1), tokens(5), None, "at least 2-D"),
        (np.full((2, 2), np.nan), tokens(2), tokens(2), None, "NaN"),
        (np.full((2, 2), 1.5), tokens(2), tokens(2), None, r"\[0, 1\]"),
        (np.full((2, 2), -0.5), tokens(2), tokens(2), None, r"\[0, 1\]"),
        (np.array([["a", "b"]]), tokens(1), tokens(2), None, "numeric"),
        (np.zeros((0, 2)), [], tokens(2), None, "empty"),
        (attention(1, 3), "abc", tokens(3), None, "list of token strings"),
    ],
)
def test_check_attention_errors(weights, q, k, ndim, match):
    with pytest.raises(ValueError, match=match):
        check_attention(weights, q, k, ndim=ndim)


def test_figures_enforce_their_shapes():
    w = attention(2, 3, 4, 5)
    with pytest.raises(ValueError, match=r"\(L, H, Q, K\)"):
        overview_figure(w[0], tokens(4), tokens(5), "x")  # (H, Q, K) is not a stack of layers
    with pytest.raises(ValueError, match=r"\(Q, K\)"):
        detail_figure(w[0], tokens(4), tokens(5), "x")
    with pytest.raises(ValueError, match="key_tokens"):
        overview_figure(w, tokens(4), tokens(4), "x")
    with pytest.raises(ValueError, match="query_tokens"):
        detail_figure(w[0, 0], tokens(5), tokens(5), "x")


# ---------------------------------------------------------------- detail_figure


def test_detail_figure_shape_values_and_range():
    w = attention(6, 9, seed=1)
    fig = detail_figure(w, tokens(6, "q"), tokens(9, "k"), "L1 H1")
    (trace,) = fig.data
    z = np.asarray(trace.z)
    assert z.shape == (6, 9) and z.dtype == np.float32
    np.testing.assert_array_equal(z, w)
    assert (trace.zmin, trace.zmax) == (0, 1)
    assert [list(stop) for stop in trace.colorscale] == [list(stop) for stop in COLORSCALE]
    assert trace.colorscale[0][0] == 0 and trace.colorscale[-1][0] == 1
    assert np.asarray(trace.customdata).shape == (6, 9, 4)
    # rows are queries (y), columns are keys (x); row 0 on top
    assert list(fig.layout.yaxis.ticktext) == [f"q{i}" for i in range(6)]
    assert list(fig.layout.xaxis.ticktext) == [f"k{j}" for j in range(9)]
    assert fig.layout.yaxis.range[0] > fig.layout.yaxis.range[1]
    assert fig.layout.yaxis.title.text == "query (attending) token"
    assert fig.layout.xaxis.title.text == "key (attended) token"


def test_detail_hover_names_query_key_and_weight():
    fig = detail_figure(attention(2, 3), ["\u2581Ein", "\u2581Hund"], ["\u2581A", "\u2581dog", "</s>"], "t")
    trace = fig.data[0]
    cell = trace.customdata[1][2]  # row 1 (query "Hund"), column 2 (key "</s>")
    assert list(cell) == ["Hund", "&lt;/s&gt;", 1, 2]
    assert "%{customdata[0]} → %{customdata[1]}: %{z" in trace.hovertemplate


def test_detail_axis_labels_can_be_overridden():
    fig = detail_figure(attention(2, 3), tokens(2), tokens(3), "t", query_label="target", key_label="source <src>")
    assert fig.layout.yaxis.title.text == "target"
    assert fig.layout.xaxis.title.text == "source &lt;src&gt;"


def test_detail_repeated_tokens_stay_apart():
    toks = ["\u2581the", "\u2581cat", "\u2581saw", "\u2581the", "\u2581dog"]
    fig = detail_figure(attention(5, 5), toks, toks, "t")
    for axis, n in ((fig.layout.xaxis, 5), (fig.layout.yaxis, 5)):
        assert axis.type != "category"
        assert list(axis.tickvals) == list(range(n))
        assert list(axis.ticktext).count("the") == 2  # two "the", at two positions
    assert np.issubdtype(np.asarray(fig.data[0].x).dtype, np.number)
    assert np.issubdtype(np.asarray(fig.data[0].y).dtype, np.number)
    assert len(set(np.asarray(fig.data[0].x).tolist())) == 5


# ---------------------------------------------------------------- overview_figure


def test_overview_is_one_trace_with_every_tile_labelled():
    w = attention(3, 4, 5, 7, seed=2)
    fig = overview_figure(w, tokens(5), tokens(7), "encoder")
    assert len(fig.data) == 1 and fig.data[0].type == "heatmap"
    labels = [a.text for a in fig.layout.annotations]
    assert sorted(labels) == sorted(f"L{la} H{h}" for la in range(1, 4) for h in range(1, 5))
    assert fig.layout.height >= 3 * 100  # ~120 px per layer row


def test_overview_values_round_trip_within_quantisation():
    w = attention(3, 4, 5, 7, seed=3)
    fig = overview_figure(w, tokens(5), tokens(7), "encoder")
    trace = fig.data[0]
    assert np.asarray(trace.z).dtype == np.uint8
    tiles = overview_tiles(fig)
    assert sorted(tiles) == [(la, h) for la in range(1, 4) for h in range(1, 5)]
    for (layer, head), tile in tiles.items():
        assert tile.shape == (5, 7)
        np.testing.assert_allclose(tile / trace.colorbar.tickvals[-1], w[layer - 1, head - 1], atol=0.005 + 1e-6)


def test_overview_tile_labels_sit_on_their_tiles_and_layer_one_is_on_top():
    fig = overview_figure(attention(2, 3, 4, 6), tokens(4), tokens(6), "")
    trace = fig.data[0]
    for a in fig.layout.annotations:
        layer, head = map(int, re.fullmatch(r"L(\d+) H(\d+)", a.text).groups())
        # the annotation's anchor is the top-left corner of the tile's first cell
        assert trace.y[int(a.y + 0.5)] == f"L{layer} query 0: tok0"
        assert trace.x[int(a.x + 0.5)] == f"H{head} key 0: tok0"
    first_rows = [trace.y.index(f"L{layer} query 0: tok0") for layer in (1, 2)]
    assert first_rows[0] < first_rows[1]
    assert fig.layout.yaxis.range[0] > fig.layout.yaxis.range[1]  # reversed: row 0 on top


def test_overview_gaps_are_transparent_and_colour_range_is_zero_to_one():
    fig = overview_figure(attention(2, 2, 3, 3), tokens(3), tokens(3), "")
    trace = fig.data[0]
    z = np.asarray(trace.z)
    tile_cells = sum(t.size for t in overview_tiles(fig).values())
    gap = z.max()
    assert (z == gap).sum() == z.size - tile_cells  # every non-tile cell holds the gap value
    opaque = [p for p, c in trace.colorscale if not c.startswith("rgba(0,0,0,0")]
    gap_pos = (gap - trace.zmin) / (trace.zmax - trace.zmin)
    assert gap_pos > max(opaque)  # the gap value falls in the transparent part of the scale
    assert trace.colorscale[-1][1] == "rgba(0,0,0,0)"
    # colour bar reads 0..1, at the values that stand for weight 0 and weight 1
    assert list(trace.colorbar.ticktext) == ["0", "0.25", "0.5", "0.75", "1"]
    assert trace.colorbar.tickvals[0] == trace.zmin == 0
    top = trace.colorbar.tickvals[-1]
    assert max(p for p, _ in trace.colorscale if p * trace.zmax <= top + 1e-9) == pytest.approx(top / trace.zmax)


def test_overview_hover_names_layer_head_query_key_and_weight():
    fig = overview_figure(attention(1, 2, 2, 2), ["\u2581Ein", "n"], ["\u2581A", "</s>"], "")
    trace = fig.data[0]
    assert "L1 query 1: \u00b7n" in trace.y
    assert "H2 key 1: &lt;/s&gt;" in trace.x
    assert trace.hovertemplate.startswith("%{y}<br>%{x}<br>weight %{z}%")


# ---------------------------------------------------------------- escaping and payload


NASTY = ["\u2581<b>x</b>", "&", "<a href='http://e.x'>", '\u2581"q"', "\u2581the", "\u2581the", "\u2581$x$", "x"]


@pytest.mark.parametrize("build", ["overview", "detail"])
def test_markup_in_tokens_is_escaped(build):
    w = attention(2, 2, 8, 8)
    if build == "overview":
        fig = overview_figure(w, NASTY, NASTY, "<b>title</b>")
        texts = list(fig.data[0].x) + list(fig.data[0].y)
    else:
        fig = detail_figure(w[0, 0], NASTY, NASTY, "<b>title</b>")
        cells = np.asarray(fig.data[0].customdata)[..., :2].ravel().tolist()
        texts = list(fig.layout.xaxis.ticktext) + list(fig.layout.yaxis.ticktext) + cells
    joined = "\n".join(texts)
    assert "&lt;b&gt;x&lt;/b&gt;" in joined
    for raw in ("<b>", "<a ", "</b>", '"', "$"):
        assert raw not in joined
    # plotly writes "<" and "/" as \u escapes, so look at the decoded JSON, every string but the templates
    decoded = json.loads(fig.to_json())
    shown = [s for key, s in json_strings(decoded) if key != "hovertemplate"]
    assert "&lt;b&gt;x&lt;/b&gt;" in "\n".join(shown)
    assert not [s for s in shown if "<b>" in s or "</b>" in s or "<a " in s]
    assert decoded["layout"]["title"]["text"] == "&lt;b&gt;title&lt;/b&gt;"


def json_strings(node, key=None):
    """(key, string) for every string in a decoded JSON tree."""
    if isinstance(node, str):
        yield key, node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from json_strings(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from json_strings(v, key)


def realistic_tokens(n: int) -> list[str]:
    words = [
        "<s>",
        "\u2581Ein",
        "\u2581Mann",
        "\u2581in",
        "\u2581einem",
        "\u2581orange",
        "n",
        "\u2581Hemd",
        "\u2581steht",
        "\u2581vor",
        "\u2581dem",
        "\u2581Gebäude",
        ".",
        "\u2581Zwei",
        "\u2581Hunde",
        "</s>",
    ]
    return [words[i % len(words)] for i in range(n)]


@pytest.mark.parametrize(
    "q, k",
    [
        (realistic_tokens(32), realistic_tokens(32)),
        (["\u2581" + "&" * 40] * 32, ["\u2581" + "<b>" * 20] * 32),  # labels that escape to 5x their length
    ],
)
def test_overview_payload_for_six_layers_eight_heads_fits_100_kb(q, k):
    fig = overview_figure(attention(6, 8, 32, 32), q, k, "Encoder self-attention")
    payload = fig.to_json()
    assert len(payload) <= 100_000, len(payload)
    z = json.loads(payload)["data"][0]["z"]
    assert z["dtype"] == "u1" and "bdata" in z  # uint8 typed array, not a JSON list
    assert '"template":{"data"' not in payload.replace(" ", "")  # plotly's default template left out


def test_layout_is_theme_neutral():
    for fig in (
        overview_figure(attention(1, 1, 2, 2), tokens(2), tokens(2), "t"),
        detail_figure(attention(2, 2), tokens(2), tokens(2), "t"),
    ):
        assert fig.layout.paper_bgcolor == fig.layout.plot_bgcolor == "rgba(0,0,0,0)"
        for axis in (fig.layout.xaxis, fig.layout.yaxis):
            assert axis.showgrid is False and axis.zeroline is False
        assert fig.layout.height and fig.layout.width is None  # fixed height, responsive width


# ---------------------------------------------------------------- specs and their JSON (the app's fast path)
@pytest.mark.parametrize("n_q, n_k", [(3, 5), (20, 22)])
def test_specs_serialise_exactly_like_the_validated_figures(n_q, n_k):
    w = attention(6, 8, n_q, n_k)
    q, k = realistic_tokens(n_q), realistic_tokens(n_k)
    q[0] = "<b>&$"  # escaping happens in the spec, so both paths carry it
    assert plotly_dict(overview_spec(w, q, k, "t")) == json.loads(overview_figure(w, q, k, "t").to_json())
    labels = dict(query_label="target", key_label="source")
    got = plotly_dict(detail_spec(w[2, 3], q, k, "d", **labels))
    assert got == json.loads(detail_figure(w[2, 3], q, k, "d", **labels).to_json())
    assert got["data"][0]["z"]["dtype"] == "f4"  # float32 weights stay float32


def test_typed_array_round_trips_and_narrows_integers_like_plotly():
    for arr, code in [
        (np.arange(5), "i1"),
        (np.array([0, 40_000]), "i4"),
        (np.array([-1, 300]), "i2"),
        (np.array([1, 2], dtype=np.uint64), "u1"),
        (np.arange(6, dtype=np.uint8).reshape(2, 3), "u1"),
        (np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4), "f4"),
        (np.array([0.5, 0.25]), "f8"),
    ]:
        spec = typed_array(arr)
        assert spec["dtype"] == code
        if arr.ndim > 1:
            assert spec["shape"] == ", ".join(map(str, arr.shape))
        back = array(spec)
        assert back.dtype == np.dtype(code).newbyteorder("<") and back.shape == arr.shape
        np.testing.assert_array_equal(back, arr)
    assert typed_array(np.array(["a", "b"], dtype=object)) == ["a", "b"]
    assert typed_array(np.array([], dtype=np.int64)) == []


def test_plotly_json_refuses_what_plotly_js_cannot_read():
    with pytest.raises(TypeError, match="set"):
        plotly_json({"data": [{"x": {1, 2}}]})


# ---------------------------------------------------------- honest views: punctuation, masked cells, predictions
@pytest.mark.parametrize(
    "piece, shown",
    [(".", "."), (",", ","), ("!?", "!?"), ('"', "&#34;"), ("\u00bb", "\u00bb"), ("\u2581.", "."),
     ("n.", "\u00b7n."), ("\u2581n", "n"), ("-", "-"), ("$", "\u00b7&#36;")],  # "$" is a symbol, not punctuation
)
def test_a_continuation_piece_of_punctuation_gets_no_dot(piece, shown):
    assert escape_token(piece) == shown


def path_polygons(path: str) -> list[list[tuple[float, float]]]:
    """An SVG path of M/H/V/Z commands (as the mask shapes use) -> its closed polygons."""
    polygons, x, y = [], 0.0, 0.0
    for cmd, args in re.findall(r"([MHVZ])([^MHVZ]*)", path):
        if cmd == "M":
            x, y = map(float, args.split(","))
            polygons.append([(x, y)])
        elif cmd == "H":
            x = float(args)
            polygons[-1].append((x, y))
        elif cmd == "V":
            y = float(args)
            polygons[-1].append((x, y))
    return polygons


def inside(polygons, px: float, py: float) -> bool:
    """Even-odd ray casting over every polygon of a path."""
    hit = False
    for poly in polygons:
        for (x1, y1), (x2, y2) in zip(poly, poly[1:] + poly[:1]):
            if (y1 > py) != (y2 > py) and px < x1 + (py - y1) * (x2 - x1) / (y2 - y1):
                hit = not hit
    return hit


def test_detail_draws_masked_cells_from_the_mask_not_the_values():
    w = np.tril(attention(5, 5, seed=4))  # a causal map: exactly 0 above the diagonal
    w[3, 1] = 0.0  # a learned zero below the diagonal: not masked
    w /= w.sum(-1, keepdims=True)
    fig = detail_figure(w, tokens(5), tokens(5), "t", causal=True)
    (shape,) = fig.layout.shapes
    assert shape.fillcolor == MASKED_COLOR and shape.showlegend is True and "masked" in shape.name
    assert shape.layer == "above" and (shape.xref, shape.yref) == ("x", "y")
    polygons = path_polygons(shape.path)
    masked = {(i, j) for i in range(5) for j in range(5) if inside(polygons, j, i)}
    assert masked == {(i, j) for i in range(5) for j in range(5) if j > i}
    assert fig.layout.showlegend is True
    # the hover says "masked" on exactly those cells, and the weights themselves are untouched
    notes = np.asarray(fig.data[0].customdata)[..., 4]
    assert {(i, j) for i in range(5) for j in range(5) if MASKED_HOVER in notes[i, j]} == masked
    assert "%{customdata[4]}" in fig.data[0].hovertemplate
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), w)


def test_overview_masks_every_tile_with_one_small_path():
    n_layers, n_heads, n = 2, 3, 4
    w = np.tril(attention(n_layers, n_heads, n, n, seed=5))
    w /= w.sum(-1, keepdims=True)
    fig = overview_figure(w, tokens(n), tokens(n), "", causal=True)
    assert len(fig.data) == 1  # still one heatmap trace
    (shape,) = fig.layout.shapes
    assert shape.showlegend is True and fig.layout.showlegend is True
    polygons = path_polygons(shape.path)
    assert len(polygons) == n_layers * n_heads
    trace = fig.data[0]
    for (layer, head), _tile in overview_tiles(fig).items():
        rows = [i for i, y in enumerate(trace.y) if y.startswith(f"L{layer} query ")]
        cols = [j for j, x in enumerate(trace.x) if x.startswith(f"H{head} key ")]
        masked = {(qi, kj) for qi, r in enumerate(rows) for kj, c in enumerate(cols) if inside(polygons, c, r)}
        assert masked == {(qi, kj) for qi in range(n) for kj in range(n) if kj > qi}, (layer, head)
    assert "masked" in trace.hovertemplate
    # no shape and no legend for maps that are not masked
    plain = overview_figure(w, tokens(n), tokens(n), "")
    assert not plain.layout.shapes and plain.layout.showlegend is None


def test_masked_overview_payload_grows_by_the_path_only():
    q = realistic_tokens(32)
    w = np.tril(attention(6, 8, 32, 32))
    w /= w.sum(-1, keepdims=True)
    plain, masked = (len(overview_figure(w, q, q, "t", causal=c).to_json()) for c in (False, True))
    assert masked - plain < 25_000, masked - plain  # ~2·T short commands per tile, not a second matrix


def test_masking_needs_a_square_map():
    with pytest.raises(ValueError, match="square"):
        detail_figure(attention(3, 4), tokens(3), tokens(4), causal=True)
    with pytest.raises(ValueError, match="square"):
        overview_figure(attention(1, 1, 3, 4), tokens(3), tokens(4), causal=True)


def test_detail_hover_names_the_token_each_row_predicts():
    fig = detail_figure(attention(3, 3), ["<s>", "\u2581Zwei", "\u2581<b>"], tokens(3), "t",
                        predicts=["\u2581Zwei", "\u2581<b>", "</s>"])
    notes = np.asarray(fig.data[0].customdata)[..., 4]
    assert list(notes[:, 0]) == ["<br>this row predicts: Zwei", "<br>this row predicts: &lt;b&gt;",
                                 "<br>this row predicts: &lt;/s&gt;"]
    assert all(notes[1, j] == notes[1, 0] for j in range(3))
    with pytest.raises(ValueError, match="one token per query row"):
        detail_figure(attention(3, 3), tokens(3), tokens(3), predicts=["\u2581a"])


@pytest.mark.parametrize("causal", [False, True])
def test_a_100_token_close_up_keeps_its_column_labels_a_line_apart_on_a_390_px_phone(causal):
    """Long sentences stay readable: at 390×844 the close-up's plot area is ~158 px (measured: 326-px figure, rows
    labelled with 8-letter words); the thinning must hold for that, for longer row labels and beside the masked
    cells' legend."""
    from viz.views.attention.focus import LINE_HEIGHT, PHONE_FIGURE_PX, columns_px, thin_ticks

    n = 100
    words = [f"\u2581{'w' * (3 + i % 6)}{i}" for i in range(n)]  # row labels up to 10 characters
    spec = thin_ticks(detail_spec(attention(n, n), words, words, "t", causal=causal))
    layout = spec["layout"]
    x = layout["xaxis"]
    step = x["tickvals"][1] - x["tickvals"][0]
    plot_px = columns_px(layout)
    assert plot_px < PHONE_FIGURE_PX - 150 - (40 if causal else 0)  # room left by row labels, colour bar (legend)
    assert step * plot_px / n >= LINE_HEIGHT * 12  # neighbours at least a label height apart at that width
    if not causal:
        assert step * 158 / n >= LINE_HEIGHT * 12  # … and at the width measured in Chromium
    assert len(x["tickvals"]) >= 5  # thinned, not emptied (beside the legend a phone's plot area is ~100 px)

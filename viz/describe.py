"""What every figure says to someone who cannot see it: its name, a short summary of what stands out, the table of
the values it draws and, for the figures one walks cell by cell, the grid the arrow keys move over.

One description per figure, computed on the server from the same numbers as the figure, and carried inside it
(``attach``: ``layout.meta.describe``), so that it is replaced whenever the figure is: the page script
(assets/web/a11y.js) gives the figure its accessible name and description, the "As a table" toggle with its CSV
download, announces it after the visitor's own action, and walks its grid with the arrow keys.

``describe.overview`` (every layer × head), ``describe.attention_map`` (one map: the close-up, rollout, a step),
``describe.stats_grid`` (Head analysis) are written for their figures; ``describe.generic`` reads any other plotly
figure's own traces (heatmaps, lines, bars): every figure ``viz.views.outputs.finish_figure`` finishes gets one.

The meta's shape (a contract with assets/web/a11y.js):
  {"name": str, "summary": str,
   "table": {"caption": str, "corner": str, "columns": [str], "rows": [str],
             "values": [[number | str | null]] | {"trace": i}},      # {"trace": i}: trace i's z, as drawn
   "grid": {"blocks": [{"xaxis": "x", "yaxis": "y", "x": [[lo, hi]], "y": [[lo, hi]],   # cells in axis units
                        "labels": [[str]] | null,   # null: "'row' → 'column': value", the table's cell
                        "send": [[str]] | [str]}]}      # per cell (or per row): what Enter sends, as a click does
Text is plain (tokens as the figures show them, unescaped): the page writes it as text, never as markup.
Gradio-free: numbers, tokens and plain dicts in, plain dicts out.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from model.terms import BOS_PIECE, EOS_PIECE
from viz.heatmaps import HEAD_LABEL, LAYER_LABEL
from viz.text import plain_token

META = "describe"  # the key of layout.meta that holds a figure's description
TOP = 3  # pairs or heads a summary names
MAX_EXPLICIT = 4000  # table cells written out; a larger heatmap's table is its trace's z ({"trace": i})
SINK = 0.5  # a head that puts this share of its weight or more on </s> (or <s>) is named as a sink


@dataclass
class Table:
    caption: str
    corner: str  # the header of the row headers' column
    columns: list[str]
    rows: list[str]
    values: list[list] | dict  # rows × columns, or {"trace": i}: that trace's z as drawn


@dataclass
class Description:
    name: str
    summary: str
    table: Table
    grid: dict | None = field(default=None)
    # the language of the table's row and column headers where it is not the page's English (German tokens), also
    # that of the figure's y (rows) and x (columns) tick labels: {"rows": "de", "columns": None}
    lang: dict | None = field(default=None)

    def meta(self) -> dict:
        out = asdict(self)
        for key in ("grid", "lang"):
            if out[key] is None:
                del out[key]
        return out

    def in_german(self, rows: bool, columns: bool) -> Description:
        """This description with its rows (queries) and columns (keys) marked German where they are."""
        if rows or columns:
            self.lang = {"rows": "de" if rows else None, "columns": "de" if columns else None}
        return self


def attach(figure: dict, description: Description | None) -> dict:
    """``figure`` (a plotly dict) carrying ``description`` in ``layout.meta.describe``; returns it."""
    if description is not None:
        layout = figure.setdefault("layout", {})
        meta = layout.get("meta") if isinstance(layout.get("meta"), dict) else {}
        layout["meta"] = {**meta, META: description.meta()}
    return figure


def of(figure: dict) -> dict | None:
    """The description a figure carries (``attach``), or None."""
    meta = (figure.get("layout") or {}).get("meta")
    return meta.get(META) if isinstance(meta, dict) else None


def reword(figure: dict, word: str, new: str) -> None:
    """The figure's description with ``word`` said as ``new`` (the close-up of contributions instead of weights)."""
    said = of(figure)
    if said is None:
        return

    def swap(text):
        return re.sub(rf"\b{word}\b", new, text) if isinstance(text, str) else text

    for key in ("name", "summary"):
        said[key] = swap(said[key])
    said["table"]["caption"] = swap(said["table"]["caption"])
    said["table"]["columns"] = [swap(c) for c in said["table"]["columns"]]
    for block in (said.get("grid") or {}).get("blocks", []):
        if block.get("labels"):
            block["labels"] = [[swap(label) for label in row] for row in block["labels"]]


def fmt(value: float, digits: int = 2) -> str:
    """A number as a summary says it: weights with ``digits`` decimals."""
    return f"{value:.{digits}f}"


def _round(values: np.ndarray, digits: int = 3) -> list:
    return [[None if not np.isfinite(v) else round(float(v), digits) for v in row] for row in values]


def tokens(pieces: Sequence[str]) -> list[str]:
    """Pieces as the figures show them ("▁dogs" -> "dogs", "m" -> "·m"), as plain text."""
    return [plain_token(p) for p in pieces]


# ------------------------------------------------------------------------------------------ one attention map
def strongest_pairs(weights: np.ndarray, q: Sequence[str], k: Sequence[str], n: int = TOP) -> list[str]:
    """The ``n`` largest cells as "'q' → 'k' 0.88", largest first (ties: the earlier row, then column)."""
    flat = np.nan_to_num(weights.astype(np.float64), nan=-1.0).ravel()
    order = np.argsort(-flat, kind="stable")[:n]
    return [f"'{q[i // weights.shape[1]]}' → '{k[i % weights.shape[1]]}' {fmt(flat[i])}" for i in order if flat[i] >= 0]


def mean_row_max(weights: np.ndarray) -> float:
    """The mean over rows of each row's largest value (1: every row looks at one key; 1/K: uniform)."""
    return float(np.nanmean(np.nanmax(weights, axis=1)))


def attention_map(name: str, weights, query_tokens: Sequence[str], key_tokens: Sequence[str], *,
                  measure: str = "weight", masked=None, query_start: int = 0, key_start: int = 0,
                  send_rows: Sequence[str] | None = None) -> Description:
    """One map (Q, K): rows are queries, columns keys. ``masked`` (Q, K) bool: cells the figure draws grey.
    ``query_start``/``key_start``: the figure's axis position of the first row/column (a focused close-up).
    ``send_rows``: per row, what Enter on a cell of it sends (the close-up: the query's position)."""
    w = np.asarray(weights, dtype=np.float64)  # (Q, K)
    q, k = tokens(query_tokens), tokens(key_tokens)
    shown = np.where(masked, np.nan, w) if masked is not None else w
    summary = (f"Strongest: {', '.join(strongest_pairs(shown, q, k))}; "
               f"the mean of each row's largest {measure} {fmt(mean_row_max(shown))}.")
    values = _round(shown)
    if masked is not None:
        values = [["masked" if m else v for v, m in zip(row, mrow)] for row, mrow in zip(values, masked)]
    table = Table(f"{name}: {measure} of each query (row) on each key (column)", "query \\ key", k, q, values)
    n_q, n_k = w.shape
    grid = {"blocks": [{"xaxis": "x", "yaxis": "y", "labels": None,
                        "x": [[key_start + j - 0.5, key_start + j + 0.5] for j in range(n_k)],
                        "y": [[query_start + i - 0.5, query_start + i + 0.5] for i in range(n_q)],
                        "send": list(send_rows) if send_rows is not None else None}]}
    return Description(f"{name}, {n_q} queries × {n_k} keys", summary, table, grid)


def alignment(name: str, weights, heads: Sequence[int], query_tokens: Sequence[str], key_tokens: Sequence[str],
              *, threshold: float = 0.05) -> Description:
    """The alignment view of one layer: a line from each query to each key, as strong as its weight, for ``heads``
    (``weights`` (len(heads), Q, K)). Per head its strongest pairs; its table: each head's weights, a row per query."""
    w = np.asarray(weights, dtype=np.float64)  # (H', Q, K)
    q, k = tokens(query_tokens), tokens(key_tokens)
    drawn = int((w >= threshold).sum())
    if len(heads) == 1:
        said = attention_map(name, w[0], query_tokens, key_tokens)
        return Description(said.name, f"{drawn} lines (weights of {threshold} or more). {said.summary}", said.table)
    per_head = "; ".join(f"head {h}: {', '.join(strongest_pairs(m, q, k, 2))}" for h, m in zip(heads, w))
    rows = [f"head {h}: {t}" for h in heads for t in q]
    values = [row for m in w for row in _round(m)]
    table = Table(f"{name}: each head's weight of each query (row) on each key (column)", "head: query \\ key", k,
                  rows, values)
    return Description(f"{name}, {len(q)} queries × {len(k)} keys, {len(heads)} heads",
                       f"{drawn} lines (weights of {threshold} or more). Strongest per head: {per_head}.", table)


# ------------------------------------------------------------------------------------- every layer × head
@dataclass
class HeadSummary:
    """Per head of an (L, H, Q, K) stack: how sharp (mean of rows' largest weight), the share on each sink key."""

    sharp: np.ndarray  # (L, H)
    sinks: dict[str, np.ndarray]  # special key text -> (L, H) mean share of a row on it
    strongest: list[list[str]]  # (L, H) the head's largest cell, "'q' → 'k' 0.88"


def head_summary(maps, query_tokens: Sequence[str], key_tokens: Sequence[str]) -> HeadSummary:
    w = np.asarray(maps, dtype=np.float64)  # (L, H, Q, K)
    q, k = tokens(query_tokens), tokens(key_tokens)
    sharp = w.max(axis=3).mean(axis=2)  # (L, H)
    sinks = {piece: w[..., [j for j, t in enumerate(key_tokens) if t == piece]].sum(axis=3).mean(axis=2)
             for piece in (EOS_PIECE, BOS_PIECE) if piece in key_tokens}
    strongest = [[strongest_pairs(w[layer, head], q, k, 1)[0] for head in range(w.shape[1])]
                 for layer in range(w.shape[0])]
    return HeadSummary(sharp, sinks, strongest)


def _heads(order, values: np.ndarray) -> str:
    n_heads = values.shape[1]
    return ", ".join(f"L{i // n_heads + 1} H{i % n_heads + 1} {fmt(values.flat[i])}" for i in order)


def overview(what: str, maps, query_tokens: Sequence[str], key_tokens: Sequence[str], *, measure: str = "weight",
             trace: Mapping | None = None) -> Description:
    """The overview of every layer × head (``what``: the kind's name): which heads are sharp, which are diffuse and
    which sink on </s> (or <s>), not L × H × Q × K numbers. Its table: one row per head, the statistics the summary
    uses. ``trace``: the overview's heatmap (its x and y category labels place the tiles), for the grid."""
    stats = head_summary(maps, query_tokens, key_tokens)
    n_layers, n_heads = stats.sharp.shape
    flat = stats.sharp.ravel()
    order = np.argsort(-flat, kind="stable")
    largest = f"largest {measure}"
    parts = [f"Sharpest heads (mean of each row's {largest}): {_heads(order[:TOP], stats.sharp)}",
             f"most diffuse: {_heads(order[::-1][:TOP], stats.sharp)}"]
    for piece, share in stats.sinks.items():
        sunk = [i for i in np.argsort(-share.ravel(), kind="stable") if share.flat[i] >= SINK]
        parts.append(f"{len(sunk)} of {share.size} heads put half their {measure} or more on {piece}"
                     + (f": {_heads(sunk[:TOP], share)}" + (" …" if len(sunk) > TOP else "") if sunk else ""))
    summary = "; ".join(parts) + "."
    columns = [f"mean {largest}", *(f"on {piece}" for piece in stats.sinks), "strongest pair"]
    rows, values = [], []
    for layer in range(n_layers):
        for head in range(n_heads):
            rows.append(f"layer {layer + 1}, head {head + 1}")
            values.append([round(float(stats.sharp[layer, head]), 3),
                           *(round(float(s[layer, head]), 3) for s in stats.sinks.values()),
                           stats.strongest[layer][head]])
    table = Table(f"{what}: per head, the statistics of its map", "head", columns, rows, values)
    labels = [[f"layer {layer + 1}, head {head + 1}: " + ", ".join(
        f"{c} {v if isinstance(v, str) else fmt(v)}" for c, v in zip(columns, values[layer * n_heads + head]))
        for head in range(n_heads)] for layer in range(n_layers)]
    grid = None
    if trace is not None:
        grid = {"blocks": [{"xaxis": "x", "yaxis": "y", "labels": labels,
                            "x": _spans(trace["x"], HEAD_LABEL, n_heads),
                            "y": _spans(trace["y"], LAYER_LABEL, n_layers),
                            "send": [[f"{layer + 1},{head + 1}" for head in range(n_heads)]
                                     for layer in range(n_layers)]}]}
    name = f"{what}: all {n_layers} layers × {n_heads} heads, {len(query_tokens)} queries × {len(key_tokens)} keys"
    return Description(name, summary, table, grid)


def _spans(labels: Sequence[str], pattern: str, n: int) -> list[list[float]]:
    """Per group 1..n, the [first - 0.5, last + 0.5] of the category positions whose label matches it."""
    spans: dict[int, list[int]] = {}
    for i, label in enumerate(labels):
        match = re.match(pattern, str(label))
        if match:
            spans.setdefault(int(match.group(1)), []).append(i)
    return [[min(spans[g]) - 0.5, max(spans[g]) + 0.5] for g in range(1, n + 1)]


# ---------------------------------------------------------------------------------------- Head analysis's grid
def stats_grid(stat_label: str, values: Mapping[str, np.ndarray], roles: Mapping[str, Sequence[Sequence[str]]],
               kind_labels: Mapping[str, str]) -> Description:
    """The grid of one statistic per head, one panel per kind: per kind the highest and lowest heads, and how many
    heads hold each role. Its table: one row per kind, layer and head; its grid: the panels one under another."""
    parts, rows, table_values, blocks = [], [], [], []
    for i, (kind, v) in enumerate(values.items()):
        v = np.asarray(v, dtype=np.float64)  # (L, H), NaN where no row was counted
        n_layers, n_heads = v.shape
        order = np.argsort(-np.nan_to_num(v.ravel(), nan=-np.inf), kind="stable")
        finite = [j for j in order if np.isfinite(v.flat[j])]
        counts: dict[str, int] = {}
        for role in (r for row in roles[kind] for r in row):
            counts[role] = counts.get(role, 0) + 1
        common = ", ".join(f"{role} {n}" for role, n in sorted(counts.items(), key=lambda c: (-c[1], c[0])))
        said = (f"highest {_heads(finite[:TOP], v)}; lowest {_heads(finite[::-1][:TOP], v)}" if finite
                else "no value")
        parts.append(f"{kind_labels[kind]}: {said}; roles: {common}")
        for layer in range(n_layers):
            for head in range(n_heads):
                value = v[layer, head]
                rows.append(f"{kind_labels[kind]}, layer {layer + 1}, head {head + 1}")
                table_values.append([round(float(value), 3) if np.isfinite(value) else None, roles[kind][layer][head]])
        suffix = "" if i == 0 else str(i + 1)
        label = [[f"{kind_labels[kind]}, layer {layer + 1}, head {head + 1}: {stat_label} "
                  f"{fmt(v[layer, head], 3) if np.isfinite(v[layer, head]) else 'none'}, {roles[kind][layer][head]}"
                  for head in range(n_heads)] for layer in range(n_layers)]
        blocks.append({"xaxis": f"x{suffix}", "yaxis": f"y{suffix}", "labels": label,
                       "x": [[h + 0.5, h + 1.5] for h in range(n_heads)],
                       "y": [[layer + 0.5, layer + 1.5] for layer in range(n_layers)],
                       "send": [[f"{kind},{layer + 1},{head + 1}" for head in range(n_heads)]
                                for layer in range(n_layers)]})
    table = Table(f"{stat_label} and role of every head", "head", [stat_label, "role"], rows, table_values)
    name = f"Head analysis: {stat_label} of every head, " + ", ".join(kind_labels[k] for k in values)
    return Description(name, "; ".join(parts) + ".", table, {"blocks": blocks})


# ------------------------------------------------------------------------------------------- any other figure
def plain(text) -> str:
    """Figure text (plotly markup: <br>, <b>, <sub>, entities) as plain text on one line."""
    text = re.sub(r"<br\s*/?>", " · ", "" if text is None else str(text))
    text = re.sub(r"<sub>(.*?)</sub>", r"_\1", text)
    text = re.sub(r"<sup>(.*?)</sup>", r"^\1", text)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", text))).strip()


def array(value) -> np.ndarray | None:
    """A plotly JSON array (a list, or a typed array {"dtype", "bdata", "shape"}) as numpy; None if absent."""
    if value is None:
        return None
    if isinstance(value, dict) and "bdata" in value:
        out = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]).newbyteorder("<"))
        shape = value.get("shape")
        return out.reshape([int(s) for s in str(shape).split(",")]) if shape else out
    if isinstance(value, np.ndarray):
        return value
    return np.asarray(value, dtype=object)


def _numbers(value) -> np.ndarray | None:
    arr = array(value)
    if arr is None:
        return None
    try:
        return np.asarray(np.where(arr == None, np.nan, arr), dtype=np.float64)  # noqa: E711 (elementwise)
    except (TypeError, ValueError):
        return None


def _title(layout: Mapping, fallback: str) -> str:
    """The figure's title, else its export title, else ``fallback`` and its panels' titles (annotations on paper)."""
    title = layout.get("title")
    text = plain(title.get("text") if isinstance(title, Mapping) else title)
    export = (layout.get("meta") or {}).get("export") if isinstance(layout.get("meta"), Mapping) else None
    panels = _panels(layout)
    return text or plain((export or {}).get("title")) or (f"{fallback}: {'; '.join(panels[:4])}" if panels
                                                          else fallback)


def _axis(layout: Mapping, trace: Mapping, letter: str) -> Mapping:
    ref = str(trace.get(f"{letter}axis") or letter)
    return layout.get(f"{letter}axis{ref[1:]}") or {}


def _axis_title(layout: Mapping, trace: Mapping, letter: str) -> str:
    title = _axis(layout, trace, letter).get("title")
    return plain(title.get("text") if isinstance(title, Mapping) else title)


def _labels(trace: Mapping, layout: Mapping, letter: str, n: int) -> list[str]:
    """The n positions of a heatmap axis as its tick labels say them (else the trace's coordinates, else 1..n)."""
    coords = array(trace.get(letter))
    coords = list(coords.tolist()) if coords is not None else list(range(n))
    axis = _axis(layout, trace, letter)
    ticks = dict(zip(axis.get("tickvals") or [], axis.get("ticktext") or []))
    return [plain(ticks.get(c, c)) for c in coords][:n] + [str(i + 1) for i in range(len(coords), n)]


def _heatmap(i: int, trace: Mapping, layout: Mapping, title: str) -> tuple[str, Table] | None:
    z = _numbers(trace.get("z"))
    if z is None or z.ndim != 2 or not z.size:
        return None
    rows, cols = _labels(trace, layout, "y", z.shape[0]), _labels(trace, layout, "x", z.shape[1])
    flat = np.nan_to_num(z, nan=-np.inf).ravel()
    top = [j for j in np.argsort(-flat, kind="stable")[:TOP] if np.isfinite(flat[j])]
    pairs = ", ".join(f"{rows[j // z.shape[1]]} → {cols[j % z.shape[1]]} {float(flat[j]):.3g}" for j in top)
    finite = z[np.isfinite(z)]
    said = (f"{z.shape[0]} rows × {z.shape[1]} columns, from {finite.min():.3g} to {finite.max():.3g}; "
            f"largest: {pairs}" if finite.size else f"{z.shape[0]} rows × {z.shape[1]} columns, empty")
    name = plain(trace.get("name")) or title
    values = {"trace": i} if z.size > MAX_EXPLICIT else [[None if not np.isfinite(v) else float(f"{v:.4g}")
                                                          for v in row] for row in z]
    return said, Table(f"{name}: the value of each cell", "row \\ column", cols, rows, values)


def _series(trace: Mapping, layout: Mapping) -> tuple[list, np.ndarray] | None:
    """A line or bar trace's (x, y), x as its axis's tick labels say it; horizontal bars turned the other way."""
    across, along = ("y", "x") if trace.get("type") == "bar" and trace.get("orientation") == "h" else ("x", "y")
    x, y = array(trace.get(across)), _numbers(trace.get(along))
    if y is None or y.ndim != 1 or not y.size:
        return None
    xs = list(x.tolist()) if x is not None else list(range(len(y)))
    axis = _axis(layout, trace, across)
    ticks = dict(zip(axis.get("tickvals") or [], axis.get("ticktext") or []))
    return [plain(ticks.get(v, v)) if isinstance(ticks.get(v, v), str) else v for v in xs], y


def _panels(layout: Mapping) -> list[str]:
    """The panels' titles: make_subplots writes them as annotations on the paper, in the order of the subplots."""
    return [plain(a.get("text")) for a in layout.get("annotations") or []
            if isinstance(a, Mapping) and a.get("xref") == "paper" and a.get("yref") == "paper" and a.get("text")]


def _in_panel(name: str, trace: Mapping, traces: Sequence[Mapping], layout: Mapping) -> str:
    """A line's name where several panels (y axes) share the figure: its panel's title (or its axis's) first, and a
    line style other than solid after it (a panel may draw two quantities of one run, solid and dotted)."""
    axes = sorted({str(t.get("yaxis") or "y") for t in traces}, key=lambda a: int(a[1:] or 1))
    dash = (trace.get("line") or {}).get("dash")
    name = f"{name} ({dash})" if dash and dash != "solid" else name
    if len(axes) < 2:
        return name
    panels, axis = _panels(layout), str(trace.get("yaxis") or "y")
    panel = panels[axes.index(axis)] if len(panels) == len(axes) else _axis_title(layout, trace, "y")
    return f"{panel}: {name}" if panel and panel != name else name


def _said(name: str, xs: list, y: np.ndarray, bars: bool) -> str:
    finite = np.isfinite(y)
    if not finite.any():
        return f"{name}: no value"
    if bars or len(y) <= TOP:
        return f"{name}: " + ", ".join(f"{x} {v:.3g}" for x, v in zip(xs, y) if np.isfinite(v))
    first, last = np.flatnonzero(finite)[[0, -1]]
    hi, lo = int(np.nanargmax(y)), int(np.nanargmin(y))
    return (f"{name}: {y[first]:.3g} at {xs[first]} to {y[last]:.3g} at {xs[last]}, "
            f"highest {y[hi]:.3g} at {xs[hi]}, lowest {y[lo]:.3g} at {xs[lo]}")


def generic(figure: Mapping, fallback: str = "Figure") -> Description | None:
    """Any plotly figure (plain JSON: lists or typed arrays) described from its own traces: each heatmap's size,
    range and largest cells; each line's or bar's values (first and last, highest and lowest). Its table: the
    first heatmap's cells, else one row per x value and one column per line or bar (every value drawn).
    None for a figure with nothing drawn."""
    layout, traces = figure.get("layout") or {}, figure.get("data") or []
    title = _title(layout, fallback)
    said, table, series = [], None, []
    for i, trace in enumerate(traces):
        kind = trace.get("type") or "scatter"
        if trace.get("visible") is False or (trace.get("meta") or None) == "legend-only":
            continue
        if kind == "heatmap":
            found = _heatmap(i, trace, layout, title)
            if found:
                said.append(found[0])
                table = table or found[1]
        elif kind in ("scatter", "scattergl", "bar"):
            found = _series(trace, layout)
            if found and any(v is not None for v in found[0]):
                value_axis = "x" if kind == "bar" and trace.get("orientation") == "h" else "y"
                name = plain(trace.get("name")) or _axis_title(layout, trace, value_axis) or f"series {len(series) + 1}"
                name = _in_panel(name, trace, traces, layout)
                if ((trace.get("marker") or {}).get("pattern") or {}).get("shape"):  # hatched: masked, not a value
                    said.append(f"{len(found[0])} masked (hatched)")
                    series.append(("masked", found[0], np.full(len(found[0]), np.nan)))
                    continue
                said.append(_said(name, *found, kind == "bar"))
                series.append((name, *found))
    if not said:
        return None
    if table is None:
        table = _series_table(title, series, layout)
    summary = "; ".join(said[:6]) + ("; …" if len(said) > 6 else "") + "."
    return Description(title, summary, table)


def _series_table(title: str, series: list, layout: Mapping) -> Table:
    xs = list(dict.fromkeys(x for _, xs, _ in series for x in xs if x is not None))
    column = {name: dict(zip(xs_, ys.tolist())) for name, xs_, ys in series}
    values = [[None if (v := column[name].get(x)) is None or v != v else float(f"{v:.4g}") for name, _, _ in series]
              for x in xs]
    x_title = _axis_title(layout, {}, "x") or "x"
    return Table(f"{title}: the values drawn", x_title, [name for name, _, _ in series], [str(x) for x in xs],
                 values)

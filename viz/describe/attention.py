"""What the attention figures say: one map (the close-up, a step, rollout), the alignment view, the overview of
every layer × head, and Head analysis's grid of one statistic per head."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from model.terms import BOS_PIECE, EOS_PIECE
from viz.describe.core import SINK, TOP, Description, Table, _round, fmt, tokens
from viz.heatmaps import HEAD_LABEL, LAYER_LABEL


# ------------------------------------------------------------------------------------------ one attention map
def strongest_pairs(weights: np.ndarray, q: Sequence[str], k: Sequence[str], n: int = TOP) -> list[str]:
    """The ``n`` largest cells as "'q' → 'k' 0.88", largest first (ties: the earlier row, then column)."""
    flat = np.asarray(weights, dtype=np.float64).ravel()
    flat = np.where(np.isnan(flat), -1.0, flat)
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
    cells = w.reshape(*w.shape[:2], -1)
    top = np.where(np.isnan(cells), -1.0, cells).argmax(axis=2)  # (L, H): the first largest, as strongest_pairs
    n_k = w.shape[3]
    strongest = [[f"'{q[i // n_k]}' → '{k[i % n_k]}' {fmt(cells[layer, head, i])}" for head, i in enumerate(row)]
                 for layer, row in enumerate(top.tolist())]
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
    rx = re.compile(pattern)
    for i, label in enumerate(labels):
        match = rx.match(str(label))
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

"""Bytes of the overview figure: 48 heads (6 layers × 8) × 32 tokens, built in-process by viz.heatmaps.

Also the time to build and serialise it two ways: the app's path (a spec dict, `viz.encode.plotly_json`)
and, as the baseline, a validated `go.Figure` and its `to_json()`. Both give the same JSON (tested).
"""

from __future__ import annotations

import time

import numpy as np

from bench.common import words
from viz.encode import plotly_json
from viz.heatmaps import overview_figure, overview_spec

SHAPE = (6, 8, 32, 32)  # (L, H, Q, K)


def random_attention(shape: tuple[int, ...] = SHAPE, seed: int = 0) -> np.ndarray:
    """Random rows that sum to 1, float32."""
    w = np.random.default_rng(seed).random(shape, dtype=np.float32) ** 4  # peaky, like trained heads
    return w / w.sum(axis=-1, keepdims=True)


def text_with_tokens(tokenizer, n_tokens: int) -> str:
    """The shortest ``words(k)`` whose encoding plus EOS has ``n_tokens`` pieces (or the closest below)."""
    best = words(1)
    for k in range(1, 60):
        text = words(k)
        count = len(tokenizer.encode(text)) + 1  # + EOS
        if count > n_tokens:
            break
        best = text
        if count == n_tokens:
            break
    return best


def _median_ms(fn, repeat: int = 15) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(1000 * (time.perf_counter() - t0))
    return float(np.median(times))


def run() -> dict:
    weights = random_attention()
    tokens = [f"\u2581tok{i}" for i in range(SHAPE[2])]  # "tok0" ... like SentencePiece word pieces
    overview_figure(weights, tokens, tokens).to_json()  # warm-up: plotly loads its validators on first use
    data = plotly_json(overview_spec(weights, tokens, tokens)).encode()
    figure_ms = _median_ms(lambda: overview_figure(weights, tokens, tokens).to_json())
    spec_ms = _median_ms(lambda: plotly_json(overview_spec(weights, tokens, tokens)))
    return {
        "shape": list(SHAPE),
        "overview_bytes": len(data),
        "spec_json_ms": spec_ms,  # what the app does
        "figure_json_ms": figure_ms,  # baseline: go.Figure + to_json
        "speedup": figure_ms / spec_ms,
    }

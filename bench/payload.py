"""Bytes of the overview figure: 48 heads (6 layers × 8) × 32 tokens, built in-process by viz.heatmaps."""

from __future__ import annotations

import time

import numpy as np

from bench.common import words
from viz.heatmaps import overview_figure

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


def run() -> dict:
    weights = random_attention()
    tokens = [f"\u2581tok{i}" for i in range(SHAPE[2])]  # "tok0" ... like SentencePiece word pieces
    overview_figure(weights, tokens, tokens).to_json()  # warm-up: plotly loads its validators on first use
    t0 = time.perf_counter()
    fig = overview_figure(weights, tokens, tokens)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    data = fig.to_json().encode()
    json_s = time.perf_counter() - t0
    return {"shape": list(SHAPE), "overview_bytes": len(data), "build_ms": 1000 * build_s, "to_json_ms": 1000 * json_s}

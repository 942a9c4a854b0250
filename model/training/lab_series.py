"""What the time-lapse maps say over training, per kind and layer: how uniform the softmax is, and how large its
own gradient is — footnote 4's two quantities, computed from the same maps for every run.

- ``entropy_ratio``: each row's entropy ÷ log(its number of keys) — 1 is exactly uniform (the query ignores which
  key is which), 0 is one-hot; the mean over rows, heads and the time-lapse sentences.
- ``softmax_grad``: each row's ‖diag(p) − p pᵀ‖_F, the softmax's Jacobian with respect to its scores
  (``model.training.recorder.softmax_jacobian_norm``) — it shrinks towards 0 as the softmax saturates; √(n−1)/n
  for a uniform row of n keys.

Rows that see a single key (the decoder's first position) have no choice and are left out. The shipped time-lapse
maps are stored as uint8 (weight = value / 255), the snapshots of a run that is exported as float16: the ratios
agree to about 0.01.

S - steps, L - layers, H - heads, Q - queries, K - keys.
"""

from __future__ import annotations

import numpy as np
import torch

from model.training.recorder import softmax_jacobian_norm

KEYS = ("entropy_ratio", "softmax_grad")


def _row_measures(maps: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """maps (S, L, H, Q, K) -> (entropy ratio, softmax gradient, rows kept), each (S, L, H, Q)."""
    w = np.asarray(maps, dtype=np.float64)
    q, k = w.shape[-2:]
    n_keys = np.arange(1, q + 1) if kind == "decoder_self" else np.full(q, k)  # (Q,) keys a row may see
    keep = np.broadcast_to(n_keys > 1, w.shape[:-1])
    entropy = -(w * np.log(np.maximum(w, 1e-30))).sum(-1)
    ratio = entropy / np.log(np.maximum(n_keys, 2))
    grad = softmax_jacobian_norm(torch.from_numpy(w)).numpy()
    return ratio, grad, keep


def series(sentences: list[dict[str, np.ndarray]], kinds: tuple[str, ...]) -> dict[str, dict[str, list]]:
    """``sentences``: per time-lapse sentence, kind -> maps (S, L, H, Q, K). -> key -> kind -> (S × L) lists."""
    out: dict[str, dict[str, list]] = {key: {} for key in KEYS}
    for kind in kinds:
        sums = {key: 0.0 for key in KEYS}
        count = 0.0
        for maps in sentences:
            ratio, grad, keep = _row_measures(maps[kind], kind)
            sums["entropy_ratio"] = sums["entropy_ratio"] + (ratio * keep).sum(axis=(2, 3))  # (S, L)
            sums["softmax_grad"] = sums["softmax_grad"] + (grad * keep).sum(axis=(2, 3))
            count = count + keep.sum(axis=(2, 3))
        for key in KEYS:
            out[key][kind] = np.round(sums[key] / count, 4).tolist()
    return out


COLLAPSED = 0.98  # of uniform: the shipped maps' uint8 rounding alone keeps an exactly uniform row near 0.998


def collapse_step(steps: list[int], cross_ratio: list[list[float]], threshold: float = COLLAPSED) -> int | None:
    """The first time-lapse step from which the cross-attention of every layer stays at least ``threshold`` of
    uniform to the end of training (the model no longer looks at the source), or None."""
    uniform = [min(layers) >= threshold for layers in cross_ratio]
    for i in range(len(steps)):
        if all(uniform[i:]):
            return steps[i]
    return None

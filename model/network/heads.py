"""Addressing attention heads: the three kinds of attention, and per-call head masks (ablation).

A head mask is (3, N, h) in ``KINDS`` order: entry [kind, layer, head] multiplies that head's output before
Concat(head_1..h) W^O (§3.2.2), 1 keeps it and 0 switches it off for one call; the shared model never changes.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import Tensor

from model.network.config import TransformerConfig
from model.terms import KINDS


def head_mask_for(cfg: TransformerConfig, off: Iterable[tuple[str, int, int]]) -> Tensor:
    """A (3, N, h) float head mask, all ones but 0 at each ``(kind, layer, head)`` of ``off`` (0-based)."""
    mask = torch.ones(len(KINDS), cfg.n_layers, cfg.n_heads)
    for kind, layer, head in off:
        if kind not in KINDS:
            raise ValueError(f"unknown attention kind {kind!r}; expected one of {', '.join(KINDS)}")
        if not (0 <= layer < cfg.n_layers and 0 <= head < cfg.n_heads):
            raise ValueError(
                f"no head {kind}:{layer}:{head}: layers run 0..{cfg.n_layers - 1}, heads 0..{cfg.n_heads - 1}"
            )
        mask[KINDS.index(kind), layer, head] = 0.0
    return mask


def check_head_mask(head_mask, cfg: TransformerConfig, like: Tensor) -> Tensor | None:
    """Validate a per-call head mask and return it as ``like``'s dtype and device (None = every head on).

    ``head_mask``: anything ``torch.as_tensor`` takes, shape (3, N, h) in ``KINDS`` order, bool or numbers in
    [0, 1]. Head i of that attention block has its output Attention(Q W^Q_i, K W^K_i, V W^V_i) multiplied by
    the value before Concat(head_1..h) W^O: 1 keeps it, 0 switches it off (ablation; Michel et al., 2019).
    The attention *weights* returned for an ablated head are still the ones its softmax computed.
    """
    if head_mask is None:
        return None
    mask = torch.as_tensor(head_mask)
    expected = (len(KINDS), cfg.n_layers, cfg.n_heads)
    if tuple(mask.shape) != expected:
        raise ValueError(f"head_mask has shape {tuple(mask.shape)}, expected (kinds, layers, heads) = {expected}")
    mask = mask.to(device=like.device, dtype=like.dtype)
    if not bool(((mask >= 0) & (mask <= 1)).all()):
        raise ValueError("head_mask values must lie in [0, 1]: 1 keeps a head, 0 switches it off")
    return mask

"""Equation (1) as whole matrices: one head of one attention sub-layer for every query at once, and the rule that
picks the head and query on which footnote 4 shows best.

``head_matrices``: the chosen sub-layer recomputed from its weights one matrix at a time (the layers below come from
``model.probes.replay``, as for ``model.probes.inside``, which does the same for one query row):

    X_q (Q, d_model) --W^Q_i--> Q (Q, d_k)      X_kv (n, d_model) --W^K_i, W^V_i--> K, V (n, d_k)
    S = Q Kᵀ (Q, n) --× scale--> S·scale --+ M--> (M: −∞ on a key after its query, decoder self only)
    A = softmax row by row (Q, n; rows sum to 1) --· V--> head_i (Q, d_v)
    Concat(head_1..h) (Q, h·d_v = d_model) --· W^O + b--> MultiHead (Q, d_model)

``factor`` replaces the scale in this sub-layer only (the same meaning as in ``model.probes.inside``).

``footnote4_pick``: the (layer, head, query) of one kind whose softmax changes most when the scale is taken out —
the largest total-variation distance ½ Σ_j |α_j(trained) − α_j(× 1)| over every layer, head and query, the queries
being the sentence's own pieces (not <s> or </s>, unless there is nothing else); ties: the first in layer, head,
query order. It depends on the model and the sentence
only; "Inside a head" opens on it, so that its footnote-4 figure shows two visibly different softmaxes.
Notation: L layers, H heads, Q query positions, n keys, d_k = d_v = d_model / H.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from model.network.inference import Translator
from model.probes.inside import _np, _sentence, _softmax, _split, _sublayer, check_factor, check_index
from model.probes.replay import LayerInputs, Sentence, check_kind, layer_inputs
from model.terms import BOS_PIECE, EOS_PIECE


@dataclass
class HeadMatrices:
    """Every matrix of Equation (1) for one head and all its queries, float32 numpy (see the module doc)."""

    kind: str
    layer: int  # 1-based
    head: int  # 1-based
    query_tokens: list[str]
    key_tokens: list[str]
    sentence: Sentence
    x_q: np.ndarray  # (Q, d_model) the sub-layer's input at every query
    x_kv: np.ndarray  # (n, d_model) what keys and values are projected from (cross: the encoder output)
    q: np.ndarray  # (Q, d_k) = X_q W^Q_i + b
    k: np.ndarray  # (n, d_k) = X_kv W^K_i + b
    v: np.ndarray  # (n, d_v) = X_kv W^V_i + b
    scores: np.ndarray  # (Q, n) Q Kᵀ, before scaling
    scale: float  # the factor used (the model's own 1/√d_k unless a factor was given)
    model_scale: float
    masked: np.ndarray  # (Q, n) bool, True = −∞ before the softmax
    weights: np.ndarray  # (Q, n) A = softmax(scale · Q Kᵀ + M), rows sum to 1
    output: np.ndarray  # (Q, d_v) head_i = A V
    concat: np.ndarray  # (Q, H·d_v) Concat(head_1..head_h)
    sublayer_output: np.ndarray  # (Q, d_model) Concat W^O + b

    @property
    def d_k(self) -> int:
        return int(self.q.shape[1])

    @property
    def d_model(self) -> int:
        return int(self.x_q.shape[1])

    @property
    def n_heads(self) -> int:
        return self.concat.shape[1] // self.d_k

    @property
    def scaled(self) -> np.ndarray:
        """(Q, n) the scores times the scale."""
        return (self.scores.astype(np.float64) * self.scale).astype(np.float32)

    @property
    def scaled_as_trained(self) -> bool:
        return math.isclose(self.scale, self.model_scale)


def _inputs(translator: Translator, s: Sentence, kind: str, layer: int, inputs: LayerInputs | None) -> LayerInputs:
    q_tokens, _ = s.tokens(kind)
    inputs = layer_inputs(translator, s, kind, layer) if inputs is None else inputs
    if inputs.kind != kind or len(inputs.x_q) < layer or inputs.x_q.shape[1] != len(q_tokens):
        raise ValueError(f"these layer inputs are not {kind}'s up to layer {layer} for this sentence")
    return inputs


def causal(kind: str, n_q: int, n: int) -> np.ndarray:
    """(Q, n) bool: the cells −∞ before the softmax (decoder self-attention: a key after its query, §3.1)."""
    if kind == "decoder_self":
        return np.triu(np.ones((n_q, n), dtype=bool), k=1)
    return np.zeros((n_q, n), dtype=bool)


@torch.inference_mode()
def head_matrices(
    translator: Translator, text: str | Sentence, target: str | None, kind: str, layer, head, factor=None,
    inputs: LayerInputs | None = None,
) -> HeadMatrices:
    """Every matrix of head ``head`` of layer ``layer`` (both 1-based) of ``kind`` for all queries at once, on the
    sentence the Attention tab shows. ``text`` may be a `prepare`d Sentence; ``inputs`` its ``layer_inputs``."""
    cfg, model = translator.cfg, translator.model
    kind = check_kind(kind)
    layer = check_index(layer, "layer", 1, cfg.n_layers)
    head = check_index(head, "head", 1, cfg.n_heads)
    factor = check_factor(factor)
    s = _sentence(translator, text, target)
    q_tokens, k_tokens = s.tokens(kind)
    inputs = _inputs(translator, s, kind, layer, inputs)
    weight = model.embed.weight  # the model's device and dtype
    x_q, x_kv = (torch.tensor(a[layer - 1], device=weight.device, dtype=weight.dtype)
                 for a in (inputs.x_q, inputs.x_kv))  # (Q, d_model), (n, d_model)
    mha, _ = _sublayer(model, kind, layer)
    scale = cfg.scale if factor is None else factor
    i = head - 1
    q = _split(mha, mha.w_q(x_q))  # (H, Q, d_k)
    k = _split(mha, mha.w_k(x_kv))  # (H, n, d_k)
    v = _split(mha, mha.w_v(x_kv))  # (H, n, d_v)
    scores = q @ k.transpose(-1, -2)  # (H, Q, n)
    masked_np = causal(kind, len(q_tokens), len(k_tokens))
    weights = _softmax(scores, scale, torch.from_numpy(masked_np).to(scores.device))  # (H, Q, n)
    heads = weights @ v  # (H, Q, d_v)
    concat = heads.transpose(0, 1).reshape(x_q.size(0), -1)  # (Q, H·d_v)
    return HeadMatrices(
        kind=kind, layer=layer, head=head, query_tokens=list(q_tokens), key_tokens=list(k_tokens), sentence=s,
        x_q=_np(x_q), x_kv=_np(x_kv), q=_np(q[i]), k=_np(k[i]), v=_np(v[i]), scores=_np(scores[i]),
        scale=float(scale), model_scale=float(cfg.scale), masked=masked_np, weights=_np(weights[i]),
        output=_np(heads[i]), concat=_np(concat), sublayer_output=_np(mha.w_o(concat)),
    )


@dataclass(frozen=True)
class Footnote4Pick:
    """Where footnote 4 shows best on one sentence and kind (``footnote4_pick``)."""

    kind: str
    layer: int  # 1-based
    head: int  # 1-based
    query: int  # 0-based
    distance: float  # ½ Σ_j |α_j(trained) − α_j(× 1)|, 0 … 1


def scale_distances(scores: torch.Tensor, scale: float, masked: torch.Tensor) -> torch.Tensor:
    """(..., Q, n) raw scores -> (..., Q) total-variation distance between the softmax as trained (× ``scale``) and
    unscaled (× 1); 0 for a query with one allowed key. In float64: the unscaled softmax saturates."""
    scores = scores.double()
    return 0.5 * (_softmax(scores, scale, masked) - _softmax(scores, 1.0, masked)).abs().sum(-1)


@torch.inference_mode()
def footnote4_pick(translator: Translator, text: str | Sentence, target: str | None, kind: str,
                   inputs: LayerInputs | None = None) -> Footnote4Pick:
    """The (layer, head, query) of ``kind`` where taking 1/√d_k out changes the softmax most (see the module doc).
    ``inputs``: the sentence's ``layer_inputs`` for ``kind``, all layers (else they run now)."""
    cfg, model = translator.cfg, translator.model
    kind = check_kind(kind)
    s = _sentence(translator, text, target)
    inputs = _inputs(translator, s, kind, cfg.n_layers, inputs)
    weight = model.embed.weight
    distances = []
    for layer in range(1, cfg.n_layers + 1):
        x_q, x_kv = (torch.tensor(a[layer - 1], device=weight.device, dtype=weight.dtype)
                     for a in (inputs.x_q, inputs.x_kv))
        mha, _ = _sublayer(model, kind, layer)
        scores = _split(mha, mha.w_q(x_q)) @ _split(mha, mha.w_k(x_kv)).transpose(-1, -2)  # (H, Q, n)
        masked = torch.from_numpy(causal(kind, x_q.size(0), x_kv.size(0))).to(scores.device)
        distances.append(scale_distances(scores, cfg.scale, masked))  # (H, Q)
    d = torch.stack(distances).cpu().numpy()  # (L, H, Q)
    special = np.array([t in (BOS_PIECE, EOS_PIECE) for t in s.tokens(kind)[0]])
    if not special.all():
        d[:, :, special] = -1.0  # a word of the sentence, not <s> or </s>
    layer, head, query = np.unravel_index(int(np.argmax(d)), d.shape)  # the first of equal maxima
    return Footnote4Pick(kind, int(layer) + 1, int(head) + 1, int(query), float(d[layer, head, query]))

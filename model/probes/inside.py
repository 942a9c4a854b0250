"""Inside one head: Equation (1) and Figure 2 (right) of the paper, computed step by step for one query.

On demand and for one attention sub-layer only. The layers below run on the model's own modules (eval
mode, nothing stored on them, the hot path untouched); the chosen sub-layer is then recomputed from its
weights one piece at a time, for one query position:

    x_q --W^Q_i--> q (d_k)          x_kv --W^K_i, W^V_i--> K, V (n, d_k)   [cross: x_kv = encoder output]
    scores_j = q·k_j --× scale--> mask (decoder self: keys after the query -> −∞) --softmax--> α (n)
    head_i = Σ_j α_j v_j (d_v);  the h heads -> Concat (h·d_v = d_model) --W^O--> Sublayer(x) (d_model)
    layer_output = LayerNorm(x + Sublayer(x))        (post-LN, §3.1; sub-layer dropout is off in eval)

``factor`` replaces the scale in this one sub-layer (all its heads) and nowhere else, so x, q, K and V
are the trained model's whatever the factor. Footnote 4 on this head: the same raw scores scaled three ways —
as trained, unscaled (× 1), and by the factor (without one, "scaled twice", × 1/d_k: flatter than trained, as
× 1 is sharper); the std of q·k over the allowed keys against √d_k.

Contributions (Kobayashi et al., 2020, "Attention is not only a weight"): key j moves the output by
α_j · v_j W^O_i, W^O_i being the d_v rows of W^O that head i's slice of the Concat meets. Since α_j is a
scalar, its norm is α_j · ‖v_j W^O_i‖.
The layers below come from ``model.probes.replay`` (the Attention tab's sentence replayed, each attention
sub-layer's inputs kept: an app caches them, and a head then costs only its own projections).
Notation: L layers, H heads, d_k = d_v = d_model / H, Q query positions, n keys. Entropies in nats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor, nn

from model.network.inference import Translator
from model.network.transformer import EncoderDecoder, MultiHeadAttention
from model.probes.replay import LayerInputs, Sentence, attention_layers, check_kind, layer_inputs, prepare

MAX_FACTOR = 100.0  # the same bound as the /attention endpoint's scale
_DIGITS = 5  # decimals in the JSON


@dataclass(frozen=True)
class ScaleCase:
    """One head's softmax for one scale (footnote 4): weights over the keys, entropy, largest weight."""

    label: str
    scale: float
    weights: np.ndarray  # (n,)
    entropy: float  # nats; at most log(number of allowed keys)
    max_weight: float


@dataclass
class HeadInside:
    """Every piece of one head's attention for one query, as float32 numpy arrays (see the module doc)."""

    kind: str
    layer: int  # 1-based
    head: int  # 1-based
    query: int  # 0-based position on the query side
    query_tokens: list[str]
    key_tokens: list[str]
    sentence: Sentence
    x: np.ndarray  # (d_model,) the sub-layer input at the query (the residual)
    x_kv: np.ndarray  # (n, d_model) what keys and values are projected from
    q: np.ndarray  # (d_k,) = x W^Q_i + b
    k: np.ndarray  # (n, d_k) = x_kv W^K_i + b
    v: np.ndarray  # (n, d_v) = x_kv W^V_i + b
    scores: np.ndarray  # (n,) raw q·k_j, before scaling
    scale: float  # the factor used (the model's own 1/√d_k unless a factor was given)
    model_scale: float
    masked: np.ndarray  # (n,) bool, True = masked out (−∞ before the softmax)
    weights: np.ndarray  # (n,) α_j
    output: np.ndarray  # (d_v,) head_i = Σ_j α_j v_j
    head_outputs: np.ndarray  # (H, d_v) every head's output for this query
    sublayer_output: np.ndarray  # (d_model,) Concat(head_1..h) W^O + b
    layer_output: np.ndarray  # (d_model,) LayerNorm(x + Sublayer(x))
    value_norms: np.ndarray  # (n,) ‖v_j W^O_i‖
    contributions: np.ndarray  # (n,) ‖α_j v_j W^O_i‖
    scale_cases: list[ScaleCase] = field(default_factory=list)  # trained, × 1, the factor (or × 1/d_k)

    @property
    def query_token(self) -> str:
        return self.query_tokens[self.query]

    @property
    def d_k(self) -> int:
        return int(self.q.shape[0])

    @property
    def n_heads(self) -> int:
        return int(self.head_outputs.shape[0])

    @property
    def d_model(self) -> int:
        return int(self.x.shape[0])

    @property
    def scaled_as_trained(self) -> bool:
        """True when the scores were scaled by the model's own 1/√d_k (no other factor given)."""
        return math.isclose(self.scale, self.model_scale)

    @property
    def entropy(self) -> float:
        return entropy(self.weights)

    @property
    def max_weight(self) -> float:
        return float(self.weights.max())

    @property
    def score_std(self) -> float:
        """Std of the raw q·k_j over the allowed keys (footnote 4 expects √d_k for unit-variance q, k)."""
        return float(self.scores[~self.masked].astype(np.float64).std())

    @property
    def contributions_normalised(self) -> np.ndarray:
        return normalise_rows(self.contributions)

    def to_json_dict(self) -> dict:
        """The `/inside_head` payload: every piece, rounded, with shapes and the paper's symbols."""
        arrays = {
            "x": self.x, "q": self.q, "k": self.k, "v": self.v, "scores": self.scores, "weights": self.weights,
            "output": self.output, "head_outputs": self.head_outputs, "sublayer_output": self.sublayer_output,
            "layer_output": self.layer_output, "value_norms": self.value_norms,
            "contributions": self.contributions, "contributions_normalised": self.contributions_normalised,
        }
        s = self.sentence
        return {
            "kind": self.kind, "layer": self.layer, "head": self.head, "query": self.query,
            "query_token": self.query_token, "query_tokens": list(self.query_tokens),
            "key_tokens": list(self.key_tokens),
            "source_text": s.source_text, "translation": s.translation, "teacher_forced": s.teacher_forced,
            "warnings": list(s.warnings),
            "scale": _round(self.scale), "model_scale": _round(self.model_scale),
            "masked": self.masked.tolist(),
            **{name: _round(arr) for name, arr in arrays.items()},
            "entropy": _round(self.entropy), "max_weight": _round(self.max_weight),
            "score_std": _round(self.score_std), "sqrt_d_k": _round(math.sqrt(self.d_k)),
            "footnote4": [
                {"label": c.label, "scale": _round(c.scale), "weights": _round(c.weights),
                 "entropy": _round(c.entropy), "max_weight": _round(c.max_weight)}
                for c in self.scale_cases
            ],
            "shapes": {name: list(arr.shape) for name, arr in arrays.items()},
            "labels": LABELS,
        }


LABELS = {  # the paper's symbol for each JSON array (i = this head, j = a key)
    "x": "x: the sub-layer's input at the query (d_model)",
    "q": "q = x W^Q_i + b^Q_i (d_k)",
    "k": "K = x_kv W^K_i + b^K_i (keys × d_k); cross-attention: x_kv = the encoder output",
    "v": "V = x_kv W^V_i + b^V_i (keys × d_v)",
    "scores": "q·k_j (keys), before scaling",
    "weights": "α_j = softmax_j(scale · q·k_j), masked keys −∞ (keys)",
    "output": "head_i = Σ_j α_j v_j (d_v)",
    "head_outputs": "head_1..head_h for this query (h × d_v)",
    "sublayer_output": "MultiHead = Concat(head_1..head_h) W^O + b^O (d_model)",
    "layer_output": "LayerNorm(x + MultiHead) (d_model), post-LN §3.1",
    "value_norms": "‖v_j W^O_i‖ (keys)",
    "contributions": "‖α_j v_j W^O_i‖ (keys), Kobayashi et al. 2020",
    "contributions_normalised": "contributions / their sum (keys)",
}


def _round(value):
    """float64 first: np.round on float32 gives back long digits (0.01686999946832657)."""
    return np.round(np.asarray(value, dtype=np.float64), _DIGITS).tolist()


def entropy(weights) -> float:
    """Softmax entropy in nats, 0·log 0 = 0."""
    p = np.asarray(weights, dtype=np.float64)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def normalise_rows(values: np.ndarray) -> np.ndarray:
    """Divide by the sum over the last axis (a row of zeros stays zeros)."""
    total = values.sum(-1, keepdims=True)
    return (values / np.where(total > 0, total, 1)).astype(np.float32)


# ------------------------------------------------------------------------------------------ input checks
def _number(value) -> float | None:
    """A real number (ints, floats, numeric strings as forms send them), else None. Booleans are not numbers."""
    try:
        number = None if isinstance(value, bool) or value is None else float(value)
    except (TypeError, ValueError):
        return None
    return number if number is not None and math.isfinite(number) else None


def check_index(value, name: str, lo: int, hi: int) -> int:
    """A whole number in [lo, hi]."""
    number = _number(value)
    if number is None or number != int(number) or not lo <= number <= hi:
        raise ValueError(f"{name} must be a whole number from {lo} to {hi}, got {value!r}")
    return int(number)


def check_factor(factor) -> float | None:
    """None or "" -> None (the model's own 1/√d_k); else a number in (0, MAX_FACTOR]."""
    if factor is None or (isinstance(factor, str) and not factor.strip()):
        return None
    number = _number(factor)
    if number is None or not 0 < number <= MAX_FACTOR:
        raise ValueError(f"factor must be a positive number up to {MAX_FACTOR:g} (empty = the model's 1/√d_k), "
                         f"got {factor!r}")
    return number


def _sentence(translator: Translator, text, target) -> Sentence:  # a Sentence, or text to prepare
    return text if isinstance(text, Sentence) else prepare(translator, text, target)


def _np(t: Tensor) -> np.ndarray:
    return t.float().cpu().numpy()


def _sublayer(model: EncoderDecoder, kind: str, layer: int) -> tuple[MultiHeadAttention, nn.Module]:
    """One attention sub-layer's module and the LayerNorm of its Add & Norm (``layer`` from 1)."""
    if kind == "encoder_self":
        block = model.encoder.layers[layer - 1]
        return block.self_attn, block.sublayer[0].norm
    block = model.decoder.layers[layer - 1]
    return (block.self_attn, block.sublayer[0].norm) if kind == "decoder_self" else (block.src_attn,
                                                                                        block.sublayer[1].norm)


def _split(mha: MultiHeadAttention, y: Tensor) -> Tensor:
    """(..., d_model) -> (H, ..., d_k): one slice per head."""
    return y.view(*y.shape[:-1], mha.n_heads, mha.d_k).movedim(-2, 0)


def _value_norms(mha: MultiHeadAttention, v: Tensor) -> Tensor:
    """v (H, n, d_v) -> ‖v_j W^O_h‖ (H, n). W^O_h: the d_v rows of W^O (= w_o.weight's columns) of head h."""
    w_o = mha.w_o.weight.view(-1, mha.n_heads, mha.d_k)  # (d_model, H, d_v): w_o.weight is (out, in)
    return torch.linalg.vector_norm(torch.einsum("hnd,mhd->hnm", v, w_o), dim=-1)  # (H, n)


def _softmax(scores: Tensor, scale: float, masked: Tensor) -> Tensor:
    """As the model does it: scale, the dtype's most negative number on masked keys, softmax."""
    scaled = (scores * scale).masked_fill(masked, torch.finfo(scores.dtype).min)
    return torch.softmax(scaled, dim=-1)


def _case(label: str, scale: float, scores: np.ndarray, masked: np.ndarray) -> ScaleCase:
    w = _softmax(torch.from_numpy(scores.astype(np.float64)), scale, torch.from_numpy(masked)).numpy()
    return ScaleCase(label, float(scale), w.astype(np.float32), entropy(w), float(w.max()))


# ------------------------------------------------------------------------------------------ public API
@torch.inference_mode()
def inside_head(
    translator: Translator, text: str | Sentence, target: str | None, kind: str, layer, head, query, factor=None,
    inputs: LayerInputs | None = None,
) -> HeadInside:
    """Every piece of head ``head`` of layer ``layer`` (both 1-based) for query position ``query``
    (0-based), on the sentence the Attention tab shows. ``text`` may be a `prepare`d Sentence; ``inputs``
    its ``layer_inputs`` for ``kind`` (else the layers up to ``layer`` run now)."""
    cfg, model = translator.cfg, translator.model
    kind = check_kind(kind)
    layer = check_index(layer, "layer", 1, cfg.n_layers)
    head = check_index(head, "head", 1, cfg.n_heads)
    factor = check_factor(factor)
    s = _sentence(translator, text, target)
    q_tokens, k_tokens = s.tokens(kind)
    query = check_index(query, "query", 0, len(q_tokens) - 1)
    inputs = layer_inputs(translator, s, kind, layer) if inputs is None else inputs
    if inputs.kind != kind or len(inputs.x_q) < layer or inputs.x_q.shape[1] != len(q_tokens):
        raise ValueError(f"these layer inputs are not {kind}'s up to layer {layer} for this sentence")
    weight = model.embed.weight  # the model's device and dtype
    x_q, x_kv = (torch.tensor(a[layer - 1], device=weight.device, dtype=weight.dtype)
                 for a in (inputs.x_q, inputs.x_kv))  # (Q, d_model), (n, d_model)
    mha, norm = _sublayer(model, kind, layer)
    scale = cfg.scale if factor is None else factor
    n, i = x_kv.size(0), head - 1

    x = x_q[query]  # (d_model,)
    q = _split(mha, mha.w_q(x))  # (H, d_k)
    k = _split(mha, mha.w_k(x_kv))  # (H, n, d_k)
    v = _split(mha, mha.w_v(x_kv))  # (H, n, d_v)
    scores = torch.einsum("hd,hnd->hn", q, k)  # (H, n) raw q·k_j
    masked = torch.arange(n, device=x.device) > query if kind == "decoder_self" else torch.zeros(n, dtype=torch.bool)
    masked = masked.to(x.device)
    weights = _softmax(scores, scale, masked)  # (H, n)
    head_outputs = torch.einsum("hn,hnd->hd", weights, v)  # (H, d_v)
    sublayer_output = mha.w_o(head_outputs.reshape(-1))  # Concat (h·d_v = d_model) -> (d_model,)
    layer_output = norm(x + sublayer_output)  # Add & Norm
    value_norms = _value_norms(mha, v)[i]  # (n,)

    raw, mask_np = _np(scores[i]), masked.cpu().numpy()
    third = (_case(f"factor: × {factor:.3g}", factor, raw, mask_np) if factor is not None else
             _case(f"scaled twice: × 1/d_k = {cfg.scale ** 2:.3g}", cfg.scale ** 2, raw, mask_np))
    cases = [_case(f"trained: × 1/√d_k = {cfg.scale:.3g}", cfg.scale, raw, mask_np),
             _case("unscaled: × 1", 1.0, raw, mask_np), third]
    return HeadInside(
        kind=kind, layer=layer, head=head, query=query, query_tokens=list(q_tokens), key_tokens=list(k_tokens),
        sentence=s, x=_np(x), x_kv=_np(x_kv), q=_np(q[i]), k=_np(k[i]), v=_np(v[i]), scores=raw,
        scale=float(scale), model_scale=float(cfg.scale), masked=mask_np, weights=_np(weights[i]),
        output=_np(head_outputs[i]), head_outputs=_np(head_outputs), sublayer_output=_np(sublayer_output),
        layer_output=_np(layer_output), value_norms=_np(value_norms), contributions=_np(weights[i] * value_norms),
        scale_cases=cases,
    )


@torch.inference_mode()
def contribution_maps(
    translator: Translator, text: str | Sentence, kind: str, target: str | None = None
) -> np.ndarray:
    """(L, H, Q, n) float32: ‖α_ij v_j W^O_h‖ for every layer and head of one kind, normalised per row.

    The Attention tab's "contributions" toggle: the same rows and columns as `AttentionResult.maps(kind)`.
    α comes from the model's own forward pass; one pass over the layers, nothing kept.
    """
    kind = check_kind(kind)
    s = _sentence(translator, text, target)
    out = []
    for layer, (_, x_kv, weights) in enumerate(attention_layers(translator.model, s, kind, translator.cfg.n_layers)):
        mha, _ = _sublayer(translator.model, kind, layer + 1)
        norms = _value_norms(mha, _split(mha, mha.w_v(x_kv)))  # (H, n)
        out.append(weights * norms[:, None, :])  # (H, Q, n)
    return normalise_rows(_np(torch.stack(out)))  # (L, H, Q, n)

"""The Attention tab's sentence replayed through the model's own layers, for a look inside one sub-layer.

``Sentence``: the ids and tokens behind the Attention tab's heatmaps, taken from a ``Translator.attention``
result (``sentence_of``: no decode is repeated). ``layer_inputs``: one pass of the model's layers (eval mode,
nothing stored on them) that keeps what each attention sub-layer of one kind reads: x_q, its input at every
query (the residual), and x_kv, what its keys and values are projected from (for cross-attention, the
encoder output). ``model.probes.inside`` computes one head from them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from model.network.inference import AttentionResult, Translator
from model.network.transformer import EncoderDecoder, causal_mask, padding_mask
from model.terms import KINDS


def check_kind(kind) -> str:
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(f"unknown attention kind {kind!r}; expected one of {', '.join(KINDS)}")
    return kind


@dataclass(frozen=True)
class Sentence:
    """The ids behind the Attention tab's heatmaps: source (EOS last) and decoder inputs (BOS first).

    Made from a ``Translator.attention`` result (``sentence_of``): its greedy translation, or teacher forcing
    on a given one. Small and hashable (a cache key): no decode is repeated to look inside a head.
    """

    source_text: str
    translation: str
    src_ids: tuple[int, ...]  # S
    tgt_in_ids: tuple[int, ...]  # T, BOS first: decoder row i is fed token i
    source_tokens: tuple[str, ...]
    target_tokens: tuple[str, ...]
    teacher_forced: bool
    warnings: tuple[str, ...] = ()

    def tokens(self, kind: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(query tokens, key tokens) of one kind of attention."""
        kind = check_kind(kind)
        src, tgt = self.source_tokens, self.target_tokens
        return {"encoder_self": (src, src), "decoder_self": (tgt, tgt), "cross": (tgt, src)}[kind]


@dataclass(frozen=True)
class LayerInputs:
    """What one kind's attention sub-layers read, layers 1..len, for one sentence (``layer_inputs``):
    x_q (layers, Q, d_model) the sub-layer's input at each query (the residual), x_kv (layers, n, d_model) what
    its keys and values are projected from. Float32, ~(Q + n) · d_model · 4 bytes a layer: an app may cache it."""

    kind: str
    x_q: np.ndarray
    x_kv: np.ndarray


# ------------------------------------------------------------------------------------------- the sentence
def sentence_of(translator: Translator, result: AttentionResult) -> Sentence:
    """The ids behind ``result``'s heatmaps (a ``Translator.attention`` result): the source as the model read
    it (re-encoded: tokenising is cheap, the decode is not repeated) and the decoder inputs, BOS + the
    translation's ids, cut as the maps are (a cut-off greedy run has no EOS step)."""
    _, src_ids, _ = translator.encode_input(result.source_text)
    t = len(result.target_tokens)
    tgt_in_ids = ([translator.cfg.bos_id] + list(result.target_ids))[:t]
    if len(src_ids) != len(result.source_tokens) or len(tgt_in_ids) != t:
        raise ValueError("this attention result does not come from this model's tokenizer")
    return Sentence(
        source_text=result.source_text, translation=result.translation, src_ids=tuple(src_ids),
        tgt_in_ids=tuple(tgt_in_ids), source_tokens=tuple(result.source_tokens),
        target_tokens=tuple(result.target_tokens), teacher_forced=result.teacher_forced,
        warnings=tuple(result.warnings),
    )


def prepare(translator: Translator, text: str, target: str | None = None) -> Sentence:
    """The sentence the Attention tab shows for (text, target): ``Translator.attention``'s own tokens and
    decode (greedy, or teacher forcing on ``target``), its cleaning, cuts and warnings."""
    return sentence_of(translator, translator.attention(text, target))


def _ids(model: EncoderDecoder, ids: tuple[int, ...]) -> Tensor:
    return torch.tensor([ids], dtype=torch.long, device=model.embed.weight.device)  # (1, L)


def attention_layers(model: EncoderDecoder, s: Sentence, kind: str, upto: int):
    """Run the model's own layers 1..upto; yield each attention sub-layer's (x_q, x_kv, weights).

    x_q (Q, d_model) is the attention sub-layer's input, x_kv (n, d_model) what it projects keys and values
    from, weights (H, Q, n) the model's own map for that layer. Batch of one, the model's own scale.
    """
    scale = model.cfg.scale
    src = _ids(model, s.src_ids)
    src_mask = padding_mask(src, model.cfg.pad_id)  # (1, 1, 1, S), all True for one sentence
    if kind == "encoder_self":
        x = model.embed_tokens(src)  # (1, S, d_model)
        for layer in model.encoder.layers[:upto]:
            x_in = x
            x, w = layer(x, src_mask, scale)
            yield x_in[0], x_in[0], w[0]
        return
    memory, src_mask = model.encode(src)  # (1, S, d_model)
    tgt = _ids(model, s.tgt_in_ids)
    tgt_mask = causal_mask(tgt.size(1), tgt.device)  # (1, 1, T, T)
    x = model.embed_tokens(tgt)  # (1, T, d_model)
    for layer in model.decoder.layers[:upto]:
        if kind == "decoder_self":
            x_in = x
            x, w, _ = layer(x, memory, src_mask, tgt_mask, scale)
            yield x_in[0], x_in[0], w[0]
        else:  # cross: the query stream is the output of the layer's masked self-attention sub-layer
            attn_out, _ = layer.self_attn(x, x, tgt_mask, scale)
            x_q = layer.sublayer[0](x, attn_out)
            x, _, w = layer(x, memory, src_mask, tgt_mask, scale)
            yield x_q[0], memory[0], w[0]


def _np(t: Tensor) -> np.ndarray:
    return t.float().cpu().numpy()


@torch.inference_mode()
def layer_inputs(translator: Translator, sentence: Sentence, kind: str, upto: int | None = None) -> LayerInputs:
    """One pass of the model's own layers 1..``upto`` (all by default), keeping what each attention sub-layer
    of ``kind`` reads: then any head and query of them costs only its own projections."""
    kind = check_kind(kind)
    layers = list(attention_layers(translator.model, sentence, kind, upto or translator.cfg.n_layers))
    return LayerInputs(kind, _np(torch.stack([x_q for x_q, _, _ in layers])),  # (layers, Q, d_model)
                       _np(torch.stack([x_kv for _, x_kv, _ in layers])))  # (layers, n, d_model)

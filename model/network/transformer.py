"""The encoder–decoder Transformer of "Attention Is All You Need" (Vaswani et al., 2017), by hand.

Names follow the paper (and the Annotated Transformer). Attention weights are *returned* from every
forward pass, never stored on a module: one model instance serves many users at once.
Shapes: B batch, S source length, T target length, H heads, d_k = d_model / H.

Two per-call values reach every attention block without touching the shared model: ``scale`` (the
§3.2.1 factor, default 1/sqrt(d_k); or one per batch row, a (B, 1, 1, 1) tensor: ``row_scales``) and ``head_mask``
(head ablation, see ``check_head_mask``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from model.network.config import TransformerConfig
from model.network.heads import check_head_mask


@dataclass
class AttentionMaps:
    """Per-layer attention weights, each (B, H, q_len, k_len); the fields are ``model.terms.KINDS``, in order."""

    encoder_self: list[Tensor] = field(default_factory=list)  # (B, H, S, S)
    decoder_self: list[Tensor] = field(default_factory=list)  # (B, H, T, T), zero above the diagonal
    cross: list[Tensor] = field(default_factory=list)  # (B, H, T, S)


@dataclass
class KVCache:
    """The keys and values one attention block has already projected, for incremental decoding.

    Masked self-attention appends the new positions' keys and values at each step; encoder–decoder
    attention (``static``) projects the encoder output once and reuses it.
    """

    static: bool = False
    k: Tensor | None = None  # (B, H, L, d_k)
    v: Tensor | None = None

    def reorder(self, index: Tensor) -> None:
        """Keep the batch rows in ``index`` (beam search re-ranks its hypotheses each step)."""
        if self.k is not None:
            self.k, self.v = self.k.index_select(0, index), self.v.index_select(0, index)


@dataclass
class DecoderState:
    """Everything incremental decoding carries from one step to the next: per decoder layer, the caches of
    its self-attention and its encoder–decoder attention."""

    layers: list[tuple[KVCache, KVCache]]
    position: int = 0  # index of the next target position

    def reorder(self, index: Tensor) -> None:
        for self_cache, src_cache in self.layers:
            self_cache.reorder(index)
            src_cache.reorder(index)


def padding_mask(tokens: Tensor, pad_id: int) -> Tensor:
    """(B, L) token ids -> (B, 1, 1, L) bool, True where a key may be attended to."""
    return (tokens != pad_id)[:, None, None, :]


def causal_mask(size: int, device: torch.device | None = None) -> Tensor:
    """(1, 1, T, T) bool, True on and below the diagonal: position i sees positions <= i (§3.1)."""
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()[None, None]


def dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """§5.4 dropout at rate ``p`` while training; at inference the identity (and no call at all)."""
    return F.dropout(x, p) if training and p else x


def additive_scores(q: Tensor, k: Tensor, v_a: Tensor) -> Tensor:
    """Bahdanau et al.'s additive compatibility, per head: score_ij = v_a^T tanh(q_i + k_j), where q and k
    are already the projections q W^Q and k W^K. q: (B, H, Lq, d_k), k: (B, H, Lk, d_k), v_a: (H, d_k)
    -> (B, H, Lq, Lk). The paper (§3.2.1) sets it against dot-product attention; the lab trains one."""
    hidden = torch.tanh(q[:, :, :, None, :] + k[:, :, None, :, :])  # (B, H, Lq, Lk, d_k)
    return torch.einsum("bhqkd,hd->bhqk", hidden, v_a)


def row_scales(scales, cfg: TransformerConfig, like: Tensor) -> Tensor:
    """A scale per batch row (None = the model's 1/sqrt(d_k)) as the (B, 1, 1, 1) tensor every attention block
    multiplies its rows' scores by (on ``like``'s device): rows of one batch, each scaled as alone."""
    values = [cfg.scale if s is None else float(s) for s in scales]
    # float32 as a Python number's product is computed (then rounded to the scores' dtype: the same as alone in fp16)
    return torch.tensor(values, device=like.device, dtype=torch.float32).view(-1, 1, 1, 1)


def scaled_dot_product_attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, scale: float, p_drop: float = 0.0, training: bool = False,
    v_a: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """§3.2.1: softmax(Q K^T * scale) V, returning (output, weights).

    q: (B, H, Lq, d_k), k and v: (B, H, Lk, d_k), mask broadcastable to (B, H, Lq, Lk), True = keep.
    ``p_drop`` (while ``training``; not in the paper) drops attention weights before they weigh V; the
    weights returned are the softmax itself, so maps always sum to 1 per row. With ``v_a`` (H, d_k) the
    scores are ``additive_scores`` instead of Q K^T (then times ``scale``, 1 as such a model is trained).
    """
    raw = torch.matmul(q, k.transpose(-2, -1)) if v_a is None else additive_scores(q, k, v_a)
    scores = (raw * scale).to(raw.dtype)  # (B, H, Lq, Lk); a per-row scale is float32 (row_scales)
    if mask is not None:
        # The dtype's most negative number, not -inf: a fully masked row stays finite.
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(dropout(weights, p_drop, training), v), weights  # (B, H, Lq, d_k), (B, H, Lq, Lk)


class MultiHeadAttention(nn.Module):
    """§3.2.2: MultiHead(Q, K, V) = Concat(head_1..h) W^O with head_i = Attention(Q W^Q_i, K W^K_i, V W^V_i)."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, additive: bool = False):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.p_drop = dropout  # on the attention weights (cfg.attn_dropout; not in the paper)
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        # Additive attention's v_a, one per head (cfg.attention == "additive"); dot-product attention has none.
        self.v_a = nn.Parameter(torch.empty(n_heads, self.d_k)) if additive else None

    def split_heads(self, x: Tensor) -> Tensor:
        b, length, _ = x.shape
        return x.view(b, length, self.n_heads, self.d_k).transpose(1, 2)  # (B, H, L, d_k)

    def keys_values(self, x_kv: Tensor, cache: KVCache | None) -> tuple[Tensor, Tensor]:
        """K W^K and V W^V, each (B, H, Lk, d_k); with a cache, only what it does not hold yet is projected."""
        if cache is not None and cache.static and cache.k is not None:
            return cache.k, cache.v
        k, v = self.split_heads(self.w_k(x_kv)), self.split_heads(self.w_v(x_kv))  # (B, H, L, d_k)
        if cache is not None:
            if cache.k is not None:  # earlier positions first
                k, v = torch.cat([cache.k, k], dim=2), torch.cat([cache.v, v], dim=2)
            cache.k, cache.v = k, v
        return k, v

    def forward(
        self,
        x_q: Tensor,
        x_kv: Tensor,
        mask: Tensor | None,
        scale: float,
        head_mask: Tensor | None = None,
        cache: KVCache | None = None,
    ) -> tuple[Tensor, Tensor]:
        """-> (output (B, Lq, d_model), weights (B, H, Lq, Lk)). ``head_mask`` (H,): head i's output times
        head_mask[i] before Concat W^O."""
        q = self.split_heads(self.w_q(x_q))  # (B, H, Lq, d_k)
        k, v = self.keys_values(x_kv, cache)
        heads, weights = scaled_dot_product_attention(q, k, v, mask, scale, self.p_drop, self.training, self.v_a)
        if head_mask is not None:
            heads = heads * head_mask[:, None, None]
        b, _, lq, _ = heads.shape
        concat = heads.transpose(1, 2).reshape(b, lq, self.n_heads * self.d_k)  # (B, Lq, d_model)
        return self.w_o(concat), weights


def attention_block(cfg: TransformerConfig) -> MultiHeadAttention:
    return MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.attn_dropout, additive=cfg.attention == "additive")


class PositionwiseFeedForward(nn.Module):
    """§3.3: FFN(x) = max(0, x W1 + b1) W2 + b2."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.p_drop = dropout  # on the ReLU output (cfg.relu_dropout; not in the paper)

    def forward(self, x: Tensor) -> Tensor:
        return self.w_2(dropout(torch.relu(self.w_1(x)), self.p_drop, self.training))


class SublayerConnection(nn.Module):
    """§3.1 / §5.4, post-LN: LayerNorm(x + Dropout(Sublayer(x)))."""

    def __init__(self, d_model: int, dropout: float):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.p_drop = dropout  # cfg.dropout, the paper's P_drop

    def forward(self, x: Tensor, sublayer_out: Tensor) -> Tensor:
        return self.norm(x + dropout(sublayer_out, self.p_drop, self.training))


class EncoderLayer(nn.Module):
    """Figure 1, left: multi-head self-attention, then the feed-forward network, each a sub-layer."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.self_attn = attention_block(cfg)
        self.feed_forward = PositionwiseFeedForward(cfg.d_model, cfg.d_ff, cfg.relu_dropout)
        self.sublayer = nn.ModuleList([SublayerConnection(cfg.d_model, cfg.dropout) for _ in range(2)])

    def forward(
        self, x: Tensor, src_mask: Tensor, scale: float, head_mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        attn_sub, ff_sub = self.sublayer
        attn_out, weights = self.self_attn(x, x, src_mask, scale, head_mask)
        x = attn_sub(x, attn_out)
        return ff_sub(x, self.feed_forward(x)), weights


class DecoderLayer(nn.Module):
    """Figure 1, right: masked self-attention, encoder–decoder attention over the encoder output ``memory``,
    then the feed-forward network, each a sub-layer."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.self_attn = attention_block(cfg)
        self.src_attn = attention_block(cfg)
        self.feed_forward = PositionwiseFeedForward(cfg.d_model, cfg.d_ff, cfg.relu_dropout)
        self.sublayer = nn.ModuleList([SublayerConnection(cfg.d_model, cfg.dropout) for _ in range(3)])

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        src_mask: Tensor | None,
        tgt_mask: Tensor | None,
        scale: float,
        cache: tuple[KVCache, KVCache] | None = None,
        head_mask: Tensor | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """-> (x, self-attention weights, cross-attention weights). ``head_mask``: (2, H) or None."""
        self_cache, src_cache = cache if cache is not None else (None, None)
        self_heads, src_heads = head_mask if head_mask is not None else (None, None)
        self_sub, cross_sub, ff_sub = self.sublayer
        attn_out, self_w = self.self_attn(x, x, tgt_mask, scale, self_heads, self_cache)
        x = self_sub(x, attn_out)
        attn_out, cross_w = self.src_attn(x, memory, src_mask, scale, src_heads, src_cache)
        x = cross_sub(x, attn_out)
        return ff_sub(x, self.feed_forward(x)), self_w, cross_w


class PositionalEncoding(nn.Module):
    """§3.5: PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(...); then dropout (§5.4)."""

    def __init__(self, d_model: int, max_len: int, dropout: float):
        super().__init__()
        position = torch.arange(max_len, dtype=torch.float32)[:, None]
        div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe, persistent=False)  # recomputed, never saved
        self.p_drop = dropout

    def forward(self, x: Tensor, start: int = 0) -> Tensor:
        length = x.size(1)
        if start + length > self.pe.size(0):
            raise ValueError(f"sequence of {start + length} positions exceeds max_len={self.pe.size(0)}")
        return dropout(x + self.pe[start : start + length].to(x.dtype), self.p_drop, self.training)


class Encoder(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.layers = nn.ModuleList([EncoderLayer(cfg) for _ in range(cfg.n_layers)])

    def forward(
        self, x: Tensor, src_mask: Tensor, scale: float, maps: list[Tensor] | None, head_mask: Tensor | None = None
    ) -> Tensor:
        """``head_mask``: (N, H) or None."""
        for i, layer in enumerate(self.layers):
            x, weights = layer(x, src_mask, scale, None if head_mask is None else head_mask[i])
            if maps is not None:
                maps.append(weights)
        return x


class Decoder(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.layers = nn.ModuleList([DecoderLayer(cfg) for _ in range(cfg.n_layers)])

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        src_mask: Tensor | None,
        tgt_mask: Tensor | None,
        scale: float,
        state: DecoderState | None,
        maps: AttentionMaps | None,
        head_mask: Tensor | None = None,
    ) -> Tensor:
        """``head_mask``: (2, N, H) for (decoder_self, cross), or None."""
        for i, layer in enumerate(self.layers):
            cache = state.layers[i] if state is not None else None
            heads = None if head_mask is None else head_mask[:, i]  # (2, H)
            x, self_w, cross_w = layer(x, memory, src_mask, tgt_mask, scale, cache, heads)
            if maps is not None:
                maps.decoder_self.append(self_w)
                maps.cross.append(cross_w)
        return x


class EncoderDecoder(nn.Module):
    """The whole model (§3, Figure 1) with one embedding matrix shared by source, target and output (§3.4)."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
        self.pos = PositionalEncoding(cfg.d_model, cfg.max_len, cfg.dropout)
        self.encoder = Encoder(cfg)
        self.decoder = Decoder(cfg)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for name, p in self.named_parameters():
            if p.dim() > 1 and not name.startswith("embed"):
                nn.init.xavier_uniform_(p)
            elif name.endswith("bias") and "norm" not in name:
                nn.init.zeros_(p)
        # Shared input/output embedding: N(0, d_model^-1/2) so that embed * sqrt(d_model) has unit scale.
        nn.init.normal_(self.embed.weight, mean=0.0, std=self.cfg.d_model**-0.5)
        with torch.no_grad():
            self.embed.weight[self.cfg.pad_id].zero_()

    @torch.no_grad()
    def scale_branch_init(self, gain: float) -> None:
        """Multiply the weights that end each residual branch (W^V, W^O, the FFN's W_2) by ``gain``.

        Not in the paper. With the default Xavier init, attention is nearly uniform at the start, so each
        post-LN sub-layer adds the same mean vector to every position: by the 6th encoder layer the positions'
        vectors are 0.96 cosine-similar before training begins, cross-attention sees identical keys, and
        training settles into a bag-of-words encoder. A gain of 0.5 keeps them apart (0.36).
        """
        for name, p in self.named_parameters():
            if name.endswith(("w_v.weight", "w_o.weight", "w_2.weight")):
                p.mul_(gain)

    def _scale(self, scale: float | Tensor | None) -> float | Tensor:
        if isinstance(scale, Tensor):
            return scale  # one per row (``row_scales``)
        return self.cfg.scale if scale is None else float(scale)

    def embed_tokens(self, tokens: Tensor, start: int = 0) -> Tensor:
        return self.pos(self.embed(tokens) * math.sqrt(self.cfg.d_model), start)  # (B, L, d_model)

    def encode(
        self, src: Tensor, scale: float | None = None, maps: AttentionMaps | None = None, head_mask=None
    ) -> tuple[Tensor, Tensor]:
        """(B, S) source ids -> memory (B, S, d_model) and its key mask (B, 1, 1, S).

        ``head_mask``: see ``check_head_mask``; only its encoder_self part acts here.
        """
        src_mask = padding_mask(src, self.cfg.pad_id)
        x = self.embed_tokens(src)
        heads = check_head_mask(head_mask, self.cfg, x)
        encoder_maps = maps.encoder_self if maps is not None else None
        memory = self.encoder(x, src_mask, self._scale(scale), encoder_maps, None if heads is None else heads[0])
        return memory, src_mask

    def decode(
        self,
        tgt_in: Tensor,
        memory: Tensor,
        src_mask: Tensor | None,
        scale: float | None = None,
        state: DecoderState | None = None,
        maps: AttentionMaps | None = None,
        head_mask=None,
    ) -> Tensor:
        """Target ids shifted right (B, T) -> logits (B, T, vocab).

        With ``state``, ``tgt_in`` holds only the new positions; earlier keys and values come from the
        cache, so a step costs O(t) instead of recomputing the whole prefix. ``head_mask``: see
        ``check_head_mask``; its decoder_self and cross parts act here.
        """
        start = state.position if state is not None else 0
        x = self.embed_tokens(tgt_in, start)
        t_new = tgt_in.size(1)
        if state is None or t_new > 1:
            # Causal within the new positions, every cached position visible.
            tgt_mask = causal_mask(start + t_new, tgt_in.device)[:, :, start:]
        else:
            tgt_mask = None  # one new query may see every position so far
        heads = check_head_mask(head_mask, self.cfg, x)
        heads = None if heads is None else heads[1:]  # (2, N, H): decoder_self, cross
        x = self.decoder(x, memory, src_mask, tgt_mask, self._scale(scale), state, maps, heads)
        if state is not None:
            state.position += t_new
        return self.generator(x)

    def generator(self, x: Tensor) -> Tensor:
        """Pre-softmax linear transformation sharing the embedding weights (§3.4)."""
        return F.linear(x, self.embed.weight)  # (B, T, vocab)

    def new_state(self) -> DecoderState:
        return DecoderState(layers=[(KVCache(), KVCache(static=True)) for _ in range(self.cfg.n_layers)])

    def forward(
        self,
        src: Tensor,
        tgt_in: Tensor,
        scale: float | None = None,
        maps: AttentionMaps | None = None,
        head_mask=None,
    ) -> Tensor:
        memory, src_mask = self.encode(src, scale, maps, head_mask)
        return self.decode(tgt_in, memory, src_mask, scale, maps=maps, head_mask=head_mask)


def count_parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())

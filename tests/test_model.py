"""The Transformer itself: attention maths, masks, decoding, checkpoints, training resume."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from model.network.config import MULTI30K_SMALL, PAPER_BASE, TINY, TransformerConfig
from model.network.decode import beam_search, greedy_decode
from model.network.heads import check_head_mask, head_mask_for
from model.network.transformer import (
    AttentionMaps,
    EncoderDecoder,
    MultiHeadAttention,
    causal_mask,
    count_parameters,
    padding_mask,
)


def copy_into_torch_mha(ours: MultiHeadAttention, d_model: int, n_heads: int) -> torch.nn.MultiheadAttention:
    ref = torch.nn.MultiheadAttention(d_model, n_heads, bias=True, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight]))
        ref.in_proj_bias.copy_(torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias]))
        ref.out_proj.weight.copy_(ours.w_o.weight)
        ref.out_proj.bias.copy_(ours.w_o.bias)
    return ref.eval()


@pytest.mark.parametrize("masked", [False, True])
def test_multi_head_attention_matches_torch(masked):
    d_model, h, b, lq, lk = 32, 4, 3, 5, 7
    ours = MultiHeadAttention(d_model, h).eval()
    ref = copy_into_torch_mha(ours, d_model, h)
    q, kv = torch.randn(b, lq, d_model), torch.randn(b, lk, d_model)
    keep = torch.ones(b, lk, dtype=torch.bool)
    if masked:
        keep[0, -3:] = False  # padding keys
        keep[2, -1:] = False
    out, w = ours(q, kv, keep[:, None, None, :], 1 / math.sqrt(d_model // h))
    ref_out, ref_w = ref(q, kv, kv, key_padding_mask=~keep, need_weights=True, average_attn_weights=False)
    assert w.shape == (b, h, lq, lk)
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w, ref_w, atol=1e-5, rtol=1e-5)


def test_causal_self_attention_matches_torch():
    d_model, h, t = 32, 4, 6
    ours = MultiHeadAttention(d_model, h).eval()
    ref = copy_into_torch_mha(ours, d_model, h)
    x = torch.randn(2, t, d_model)
    out, w = ours(x, x, causal_mask(t), 1 / math.sqrt(d_model // h))
    ref_out, ref_w = ref(x, x, x, attn_mask=~causal_mask(t)[0, 0], need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w, ref_w, atol=1e-5, rtol=1e-5)


def tiny_model(**changes) -> EncoderDecoder:
    torch.manual_seed(0)
    return EncoderDecoder(replace(TINY, **changes)).eval()


def batch(cfg: TransformerConfig):
    src = torch.randint(4, cfg.vocab_size, (2, 7))
    src[1, 5:] = cfg.pad_id
    tgt = torch.randint(4, cfg.vocab_size, (2, 6))
    tgt[:, 0] = cfg.bos_id
    return src, tgt


def test_attention_maps_are_returned_normalised_and_masked():
    model = tiny_model()
    src, tgt = batch(model.cfg)
    maps = AttentionMaps()
    model(src, tgt, maps=maps)
    n = model.cfg.n_layers
    assert len(maps.encoder_self) == len(maps.decoder_self) == len(maps.cross) == n
    for w in maps.encoder_self + maps.decoder_self + maps.cross:
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))
    for w in maps.decoder_self:
        assert w.shape == (2, model.cfg.n_heads, 6, 6)
        assert torch.all(w.triu(diagonal=1) == 0), "a position attended to the future"
        assert torch.all(w[causal_mask(6).expand_as(w)] > 0)
    for w in maps.encoder_self + maps.cross:
        assert torch.all(w[1, ..., 5:] == 0), "padding keys got weight"
        assert torch.all(w[0] > 0)
    # Nothing is left behind on the modules.
    assert not any("attn" in k and torch.is_tensor(v) for m in model.modules() for k, v in vars(m).items())


def test_attention_and_relu_dropout_act_only_while_training():
    """The optional (not the paper's) attention-weight and ReLU dropout: off in eval mode, where the model equals
    one without them; in training they change the output, yet the returned maps still sum to 1 per row."""
    with_dropout, plain = tiny_model(attn_dropout=0.5, relu_dropout=0.5), tiny_model()
    plain.load_state_dict(with_dropout.state_dict())
    src, tgt = batch(with_dropout.cfg)
    torch.testing.assert_close(with_dropout(src, tgt), plain(src, tgt), atol=0, rtol=0)
    with_dropout.train()
    torch.manual_seed(1)
    maps = AttentionMaps()
    first = with_dropout(src, tgt, maps=maps)
    assert not torch.allclose(first, with_dropout(src, tgt))
    for w in maps.encoder_self + maps.decoder_self + maps.cross:
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))
    with pytest.raises(ValueError, match="attn_dropout"):
        replace(TINY, attn_dropout=1.0)


def encoder_position_similarity(model: EncoderDecoder, src: torch.Tensor) -> float:
    """Mean pairwise cosine similarity of the encoder's output vectors (1.0 = one vector for every position)."""
    with torch.no_grad():
        memory, _ = model.encode(src)
    unit = torch.nn.functional.normalize(memory[0], dim=-1)
    return float((unit @ unit.T).mean())


def test_branch_init_gain_scales_only_the_branch_ends_and_prevents_encoder_collapse():
    torch.manual_seed(0)
    model = EncoderDecoder(MULTI30K_SMALL).eval()
    before = {name: p.clone() for name, p in model.named_parameters()}
    src = torch.randint(4, MULTI30K_SMALL.vocab_size, (1, 16))
    collapsed = encoder_position_similarity(model, src)
    model.scale_branch_init(0.5)
    scaled = [n for n, p in model.named_parameters() if not torch.equal(p, before[n])]
    assert len(scaled) == 6 * (3 + 5) and all(n.endswith(("w_v.weight", "w_o.weight", "w_2.weight")) for n in scaled)
    assert all(torch.equal(p, before[n] * 0.5) for n, p in model.named_parameters() if n in scaled)
    # With the paper's Xavier init the near-uniform attention of a fresh model makes every encoder position
    # almost the same vector by layer 6; halving the branch ends keeps them apart.
    assert collapsed > 0.85 and encoder_position_similarity(model, src) < 0.6


def test_attention_scale_is_a_per_call_value():
    model = tiny_model()
    src, tgt = batch(model.cfg)
    default, same, unscaled = AttentionMaps(), AttentionMaps(), AttentionMaps()
    model(src, tgt, maps=default)
    model(src, tgt, scale=1 / math.sqrt(model.cfg.d_k), maps=same)
    model(src, tgt, scale=1.0, maps=unscaled)
    torch.testing.assert_close(default.encoder_self[0], same.encoder_self[0])
    assert not torch.allclose(default.encoder_self[0], unscaled.encoder_self[0])
    assert model.cfg.scale == 1 / math.sqrt(model.cfg.d_k)  # the shared model is unchanged


def test_cached_decoding_equals_full_recomputation():
    model = tiny_model()
    src, tgt = batch(model.cfg)
    memory, src_mask = model.encode(src)
    full = model.decode(tgt, memory, src_mask)
    state = model.new_state()
    steps = [model.decode(tgt[:, i : i + 1], memory, src_mask, state=state) for i in range(tgt.size(1))]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)
    # and greedy maps captured step by step equal those of one teacher-forced pass over the output
    maps = AttentionMaps()
    out = greedy_decode(model, src[:1], max_len=8, maps=maps)[0]
    forced = AttentionMaps()
    tgt_in = torch.tensor([[model.cfg.bos_id] + out])[:, : maps.decoder_self[0].size(-1)]
    model(src[:1], tgt_in, maps=forced)
    for a, b in zip(maps.decoder_self + maps.cross, forced.decoder_self + forced.cross):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_beam_size_one_equals_greedy():
    for seed in range(3):
        torch.manual_seed(seed)
        model = EncoderDecoder(TINY).eval()
        src, _ = batch(model.cfg)
        assert beam_search(model, src, beam=1, max_len=12) == greedy_decode(model, src, max_len=12)


def test_beam_search_scores_at_least_greedy():
    model = tiny_model()
    src, _ = batch(model.cfg)

    def logprob(ids):
        tgt = torch.tensor([[model.cfg.bos_id] + ids])
        out = torch.tensor([ids + [model.cfg.eos_id]])
        logp = torch.log_softmax(model(src[:1], tgt), -1)
        return logp.gather(-1, out[..., None]).sum().item()

    greedy = greedy_decode(model, src[:1], max_len=20)[0]
    beam = beam_search(model, src[:1], beam=4, alpha=0.0, max_len=20)[0]
    if len(greedy) < 19 and len(beam) < 19:  # both ended with EOS
        assert logprob(beam) >= logprob(greedy) - 1e-4


@pytest.mark.parametrize("p_eos, p_best", [(0.4, 0.45), (0.6, 0.3)])
def test_a_translation_is_never_empty(p_eos, p_best):
    """EOS is nearly as likely as the best token at every step (0.4): the empty hypothesis (log 0.4, not shortened by
    the length penalty, lp(1) = 1) would beat every longer one in beam search, as it did on the h = 1 sibling's hard
    test sentences; or EOS is the likeliest (0.6), which greedy would take at once. A translation has at least one
    token, in beam search and greedy alike."""
    model = tiny_model()
    cfg = model.cfg
    probs = torch.full((cfg.vocab_size,), (1 - p_eos - p_best) / (cfg.vocab_size - 2))
    probs[cfg.eos_id], probs[5] = p_eos, p_best
    model.generator = lambda x: probs.log().expand(*x.shape[:-1], -1)
    src, _ = batch(cfg)
    assert beam_search(model, src, beam=4) == [[5], [5]]
    assert [row[0] for row in greedy_decode(model, src)] == [5, 5]


def test_parameter_counts_and_presets():
    assert count_parameters(EncoderDecoder(TINY)) > 0
    assert PAPER_BASE.d_k == 64 and MULTI30K_SMALL.n_layers == 6 and MULTI30K_SMALL.n_heads == 8
    with pytest.raises(ValueError):
        TransformerConfig(d_model=30, n_heads=8)


def test_tiny_model_overfits_a_handful_of_pairs():
    torch.manual_seed(0)
    cfg = replace(TINY, vocab_size=20)
    model = EncoderDecoder(cfg)
    src = torch.tensor([[5, 6, 7, 2], [8, 9, 2, 0], [10, 11, 12, 2]])
    out = torch.tensor([[13, 14, 15, 2], [16, 17, 2, 0], [18, 19, 5, 2]])
    tgt_in = torch.cat([torch.full((3, 1), cfg.bos_id), out[:, :-1]], dim=1)
    tgt_in[1, 3] = cfg.pad_id
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(150):
        loss = torch.nn.functional.cross_entropy(model(src, tgt_in).transpose(1, 2), out, ignore_index=cfg.pad_id)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    assert loss.item() < 0.05
    assert greedy_decode(model, src) == [[13, 14, 15], [16, 17], [18, 19, 5]]


# ----------------------------------------------------------------------------- head ablation (per call)


def test_all_ones_head_mask_is_bitwise_no_mask():
    model = tiny_model()
    src, tgt = batch(model.cfg)
    cfg = model.cfg
    plain_maps, ones_maps = AttentionMaps(), AttentionMaps()
    plain = model(src, tgt, maps=plain_maps)
    for ones in (torch.ones(3, cfg.n_layers, cfg.n_heads), torch.ones(3, cfg.n_layers, cfg.n_heads, dtype=torch.bool)):
        ones_maps = AttentionMaps()
        assert torch.equal(model(src, tgt, maps=ones_maps, head_mask=ones), plain)
        for a, b in zip(plain_maps.encoder_self + plain_maps.cross, ones_maps.encoder_self + ones_maps.cross):
            assert torch.equal(a, b)
    ones = head_mask_for(cfg, [])
    assert greedy_decode(model, src, max_len=10, head_mask=ones) == greedy_decode(model, src, max_len=10)
    assert beam_search(model, src, max_len=10, head_mask=ones) == beam_search(model, src, max_len=10)


def test_an_ablated_head_is_zeroed_before_w_o():
    """MultiHead = Concat(head_1..h) W^O with head_i's Attention(...) output set to 0, and weights unchanged."""
    torch.manual_seed(0)
    attn = MultiHeadAttention(16, 4).eval()
    x = torch.randn(2, 5, 16)
    keep = torch.tensor([1.0, 1.0, 0.0, 1.0])
    out, weights = attn(x, x, None, 0.5, keep)
    plain_out, plain_weights = attn(x, x, None, 0.5)
    assert torch.equal(weights, plain_weights)  # what the softmax computed, ablated or not
    heads = weights @ attn.split_heads(attn.w_v(x))  # (B, H, L, d_k)
    heads[:, 2] = 0
    torch.testing.assert_close(out, attn.w_o(heads.transpose(1, 2).reshape(2, 5, 16)))
    assert not torch.allclose(out, plain_out)


def encoder_layer_outputs(model: EncoderDecoder, src: torch.Tensor, head_mask=None):
    """Each encoder layer's self-attention sub-layer output and layer output, through the model's own layers."""
    mask, x = padding_mask(src, model.cfg.pad_id), model.embed_tokens(src)
    heads = check_head_mask(head_mask, model.cfg, x)
    attn_outs, layer_outs = [], []
    for i, layer in enumerate(model.encoder.layers):
        attn_outs.append(layer.self_attn(x, x, mask, model.cfg.scale, None if heads is None else heads[0, i])[0])
        x, _ = layer(x, mask, model.cfg.scale, None if heads is None else heads[0, i])
        layer_outs.append(x)
    return attn_outs, layer_outs


@pytest.mark.parametrize("layer", [0, 1])
def test_ablating_an_encoder_head_changes_its_sublayer_and_nothing_before(layer):
    model = tiny_model()
    src, tgt = batch(model.cfg)
    off = head_mask_for(model.cfg, [("encoder_self", layer, 2)])
    plain_attn, plain_layers = encoder_layer_outputs(model, src)
    attn, layers = encoder_layer_outputs(model, src, off)
    for i in range(layer):
        assert torch.equal(attn[i], plain_attn[i]) and torch.equal(layers[i], plain_layers[i])
    for i in range(layer, model.cfg.n_layers):
        assert not torch.allclose(attn[i], plain_attn[i]) and not torch.allclose(layers[i], plain_layers[i])
    # The model's own encode() agrees with the layer-by-layer run, and its maps up to this layer are unchanged.
    plain_maps, maps = AttentionMaps(), AttentionMaps()
    assert torch.equal(model.encode(src, maps=maps, head_mask=off)[0], layers[-1])
    model.encode(src, maps=plain_maps)
    for i in range(model.cfg.n_layers):
        assert torch.equal(maps.encoder_self[i], plain_maps.encoder_self[i]) == (i <= layer)


def test_ablating_cross_attention_leaves_the_encoder_and_earlier_maps_alone():
    model = tiny_model()
    src, tgt = batch(model.cfg)
    off = head_mask_for(model.cfg, [("cross", 1, 0), ("cross", 1, 3)])
    plain_maps, maps = AttentionMaps(), AttentionMaps()
    plain, logits = model(src, tgt, maps=plain_maps), model(src, tgt, maps=maps, head_mask=off)
    assert not torch.allclose(plain, logits)
    pairs = zip(plain_maps.encoder_self + plain_maps.decoder_self + plain_maps.cross,
                maps.encoder_self + maps.decoder_self + maps.cross)
    assert all(torch.equal(a, b) for a, b in pairs)  # layer 1's cross weights are computed before its heads act
    # Cached step-by-step decoding applies the same mask.
    memory, src_mask = model.encode(src, head_mask=off)
    state = model.new_state()
    steps = [model.decode(tgt[:, i : i + 1], memory, src_mask, state=state, head_mask=off) for i in range(6)]
    torch.testing.assert_close(torch.cat(steps, dim=1), logits, atol=1e-5, rtol=1e-5)


def test_head_mask_is_checked():
    model = tiny_model()
    src, tgt = batch(model.cfg)
    cfg = model.cfg
    with pytest.raises(ValueError, match=r"shape \(2, 2, 4\), expected .* \(3, 2, 4\)"):
        model(src, tgt, head_mask=torch.ones(2, cfg.n_layers, cfg.n_heads))
    for bad in (2.0, -0.5, float("nan")):
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            model(src, tgt, head_mask=torch.full((3, cfg.n_layers, cfg.n_heads), bad))
    with pytest.raises(ValueError, match="unknown attention kind"):
        head_mask_for(cfg, [("encoder", 0, 0)])
    with pytest.raises(ValueError, match="no head cross:2:0"):
        head_mask_for(cfg, [("cross", 2, 0)])
    mask = head_mask_for(cfg, [("decoder_self", 1, 3)])
    assert mask.shape == (3, cfg.n_layers, cfg.n_heads) and mask.sum() == mask.numel() - 1 and mask[1, 1, 3] == 0

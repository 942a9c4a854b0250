"""Parameter counts of every block of Figure 1, computed from the config alone (no model is built).

``paper_base`` has 63 M parameters; building it just to count them would cost seconds and 250 MB, so
the counts are derived analytically from the layer shapes in ``model/network/transformer.py``:

* ``nn.Linear(a, b)`` holds ``a·b + b`` parameters (weight and bias);
* ``nn.LayerNorm(d)`` holds ``2·d`` (gain and bias);
* multi-head attention has four ``d_model × d_model`` projections W^Q, W^K, W^V, W^O (§3.2.2);
* the FFN is ``Linear(d_model, d_ff)`` then ``Linear(d_ff, d_model)`` (§3.3);
* one embedding matrix ``vocab × d_model`` is shared by source, target and the pre-softmax linear (§3.4),
  so the output projection adds nothing, and it has no bias;
* positional encodings are sinusoidal (§3.5), a buffer, not a parameter;
* the stacks are post-LN (§3.1), so there is no final LayerNorm after either stack.

``tests/test_architecture.py`` checks the total against ``count_parameters(EncoderDecoder(cfg))``, and
``tests/test_checkpoint_and_training.py`` checks ``state_dict_shapes`` against a real model's state_dict.
"""

from __future__ import annotations

from model.network.config import TransformerConfig


def linear_params(n_in: int, n_out: int) -> int:
    return n_in * n_out + n_out


def parameter_breakdown(cfg: TransformerConfig) -> dict[str, int]:
    """Parameter count of each block of the model, plus ``total``.

    Keys: ``embedding`` (shared by source, target and output), ``encoder_self_attn``, ``encoder_ffn``,
    ``encoder_norms`` (both LayerNorms of one layer), ``encoder_layer``, ``encoder`` (all N layers),
    ``decoder_self_attn`` (masked), ``decoder_cross_attn`` (encoder–decoder), ``decoder_ffn``,
    ``decoder_norms`` (three LayerNorms), ``decoder_layer``, ``decoder``, ``output_projection`` (0: it
    reuses the embedding), ``positional_encoding`` (0: sinusoidal) and ``total``.
    ``embedding + encoder + decoder + output_projection + positional_encoding == total``.
    """
    d, n = cfg.d_model, cfg.n_layers
    attn = 4 * linear_params(d, d)  # W^Q, W^K, W^V, W^O, each with bias
    if cfg.attention == "additive":
        attn += d  # v_a: one d_k-vector per head
    ffn = linear_params(d, cfg.d_ff) + linear_params(cfg.d_ff, d)
    norm = 2 * d  # LayerNorm gain and bias
    encoder_layer = attn + ffn + 2 * norm
    decoder_layer = 2 * attn + ffn + 3 * norm
    embedding = cfg.vocab_size * d
    counts = {
        "embedding": embedding,
        "encoder_self_attn": attn,
        "encoder_ffn": ffn,
        "encoder_norms": 2 * norm,
        "encoder_layer": encoder_layer,
        "encoder": n * encoder_layer,
        "decoder_self_attn": attn,
        "decoder_cross_attn": attn,
        "decoder_ffn": ffn,
        "decoder_norms": 3 * norm,
        "decoder_layer": decoder_layer,
        "decoder": n * decoder_layer,
        "output_projection": 0,  # shares the embedding matrix (§3.4), no bias
        "positional_encoding": 0,  # sinusoidal buffer (§3.5)
    }
    counts["total"] = embedding + counts["encoder"] + counts["decoder"]
    return counts


def state_dict_shapes(cfg: TransformerConfig) -> dict[str, tuple[int, ...]]:
    """Every saved tensor's name and shape for ``cfg`` (what ``EncoderDecoder(cfg).state_dict()`` holds), so a
    checkpoint can be checked against its config before a model is allocated."""
    d, f = cfg.d_model, cfg.d_ff
    shapes: dict[str, tuple[int, ...]] = {"embed.weight": (cfg.vocab_size, d)}
    sides = (("encoder", ("self_attn",), 2), ("decoder", ("self_attn", "src_attn"), 3))
    for side, attentions, n_sublayers in sides:
        for i in range(cfg.n_layers):
            layer = f"{side}.layers.{i}"
            for attn in attentions:
                for w in ("w_q", "w_k", "w_v", "w_o"):
                    shapes |= {f"{layer}.{attn}.{w}.weight": (d, d), f"{layer}.{attn}.{w}.bias": (d,)}
                if cfg.attention == "additive":
                    shapes[f"{layer}.{attn}.v_a"] = (cfg.n_heads, cfg.d_k)
            shapes |= {
                f"{layer}.feed_forward.w_1.weight": (f, d),
                f"{layer}.feed_forward.w_1.bias": (f,),
                f"{layer}.feed_forward.w_2.weight": (d, f),
                f"{layer}.feed_forward.w_2.bias": (d,),
            }
            for j in range(n_sublayers):
                shapes |= {f"{layer}.sublayer.{j}.norm.weight": (d,), f"{layer}.sublayer.{j}.norm.bias": (d,)}
    return shapes


def format_count(n: int) -> str:
    """Short human form: 63.1 M, 1.2 M, 148 k, 9.9 k, 384."""
    if n >= 999_500:  # not "1000 k"
        return f"{n / 1e6:.1f} M"
    if n >= 9_950:  # not "10.0 k"
        return f"{n / 1e3:.0f} k"
    if n >= 1_000:
        return f"{n / 1e3:.1f} k"
    return str(n)

"""Figures 1 and 2 as SVG, and the analytic parameter counts they show (fast: no big model is built)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
import torch

from model.network.config import MULTI30K_SMALL, PAPER_BASE, PRESETS, TINY, TransformerConfig
from model.network.params import format_count, parameter_breakdown
from model.network.transformer import EncoderDecoder, count_parameters
from model.terms import KINDS
from viz import architecture
from viz.architecture import figure1_svg, figure2_svg

torch.set_num_threads(1)
NS = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{NS}svg"
    return root


def visible_text(root: ET.Element) -> str:
    """What the reader sees: every <text>, sub/superscript tspans joined, one element per line."""
    return "\n".join("".join(t.itertext()) for t in root.iter(f"{NS}text"))


def shown_params(el: ET.Element, repeat: int = 1) -> int:
    """Sum of data-params over the drawn blocks, each counted as often as its stack (data-repeat) repeats it."""
    repeat *= int(el.get("data-repeat", 1))
    if el.get("data-params") is not None:
        return int(el.get("data-params")) * repeat
    return sum(shown_params(child, repeat) for child in el)


@pytest.mark.parametrize("cfg", [TINY, MULTI30K_SMALL], ids=["tiny", "multi30k_small"])
def test_breakdown_matches_the_model_block_by_block(cfg: TransformerConfig) -> None:
    model = EncoderDecoder(cfg)
    p = parameter_breakdown(cfg)
    enc, dec = model.encoder.layers[0], model.decoder.layers[0]
    assert p["total"] == count_parameters(model)
    assert p["embedding"] == count_parameters(model.embed)
    assert p["encoder_self_attn"] == count_parameters(enc.self_attn)
    assert p["encoder_ffn"] == count_parameters(enc.feed_forward)
    assert p["encoder_norms"] == count_parameters(enc.sublayer)
    assert p["encoder_layer"] == count_parameters(enc)
    assert p["encoder"] == count_parameters(model.encoder)
    assert p["decoder_self_attn"] == count_parameters(dec.self_attn)
    assert p["decoder_cross_attn"] == count_parameters(dec.src_attn)
    assert p["decoder_ffn"] == count_parameters(dec.feed_forward)
    assert p["decoder_norms"] == count_parameters(dec.sublayer)
    assert p["decoder_layer"] == count_parameters(dec)
    assert p["decoder"] == count_parameters(model.decoder)
    assert p["output_projection"] == 0 and p["positional_encoding"] == 0


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_breakdown_parts_add_up(name: str) -> None:
    cfg, p = PRESETS[name], parameter_breakdown(PRESETS[name])
    assert p["encoder_layer"] == p["encoder_self_attn"] + p["encoder_ffn"] + p["encoder_norms"]
    dec_parts = ("decoder_self_attn", "decoder_cross_attn", "decoder_ffn", "decoder_norms")
    assert p["decoder_layer"] == sum(p[k] for k in dec_parts)
    assert p["encoder"] == cfg.n_layers * p["encoder_layer"] and p["decoder"] == cfg.n_layers * p["decoder_layer"]
    parts = ("embedding", "encoder", "decoder", "output_projection", "positional_encoding")
    assert sum(p[k] for k in parts) == p["total"]


def test_paper_base_count_without_building_it() -> None:
    p = parameter_breakdown(PAPER_BASE)
    assert p["encoder_self_attn"] == 4 * (512 * 512 + 512)
    assert p["total"] == 63_082_496  # the paper's Table 3 says 65 M (its vocabulary and bookkeeping differ)
    assert format_count(p["total"]) == "63.1 M"


def test_format_count() -> None:
    assert [format_count(n) for n in (0, 384, 4_224, 148_224, 999_999, 7_766_016)] == [
        "0", "384", "4.2 k", "148 k", "1.0 M", "7.8 M",
    ]


@pytest.mark.parametrize("name", sorted(PRESETS))
@pytest.mark.parametrize("lengths", [(None, None), (12, 9), (1, 1)])
def test_svgs_parse_and_are_self_contained(name: str, lengths: tuple) -> None:
    for svg in (figure1_svg(PRESETS[name], *lengths), figure2_svg(PRESETS[name])):
        root = parse(svg)
        assert root.get("width") == "100%" and root.get("height") is None and root.get("viewBox")
        assert root.get("font-family") == "system-ui, sans-serif"
        for bad in ("<image", "<script", "@import", "@font-face", "http://", "https://"):
            assert bad not in svg.replace('xmlns="http://www.w3.org/2000/svg"', "")


@pytest.mark.parametrize("cfg", [MULTI30K_SMALL, PAPER_BASE, TINY], ids=["shipped", "paper_base", "tiny"])
def test_figure1_shows_the_config(cfg: TransformerConfig) -> None:
    root = parse(figure1_svg(cfg))
    text = visible_text(root)
    total = parameter_breakdown(cfg)["total"]
    assert f"N = {cfg.n_layers}" in text and f"{cfg.n_layers}×" in text
    assert f"model = {cfg.d_model}" in text  # d_model with "model" as a subscript tspan
    assert f"h = {cfg.n_heads}" in text
    assert f"v = {cfg.d_k}" in text  # "d_k = d_v = 24"
    assert f"ff = {cfg.d_ff}" in text
    assert f"vocabulary = {cfg.vocab_size}" in text
    assert re.search(rf"Total\n{re.escape(format_count(total))}\n", text)
    assert f"{total:,}" in root.get("aria-label")


@pytest.mark.parametrize("cfg", [TINY, MULTI30K_SMALL], ids=["tiny", "multi30k_small"])
def test_counts_shown_add_up_to_the_model(cfg: TransformerConfig) -> None:
    root = parse(figure1_svg(cfg, 7, 5))
    total = count_parameters(EncoderDecoder(cfg))
    assert shown_params(root) == total  # every drawn block, stacks counted N times
    parts = {g.get("data-part"): int(g.get("data-part-params")) for g in root.iter(f"{NS}g") if g.get("data-part")}
    assert parts.pop("total") == total
    assert sum(parts.values()) == total  # the legend's table
    stacks = [g for g in root.iter(f"{NS}g") if g.get("data-repeat")]
    assert [int(g.get("data-repeat")) for g in stacks] == [cfg.n_layers] * 2


def test_paper_base_draws_different_numbers_from_the_shipped_model() -> None:
    base, shipped = visible_text(parse(figure1_svg(PAPER_BASE))), visible_text(parse(figure1_svg(MULTI30K_SMALL)))
    assert base != shipped
    for number in ("512", "2048", "37000", "63.1 M"):
        assert re.search(rf"(?<![\d.]){re.escape(number)}(?![\d,])", base), number
        assert not re.search(rf"(?<![\d.]){re.escape(number)}(?![\d,])", shipped), number
    for number in ("192", "768", "8000", "7.8 M"):
        assert re.search(rf"(?<![\d.]){re.escape(number)}(?![\d,])", shipped), number
        assert not re.search(rf"(?<![\d.]){re.escape(number)}(?![\d,])", base), number
    assert "1/√64" in visible_text(parse(figure2_svg(PAPER_BASE)))


def test_shapes_appear_only_with_lengths() -> None:
    text = visible_text(parse(figure1_svg(MULTI30K_SMALL, src_len=12, tgt_len=9)))
    for shape in ("(1, 12, 192)", "(1, 9, 192)", "(1, 8, 12, 12)", "(1, 8, 9, 9)", "(1, 8, 9, 12)", "(1, 9, 8000)",
                  "(1, 12) token ids", "(1, 9) token ids"):
        assert shape in text, shape
    assert "(1, " not in visible_text(parse(figure1_svg(MULTI30K_SMALL)))
    assert "(1, 8, T, 12)" in visible_text(parse(figure1_svg(MULTI30K_SMALL, src_len=12)))  # unknown T stays a letter


def test_blocks_have_tooltips_and_attention_links() -> None:
    root = parse(figure1_svg(MULTI30K_SMALL, 4, 3))
    blocks = [g for g in root.iter(f"{NS}g") if "tf-block" in (g.get("class") or "").split()]
    assert len(blocks) >= 14
    for g in blocks + [g for g in root.iter(f"{NS}g") if g.get("data-repeat")]:
        assert g[0].tag == f"{NS}title" and g[0].text, g.get("class")
    kinds = [g.get("data-attention") for g in root.iter(f"{NS}g") if g.get("data-attention") is not None]
    assert sorted(kinds) == sorted(KINDS)
    for g in root.iter(f"{NS}g"):
        if g.get("data-attention"):
            assert "tf-attn" in g.get("class").split() and g.get("tabindex") == "0"
            assert "148,224 parameters" in g[0].text  # 4·(192² + 192)
    assert all(g.get("data-attention") is None for g in parse(figure2_svg(MULTI30K_SMALL)).iter(f"{NS}g"))


def test_figure2_shows_heads_and_scale() -> None:
    root = parse(figure2_svg(MULTI30K_SMALL))
    text = visible_text(root)
    for label in ("MatMul", "Scale", "Mask (opt.)", "SoftMax", "Concat", "Linear", "Q", "K", "V"):
        assert label in text, label
    assert "× 1/√dk = 1/√24" in text  # d_k with k as a subscript
    assert "× h = 8" in text and "192 / 8 = 24" in text and "148,224 parameters" in text
    titles = [t.text for t in root.iter(f"{NS}title")]
    assert any("1/√24 ≈ 0.204" in t for t in titles)


def test_text_is_escaped() -> None:
    svg = figure1_svg(MULTI30K_SMALL)
    assert "Add &amp; Norm" in svg and "Add & Norm" not in svg
    assert "<title>Encoder layer: Add &amp; Norm" in svg
    nasty = 'a <b>bold</b> & "quoted"'
    group = architecture._group("tf-block", nasty, architecture._text(0, 0, nasty))
    root = ET.fromstring(f'<svg xmlns="http://www.w3.org/2000/svg">{group}</svg>')
    assert root[0][0].text == nasty and "".join(root[0][1].itertext()) == nasty
    assert "<b>" not in group
    with pytest.raises(ValueError):
        architecture._group("tf-block", "x", "", attention="bogus")

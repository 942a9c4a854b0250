"""The weights we ship in assets/: they load, translate, and behave as footnote 4 predicts."""

from __future__ import annotations

import numpy as np
import pytest

from model.network.checkpoint import load_config
from model.network.inference import ASSETS, Translator
from model.network.params import parameter_breakdown
from model.network.transformer import EncoderDecoder, count_parameters
from model.probes.scaling import attention_entropy

SENTENCES = ["Two dogs are running through the snow.", "A man in a blue shirt is playing the guitar on the street."]


@pytest.fixture(scope="module")
def shipped() -> Translator:
    return Translator(ASSETS, device="cpu")


def test_assets_are_complete_and_small():
    for name in ("config.json", "model.safetensors", "tokenizer.model", "MODEL_CARD.md"):
        assert (ASSETS / name).is_file(), name
    assert (ASSETS / "model.safetensors").stat().st_size <= 25 * 1024 * 1024
    cfg = load_config(ASSETS)
    assert (cfg.n_layers, cfg.n_heads) == (6, 8)
    assert parameter_breakdown(cfg)["total"] == count_parameters(EncoderDecoder(cfg))
    assert f"{parameter_breakdown(cfg)['total']:,}" in (ASSETS / "MODEL_CARD.md").read_text()


def test_shipped_model_translates(shipped):
    assert shipped.translate(SENTENCES[0], beam=4).startswith("Zwei Hunde")


def test_paper_scale_reproduces_normal_attention_exactly(shipped):
    normal = shipped.attention(SENTENCES[1])
    same = shipped.attention(SENTENCES[1], scale=shipped.cfg.d_k**-0.5)
    for kind in ("encoder_self", "decoder_self", "cross"):
        np.testing.assert_array_equal(normal.maps(kind), same.maps(kind))
    assert normal.translation == same.translation


@pytest.mark.parametrize("sentence", SENTENCES)
def test_no_scaling_sharpens_the_trained_model(shipped, sentence):
    """Footnote 4 inside the trained model: with the scale set to 1, attention entropy drops."""
    normal = shipped.attention(sentence)
    unscaled = shipped.attention(sentence, target=normal.translation, scale=1.0)
    for kind in ("encoder_self", "decoder_self", "cross"):
        assert np.nanmean(attention_entropy(unscaled.maps(kind))) < np.nanmean(attention_entropy(normal.maps(kind)))

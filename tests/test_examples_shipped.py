"""Every claim the app's curated examples make is a fact about the SHIPPED model (assets/model).

Each caption says where to look (kind, layer, head, a row) and what is there (the token that row writes,
the token it looks at most); ``viz.views.attention.examples.check`` tests that on the model's own run of the
sentence. A retrained model that no longer does this fails here, by the example's name, with what it does
instead: rewrite that caption (or pick another head) from the new model, never the test.
Also: the page's default view, chosen by a statistic, is a sharp head on the default sentence.
"""

from __future__ import annotations

import numpy as np
import pytest

from model.network.inference import ASSETS, Translator
from viz.views.attention import examples, share
from viz.views.attention import maps as attention


@pytest.fixture(scope="module")
def shipped() -> Translator:
    return Translator(ASSETS, device="cpu")


@pytest.mark.parametrize("example", examples.EXAMPLES, ids=[e.topic for e in examples.EXAMPLES])
def test_the_caption_is_what_the_shipped_model_does(shipped, example):
    result = shipped.attention(example.sentence)  # the model's own (greedy) translation, as the app shows it
    try:
        found = examples.check(example, result)
    except ValueError as exc:
        pytest.fail(f"Example “{example.topic}” is no longer true of the shipped model: {exc}. Its caption: "
                    f"{example.caption}", pytrace=False)
    assert found.startswith(f"{example.kind} layer {example.layer} head {example.head}")


@pytest.mark.parametrize("example", examples.EXAMPLES, ids=[e.topic for e in examples.EXAMPLES])
def test_the_example_is_translated_correctly(shipped, example):
    """The translation the page shows (greedy: the maps are greedy's) is the reference written with the example,
    so a lesson is never taught on wrong German."""
    assert example.reference, f"Example “{example.topic}” has no reference translation"
    assert shipped.attention(example.sentence).translation == example.reference


def test_the_default_view_is_the_sharpest_cross_attention_head(shipped):
    result = shipped.attention(attention.DEFAULT_SOURCE)
    maps = result.maps(share.DEFAULT_KIND)  # (L, H, T, S)
    layer, head = share.complete(share.View(attention.DEFAULT_SOURCE), maps)
    confidence = {(l_ + 1, h + 1): float(np.mean([row.max() for row in maps[l_, h]]))  # recomputed row by row
                  for l_ in range(maps.shape[0]) for h in range(maps.shape[1])}
    assert confidence[layer, head] == max(confidence.values())
    # sharp: most rows put most of their weight on one source token, unlike the old default (layer 1, mean)
    old = float(result.maps("encoder_self")[0].mean(axis=0).max(axis=-1).mean())
    assert confidence[layer, head] > 0.8 > 0.5 > old, (confidence[layer, head], old)

"""A scale per batch row (model.network.transformer.row_scales, model.serving.batches.attention_rows): the Why tab's run
decodes the model as trained and with its scale replaced as one batch; each row gives what it gives alone (the same
tokens, maps within float rounding), and ``Runs.trained_and_scaled`` caches both as ``trained`` and ``attention``."""

from __future__ import annotations

import numpy as np
import pytest

from model.network.inference import ASSETS, Translator
from model.serving.batches import attention_rows, run_batch
from model.serving.batching import BatchedTranslator, BatchSettings
from model.serving.cache import ByteLRU
from model.serving.runs import Runs
from model.terms import KINDS

SENTENCES = ["A man in a blue shirt is standing on a ladder cleaning windows.", "Two dogs play in the snow.",
             "A little girl climbs into a wooden playhouse."]


def same_as_alone(result, alone) -> None:
    assert result.target_ids == alone.target_ids and result.translation == alone.translation
    assert result.target_tokens == alone.target_tokens and result.scale == alone.scale
    assert result.teacher_forced == alone.teacher_forced
    for kind in KINDS:
        np.testing.assert_allclose(result.maps(kind), alone.maps(kind), atol=1e-5)


@pytest.fixture(scope="module")
def shipped() -> Translator:
    return Translator(ASSETS, device="cpu")


@pytest.mark.parametrize("factor", [1.0, 0.5, 0.05])
def test_a_scale_per_row_decodes_each_row_as_alone_on_the_shipped_model(shipped, factor):
    """Token for token the two decodes alone: the trained model's (None = 1/sqrt(d_k)) and the changed one's."""
    for text in SENTENCES:
        trained, changed = attention_rows(shipped, [(text, None, None), (text, None, factor)])
        same_as_alone(trained, shipped.attention(text))
        same_as_alone(changed, shipped.attention(text, scale=factor))


def test_rows_with_their_own_scale_and_target_and_a_bad_one(translator):
    """Mixed: greedy and teacher-forced rows, other sentences, a bad one (its ValueError in its place only)."""
    requests = [(SENTENCES[0], None, 0.5), (SENTENCES[1], "Zwei Hunde spielen im Schnee.", None), ("   ", None, 0.3),
                (SENTENCES[2], None, None), (SENTENCES[1], None, 2.0)]
    results = run_batch(translator, ("attention_rows",), requests)
    assert isinstance(results[2], ValueError)
    for (text, target, scale), result in zip(requests, results, strict=True):
        if text.strip():
            same_as_alone(result, translator.attention(text, target, scale=scale))
    assert run_batch(translator, ("attention_rows",), requests[:1])[0].target_ids == \
        translator.attention(SENTENCES[0], scale=0.5).target_ids  # one alone: the unbatched path


@pytest.mark.parametrize("batched", [False, True], ids=["unbatched", "batched"])
def test_trained_and_scaled_decodes_both_at_once_and_caches_each(translator, batched):
    runs = Runs(translator, cache=ByteLRU(64 << 20), batching=BatchSettings(enabled=batched, process=False))
    calls = []
    for name in ("_attention", "_attention_rows"):
        method = getattr(runs, name)
        setattr(runs, name, lambda *args, _m=method, _n=name: calls.append(_n) or _m(*args))
    normal, changed = runs.trained_and_scaled(SENTENCES[0], 0.5)
    assert calls == ["_attention_rows"]  # one batch of two rows
    same_as_alone(normal, translator.attention(SENTENCES[0]))
    same_as_alone(changed, translator.attention(SENTENCES[0], scale=0.5))
    assert runs.trained(SENTENCES[0]) is normal and runs.attention(SENTENCES[0], scale=0.5) is changed
    assert runs.trained_and_scaled(SENTENCES[0], 0.5) == (normal, changed) and calls == ["_attention_rows"]
    other = runs.trained_and_scaled(SENTENCES[0], 0.25)  # the trained model cached: only the changed one runs
    assert other[0] is normal and calls == ["_attention_rows", "_attention"]
    same_as_alone(other[1], translator.attention(SENTENCES[0], scale=0.25))
    with pytest.raises(ValueError):
        runs.trained_and_scaled("   ", 0.5)
    if runs.batched is not None:
        runs.batched.close()


def test_the_batcher_runs_rows_submitted_together_as_one_batch(translator):
    batched = BatchedTranslator(translator, max_batch_size=8)
    results = batched.attention_rows([(SENTENCES[2], None, None), (SENTENCES[2], None, 0.5)])
    assert batched.batcher.batch_sizes[2] == 1
    same_as_alone(results[0], translator.attention(SENTENCES[2]))
    same_as_alone(results[1], translator.attention(SENTENCES[2], scale=0.5))

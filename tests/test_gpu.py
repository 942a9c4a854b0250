"""The GPU path (float16 on CUDA) against the CPU (float32): the same translations and maps.

The comparison's code (``bench.gpu``) runs everywhere: here on the tiny model, the CPU against itself. The checks on
a real GPU are skipped where there is none (CI has none): the shipped model's float16 maps sum to 1 within 1e-3,
and its greedy and beam translations of the 200 shipped validation sentences are the CPU's for ≥ 98 % of them.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bench import gpu
from model.network.inference import Translator
from model.serving.batches import attention_requests
from model.terms import KINDS

TEXTS = ["a dog runs.", "the red house in the park.", "a small child plays near the water ."]
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here (CI has none)")


def test_compare_on_the_cpu_against_itself(translator):
    result = gpu.compare(translator, translator, TEXTS, log=lambda _: None)
    assert result["sentences"] == 3
    assert result["greedy_same"] == result["beam4_same"] == 3 and result["greedy_differ"] == []
    assert result["maps_compared"] == 3 and result["max_weight_diff"] == 0.0
    assert result["row_sum_error"] < 1e-5 and result["row_sum_error_cpu"] < 1e-5
    assert result["batched_vs_one_max_diff"] < 1e-5  # padded batches of three lengths
    assert all(v > 0 for v in result["visualise_rate"].values())


def test_row_sum_error_sees_a_bad_row(translator):
    result = translator.attention("a dog runs.")
    assert gpu.row_sum_error(result) < 1e-5
    result.cross[-1, 1, 0, 0] += 0.01
    assert gpu.row_sum_error(result) == pytest.approx(0.01, abs=1e-5)


def test_rows_for_the_table():
    assert "no CUDA device" in gpu.rows({"available": False})[0][1]
    g = {"available": True, "device": "NVIDIA H200", "dtype": "float16", "sentences": 200, "greedy_same": 197,
         "beam4_same": 195, "row_sum_error": 4e-4, "row_sum_error_cpu": 1e-7, "maps_compared": 197,
         "max_weight_diff": 2e-3, "visualise_rate": {"a": 30.0, "b": 60.0, "c": 900.0}}
    table = gpu.rows(g)
    assert table[0][1:] == ("197/200 = 98.5 %", "≥ 98 %", "yes")
    assert table[1][1:] == ("195/200 = 97.5 %", "≥ 98 %", "**no**")
    assert table[2][1] == "4.0e-04" and table[2][3] == "yes"
    assert table[4][1] == "30 / 60 / 900"


def test_the_sample_is_the_shipped_one():
    en, de = gpu.sample()
    assert len(en) == len(de) == 200 and all(en) and all(de)


@pytest.fixture(scope="module")
def on_gpu() -> Translator:
    return Translator(device="cuda")


@needs_cuda
def test_float16_maps_sum_to_one(on_gpu):
    assert on_gpu.dtype == torch.float16
    texts = gpu.sample(64)[0]
    results = [on_gpu.attention(t) for t in texts[:16]] + attention_requests(on_gpu, [(t, None) for t in texts])
    results += attention_requests(on_gpu, [(texts[0], gpu.sample(1)[1][0]), (texts[1], None)])  # teacher-forced too
    for r in results:
        for kind in KINDS:
            sums = r.maps(kind).astype(np.float64).sum(-1)
            assert np.abs(sums - 1).max() <= 1e-3, (r.source_text, kind)


@needs_cuda
def test_translations_equal_the_cpus(on_gpu):
    result = gpu.compare(Translator(device="cpu"), on_gpu, gpu.sample()[0], log=lambda _: None)
    assert result["greedy_same"] >= 196, result["greedy_differ"]
    assert result["beam4_same"] >= 196, result["beam4_differ"]
    assert result["row_sum_error"] <= 1e-3


@needs_cuda
@pytest.mark.parametrize("factor", [1.0, 0.5, 0.05])
def test_a_scale_per_row_on_the_gpu_decodes_each_row_as_alone(on_gpu, factor):
    """The Why tab's batch of two rows (the trained scale and a changed one) in float16: each row's tokens are the
    ones it decodes alone, its maps within float16's rounding of them."""
    from model.serving.batches import attention_rows

    for text in gpu.sample(8)[0]:
        trained, changed = attention_rows(on_gpu, [(text, None, None), (text, None, factor)])
        for result, alone in ((trained, on_gpu.attention(text)), (changed, on_gpu.attention(text, scale=factor))):
            assert result.target_ids == alone.target_ids, (text, factor)
            for kind in KINDS:
                np.testing.assert_allclose(result.maps(kind), alone.maps(kind), atol=5e-3)

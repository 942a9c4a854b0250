"""The lab's statistics (model.training.lab_stats, lab_series): BLEU from sacreBLEU's own per-sentence statistics,
the bootstrap over seeds × sentences, the verdict an interval supports, the collapse and footnote 4's softmax
gradient — each against an independent recomputation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sacrebleu
import torch

from model.training.lab_series import collapse_step, series
from model.training.lab_stats import (
    bleu_of,
    bootstrap,
    reference_file,
    sentence_stats,
    setting_of,
    statistics,
    translation_file,
    verdict,
    write_lines,
)
from model.training.recorder import softmax_jacobian_norm

REFS = ["Ein Hund rennt im Park.", "Zwei Männer spielen Fußball.", "Eine Frau liest ein Buch am Fenster.",
        "Ein Kind springt ins Wasser.", "Drei Leute sitzen auf einer Bank."] * 8
GOOD = REFS[:]
NOISY = [r.replace("Ein ", "Der ").replace("Eine ", "Die ") for r in REFS]
BAD = ["Ein Mann steht auf einem Stuhl."] * len(REFS)


def test_bleu_from_summed_sentence_statistics_is_sacrebleus_corpus_bleu():
    for hyps in (GOOD, NOISY, BAD):
        stats = sentence_stats(hyps, REFS)
        assert stats.shape == (len(REFS), 10)
        assert bleu_of(stats.sum(0)) == pytest.approx(sacrebleu.corpus_bleu(hyps, [REFS]).score, abs=1e-9)
    with pytest.raises(ValueError, match="3 translations for 40 references"):
        sentence_stats(GOOD[:3], REFS)


def test_the_bootstrap_is_paired_and_draws_seeds():
    good, noisy, bad = (sentence_stats(h, REFS) for h in (GOOD, NOISY, BAD))
    same = bootstrap([good], [good], resamples=200)
    assert np.all(same == 0)  # the same sentences scored for both: identical systems never differ
    diffs = bootstrap([bad], [good, noisy], resamples=300)
    assert diffs.max() < 0  # far worse on every resample
    # one seed a side is the plain paired bootstrap over sentences: its mean is near the full difference
    full = bleu_of(noisy.sum(0)) - bleu_of(good.sum(0))
    assert np.mean(bootstrap([noisy], [good], resamples=400)) == pytest.approx(full, abs=3)
    # seeds drawn with replacement: with two very different seeds on side a, the spread is wider than with one
    wide = bootstrap([good, bad], [noisy], resamples=400)
    narrow = bootstrap([good], [noisy], resamples=400)
    assert np.ptp(np.percentile(wide, [2.5, 97.5])) > np.ptp(np.percentile(narrow, [2.5, 97.5]))
    np.testing.assert_array_equal(bootstrap([noisy], [good], resamples=50), bootstrap([noisy], [good], resamples=50))


@pytest.mark.parametrize(("expect", "low", "high", "decided", "said"), [
    (-1, -3.0, -1.0, True, "reproduces"), (-1, 1.0, 3.0, True, "the opposite"), (+1, 1.0, 3.0, True, "reproduces"),
    (-1, -1.0, 2.0, True, "inconclusive at this scale"), (-1, -30.0, -20.0, False, "not decided yet")])
def test_a_verdict_is_what_its_interval_supports(expect, low, high, decided, said):
    assert verdict(expect, low, high, decided) == said


def record(name, seed, heads=1, device="cpu", series_=None):
    return {"name": name, "seed": seed, "config": {"n_heads": heads}, "trained_on": [device],
            "timelapse": {"steps": [0, 400, 800, 1578], **({"series": series_} if series_ else {})}}


def test_statistics_of_a_folder_of_translations(tmp_path):
    write_lines(reference_file(tmp_path), REFS)
    systems = {"h1": GOOD, "h1-seed2": NOISY, "h1-unscaled": BAD, "h8": GOOD, "h8-seed2": GOOD, "h8-seed3": NOISY}
    for run, hyps in systems.items():
        for decoding in ("greedy", "beam4"):
            write_lines(translation_file(tmp_path, run, decoding), hyps)
    uniform = {"entropy_ratio": {"cross": [[0.1] * 6, [0.2] * 6, [0.995] * 6, [0.999] * 6]}}
    records = {name: record(name, int(name[-1]) if "seed" in name else 1, 8 if name.startswith("h8") else 1)
               for name in systems}
    records["h1-unscaled"]["timelapse"]["series"] = uniform
    records["h1-additive"] = record("h1-additive", 1)  # trained, no translations shipped
    stats = statistics(tmp_path, records, resamples=100)
    assert stats["runs"]["h1-unscaled"]["distinct"] == {"greedy": 1, "beam4": 1}
    assert stats["runs"]["h1"]["beam4"] == pytest.approx(round(sacrebleu.corpus_bleu(GOOD, [REFS]).score, 2))
    h8 = stats["settings"]["h8"]
    assert h8["seeds"] == [1, 2, 3] and h8["sd"] == pytest.approx(
        round(np.std([stats["runs"][r]["beam4"] for r in ("h8", "h8-seed2", "h8-seed3")], ddof=1), 2))
    assert stats["settings"]["h1-additive"]["without_translations"] == ["h1-additive"]
    claims = {c["key"]: c for c in stats["claims"]}
    f4 = claims["footnote4_192"]
    assert f4["verdict"] == "not decided yet" and f4["high"] < 0  # one seed a side: a provisional interval
    assert f4["why"] == "h1-unscaled has 1 of 3 seeds; h1 has 2 of 3 seeds with translations (the rest are training)"
    assert claims["footnote4_24"]["why"] == "no run of h8-unscaled ships translations"
    assert claims["table3a_best"]["b"] == "h8"  # the only other h here
    assert claims["table3a_best"]["why"] == claims["table3a_base"]["why"] == (
        "h1 has 2 of 3 seeds with translations (the rest are training)")
    records["h2"] = record("h2", 1, 2)  # another h trained, no translations yet: the best cannot be picked yet
    best = {c["key"]: c for c in statistics(tmp_path, records, resamples=100)["claims"]}["table3a_best"]
    assert best["verdict"] == "not decided yet" and best["why"] == (
        "h1 has 2 of 3 seeds with translations (the rest are training); the best h is picked among all of them: h2 "
        "has 0 of 3 seeds with translations")
    collapsed = stats["collapse"]["h1-unscaled"]
    assert collapsed["step"] == 800 and collapsed["distinct"]["beam4"] == 1
    assert setting_of("h1-unscaled-seed3") == "h1-unscaled" and setting_of("h16") == "h16"


def test_the_softmax_gradient_is_the_norm_of_the_softmaxs_own_jacobian():
    torch.manual_seed(0)
    scores = torch.randn(5, 7, dtype=torch.float64) * torch.tensor([[0.1], [1.0], [3.0], [10.0], [40.0]])
    p = torch.softmax(scores, -1)
    for row, s in zip(softmax_jacobian_norm(p), scores):
        jacobian = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, -1), s)
        assert float(row) == pytest.approx(float(torch.linalg.matrix_norm(jacobian)), rel=1e-9)
    assert float(softmax_jacobian_norm(torch.full((9,), 1 / 9))) == pytest.approx(math.sqrt(8) / 9)
    assert float(softmax_jacobian_norm(torch.eye(4)[0])) == 0.0


def test_series_and_the_collapse_step_from_maps():
    uniform = np.full((2, 1, 1, 3, 4), 0.25)  # (steps, L, H, Q, K)
    sharp = np.zeros((2, 1, 1, 3, 4))
    sharp[..., 0] = 1
    maps = {"cross": np.concatenate([sharp[:1], uniform[:1]])}
    out = series([maps], ("cross",))
    assert out["entropy_ratio"]["cross"] == [[0.0], [1.0]]
    assert out["softmax_grad"]["cross"] == [[0.0], [round(math.sqrt(3) / 4, 4)]]
    causal = np.tril(np.ones((3, 3)))
    causal /= causal.sum(-1, keepdims=True)  # each row uniform over the keys it may see
    out = series([{"decoder_self": causal[None, None, None]}], ("decoder_self",))
    assert out["entropy_ratio"]["decoder_self"] == [[1.0]]  # its first row (one key) left out
    assert collapse_step([0, 400, 800, 1578], [[0.1], [0.99], [0.5], [0.99]]) == 1578
    assert collapse_step([0, 400], [[0.1], [0.5]]) is None

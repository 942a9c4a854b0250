"""The lab's training side: sibling configs (heads, no 1/√d_k, additive attention), what a run records
while it trains (curves, the time-lapse), and the sibling list itself."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from model.network.checkpoint import load_model, save_model
from model.network.config import TINY, TransformerConfig
from model.network.decode import greedy_decode
from model.network.transformer import AttentionMaps, EncoderDecoder, additive_scores
from model.training.lab import SIBLINGS, Sibling
from model.training.recorder import TIMELAPSE, snapshot_steps
from model.training.train import main


def test_the_scale_a_sibling_was_trained_with():
    assert TINY.scale == pytest.approx(1 / math.sqrt(TINY.d_k))
    assert replace(TINY, scaled=False).scale == 1.0
    assert replace(TINY, attention="additive").scale == 1.0
    with pytest.raises(ValueError, match="attention must be one of dot, additive"):
        replace(TINY, attention="multiplicative")
    with pytest.raises(ValueError, match="scaled must be true or false"):
        TransformerConfig.from_dict({**json.loads(TINY.to_json()), "scaled": "no"})


def test_additive_scores_are_v_tanh_of_q_plus_k():
    torch.manual_seed(0)
    q, k, v_a = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 6, 5), torch.randn(3, 5)
    scores = additive_scores(q, k, v_a)  # (B, H, Lq, Lk)
    assert scores.shape == (2, 3, 4, 6)
    b, h, i, j = 1, 2, 3, 4
    assert scores[b, h, i, j].item() == pytest.approx(float(v_a[h] @ torch.tanh(q[b, h, i] + k[b, h, j])), abs=1e-5)


def test_an_additive_model_attends_decodes_and_reloads(tmp_path):
    cfg = replace(TINY, attention="additive", n_heads=1)
    torch.manual_seed(0)
    model = EncoderDecoder(cfg).eval()
    assert model.encoder.layers[0].self_attn.v_a.shape == (1, cfg.d_model)
    src = torch.randint(4, cfg.vocab_size, (2, 7))
    maps = AttentionMaps()
    logits = model(src, src[:, :5], maps=maps)
    assert logits.shape == (2, 5, cfg.vocab_size)
    for kind in ("encoder_self", "decoder_self", "cross"):
        for w in getattr(maps, kind):
            torch.testing.assert_close(w.sum(-1), torch.ones_like(w.sum(-1)))
    # Incremental decoding (cached keys) gives what the full forward pass gives.
    out = greedy_decode(model, src[:1], max_len=6)[0]
    full = model(src[:1], torch.tensor([[cfg.bos_id, *out[:-1]]]))
    assert full[0].argmax(-1).tolist()[: len(out)] == out
    save_model(model, tmp_path)
    again = load_model(tmp_path, torch.device("cpu"))
    torch.testing.assert_close(again(src, src[:, :5]), logits)


def test_snapshot_steps_are_log_spaced_and_end_at_the_last_step():
    steps = snapshot_steps(1578)
    assert steps[:8] == [0, 25, 50, 75, 100, 150, 200, 300] and steps[-1] == 1578
    assert steps == sorted(set(steps))
    ratios = [b / a for a, b in zip(steps[3:-1], steps[4:-1])]
    assert all(1.3 <= r <= 1.5 for r in ratios)  # two per doubling
    assert snapshot_steps(10) == [0, 10]


def test_every_sibling_changes_one_thing_of_the_reference():
    reference = SIBLINGS[0]
    assert (reference.heads, reference.scaled, reference.attention, reference.seed) == (8, True, "dot", 1)
    assert len({s.name for s in SIBLINGS}) == len(SIBLINGS)
    arch = ("heads", "scaled", "attention")
    for sib in SIBLINGS[1:]:
        # A seed-2 run repeats a seed-1 sibling; every other run changes one thing of the reference, or of h = 1.
        bases = [s for s in SIBLINGS if s.seed == 1 and s.name != sib.name] if sib.seed == 1 else [
            s for s in SIBLINGS if s.seed == 1 and all(getattr(s, f) == getattr(sib, f) for f in arch)]
        diffs = [sum(getattr(sib, f) != getattr(base, f) for f in arch) for base in bases]
        assert bases and min(diffs) == (1 if sib.seed == 1 else 0), sib.name
    seeds = {}
    for sib in SIBLINGS:
        seeds.setdefault((sib.heads, sib.scaled, sib.attention), set()).add(sib.seed)
    for pair in ((1, True, "dot"), (1, False, "dot"), (8, True, "dot")):  # footnote 4's pair and the reference
        assert len(seeds[pair]) >= 2
    assert {s.heads for s in SIBLINGS if s.scaled and s.attention == "dot"} == {1, 2, 4, 8, 16}
    assert Sibling("x", 1, scaled=False).args[-1] == "--no-scale"


def test_a_recorded_run_keeps_curves_and_a_time_lapse(corpus, tmp_path):
    out = tmp_path / "run"
    args = ["--data", str(corpus), "--out", str(out), "--preset", "tiny", "--max-tokens", "120", "--precision",
            "fp32", "--heads", "2", "--no-scale", "--record-every", "2", "--snapshots", "--probe",
            str(corpus / "val"), "--anneal", "2", "8", "--epochs", "3", "--max-steps", "5"]
    assert main(args) == 0
    assert main([*args[:-2], "--resume"]) == 0  # a resumed run records on, without repeating a step
    cfg = json.loads((out / "config.json").read_text())
    assert (cfg["n_heads"], cfg["scaled"], cfg["attention"]) == (2, False, "dot")
    curves = json.loads((out / "curves.json").read_text())
    assert [c["step"] for c in curves] == [2, 4, 6, 8]
    for c in curves:
        for key in ("entropy.encoder_self", "max_weight.cross", "grad_wq.decoder_self", "grad_wk.cross"):
            assert len(c[key]) == TINY.n_layers
        assert all(v > 0 for v in c["grad_wq.encoder_self"]) and c["probe_loss"] > 0
        assert all(0 < w <= 1 for w in c["max_weight.encoder_self"])
    snaps = sorted(p.name for p in (out / "snapshots").glob("*.npz"))
    assert snaps == [f"step_{s:05d}.npz" for s in snapshot_steps(8)]
    with np.load(out / "snapshots" / "step_00008.npz") as z:
        assert len(z.files) == 3 * len(TIMELAPSE)
        cross = z["0.cross"].astype(np.float32)  # (L, H, T, S)
        assert cross.shape[:2] == (TINY.n_layers, 2)
        np.testing.assert_allclose(cross.sum(-1), 1, atol=3e-3)
    stats = json.loads((out / "snapshots" / "step_00008.json").read_text())
    assert stats["sentences"] > 0 and len(stats["roles"]["cross"]) == TINY.n_layers

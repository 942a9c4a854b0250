"""The lab's training side: sibling configs (heads, no 1/√d_k, additive attention), what a run records
while it trains (curves, the time-lapse), and the sibling list itself."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from model.network.checkpoint import CheckpointError, load_model, read_shapes, save_model
from model.network.config import TINY, TransformerConfig
from model.network.decode import greedy_decode
from model.network.transformer import AttentionMaps, EncoderDecoder, additive_scores
from model.training.lab_export import readme_section
from model.training.lab_weights import LAST_FRAME_TOLERANCE, last_frame_gap
from model.training.recorder import TIMELAPSE, snapshot_steps
from model.training.siblings import SIBLINGS, Sibling
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


def test_eight_bit_weights_load_as_the_model_within_half_a_step_of_each_row(tmp_path):
    from safetensors.torch import load_file, save_file

    from model.network.quantise import SCALE_SUFFIX, quantise

    torch.manual_seed(0)
    model = EncoderDecoder(replace(TINY, d_model=64, d_ff=128)).eval()
    save_model(model, tmp_path / "f16", dtype=torch.float16)
    f16 = load_file(tmp_path / "f16" / "model.safetensors")
    save_model(model, tmp_path / "q8")
    save_file(quantise(f16), tmp_path / "q8" / "model.safetensors")
    path = tmp_path / "q8" / "model.safetensors"
    assert path.stat().st_size < 0.6 * (tmp_path / "f16" / "model.safetensors").stat().st_size
    assert read_shapes(path) == {k: tuple(v.shape) for k, v in f16.items()}  # the row scales are not the model's
    loaded = load_model(tmp_path / "q8").state_dict()
    stored = load_file(path)
    for name, w in f16.items():
        if name + SCALE_SUFFIX in stored:  # a matrix: within half a step of its own row
            step = stored[name + SCALE_SUFFIX][:, None]
            assert ((loaded[name] - w.float()).abs() <= step / 2 + 1e-6).all(), name
            assert stored[name].dtype == torch.int8 and w.dim() == 2
        else:  # biases and layer norms: float16 as they were
            assert torch.equal(loaded[name], w.float()), name
    del stored["embed.weight" + SCALE_SUFFIX]  # an int8 matrix without its scales is refused, never read as is
    save_file(stored, path)
    with pytest.raises(CheckpointError, match="non-float"):
        load_model(tmp_path / "q8")


# --------------------------------------------------------------------------------------- export and serving
def test_the_export_holds_each_runs_curves_bleu_and_time_lapse(tiny_lab):
    runs, out, card, records = tiny_lab
    index = json.loads((out / "index.json").read_text())
    assert index["runs"] == ["h8", "h1", "h1-unscaled"] and index["live"] == ["h8", "h1", "h1-unscaled"]
    assert [s["source"] for s in index["sentences"]] == [en for en, _ in TIMELAPSE]
    for name in index["runs"]:
        record = json.loads((out / f"{name}.json").read_text())
        run = runs / name
        assert record["bleu"] == json.loads((run / "result.json").read_text())["bleu"]
        assert set(record["bleu"]) == {"val.greedy", "val.beam4", "test_2016_flickr.greedy", "test_2016_flickr.beam4"}
        curves = json.loads((run / "curves.json").read_text())
        assert record["curves"]["step"] == [c["step"] for c in curves]
        assert record["curves"]["grad_wk.cross"] == [c["grad_wk.cross"] for c in curves]
        assert record["config"]["scaled"] == (name != "h1-unscaled")
        steps = record["timelapse"]["steps"]
        assert steps[0] == 0 and steps[-1] == record["steps"]
        with np.load(out / record["timelapse"]["maps"]) as z, \
                np.load(run / "snapshots" / f"step_{steps[-1]:05d}.npz") as last:
            shipped = z["3.decoder_self"]
            assert shipped.dtype == np.uint8 and shipped.shape[0] == len(steps)
            recorded = last["3.decoder_self"].astype(np.float64)
            np.testing.assert_allclose(shipped[-1] / 255, recorded, atol=0.5 / 255 + 1e-3)
        folder = record["weights"]["folder"]
        assert (folder is not None) == (name in index["live"])
        if folder:  # the reference's weights in 8 bits (scored in float16: that hash), the live siblings' float16
            import hashlib

            weights = record["weights"]
            assert hashlib.sha256((out / folder / "model.safetensors").read_bytes()).hexdigest() == \
                weights["file_sha256"]
            assert (weights["file_sha256"] == weights["sha256"]) == (weights["format"] == "float16")
            assert weights["format"] == ("int8 per row" if name == "h8" else "float16")
            gap = last_frame_gap(out / folder, out / record["timelapse"]["maps"])
            assert weights["last_frame_gap"] == pytest.approx(gap, abs=1e-4) and gap <= LAST_FRAME_TOLERANCE
            assert set(weights.get("bleu", {})) == ({"test_2016_flickr.greedy", "test_2016_flickr.beam4"}
                                                    if name == "h8" else set())
    text = card.read_text()
    assert text.startswith("# Card\n\ntext kept\n") and text.count("## The lab's siblings") == 1
    readme = (out.parent / "README.md").read_text()  # its lab sentences between their markers, the rest kept
    stats = json.loads((out / "statistics.json").read_text())
    assert readme == f"- **Lab.** kept\n  {readme_section(stats, 3)}\n- next\n"
    assert "Today, with 3 of 24 runs shipped and 3 with translations: Footnote 4 at d_k = 192: not decided yet — " \
        in " ".join(readme.split())
    assert all(f"| {r['name']} |" in text and r["weights"]["sha256"][:16] in text for r in records)


def test_the_lab_serves_runs_grouped_with_their_seeds(tiny_lab):
    from model.serving.lab import Lab

    _, out, _, records = tiny_lab
    payload = Lab(out).runs_payload()
    assert [r["name"] for r in payload["runs"]] == ["h8", "h1", "h1-unscaled"]
    for entry, record in zip(payload["runs"], records):
        assert {"name", "config", "seeds", "curves", "bleu"} <= set(entry)
        assert entry["seeds"] == [1] and entry["bleu"] == [record["bleu"]]


def test_the_time_lapse_is_steps_by_layers_by_heads_by_queries_by_keys(tiny_lab):
    from model.serving.lab import Lab

    _, out, _, records = tiny_lab
    lab = Lab(out)
    sentence = lab.sentences[2]
    tl = lab.timelapse(sentence["source"], "cross")
    assert tl["run"] == "h8" and tl["steps"] == records[0]["timelapse"]["steps"]
    maps = np.array(tl["maps"])
    shape = (len(tl["steps"]), TINY.n_layers, 8, len(sentence["target_tokens"]), len(sentence["source_tokens"]))
    assert maps.shape == shape
    np.testing.assert_allclose(maps.sum(-1), 1, atol=0.02)  # uint8-rounded rows
    assert lab.timelapse("2", "cross")["maps"] == tl["maps"]
    for bad, message in (((99, "cross"), "unknown example 99; choose one of: 0: Two dogs"),
                         ((0, "self"), "unknown kind 'self'; choose one of: encoder_self, decoder_self, cross")):
        with pytest.raises(ValueError, match=message):
            lab.timelapse(*bad)
    with pytest.raises(ValueError, match="unknown run 'h3'; choose one of: h8, h1, h1-unscaled"):
        lab.timelapse(0, "cross", run="h3")


def test_siblings_open_on_demand_least_recently_used_first_and_attend_as_their_forward_pass(tiny_lab):
    from model.serving.lab import Lab

    _, out, _, _ = tiny_lab
    lab = Lab(out, capacity=1)
    assert lab.loaded() == []
    with pytest.raises(ValueError, match="unknown run 'h2'; choose one of: h8, h1, h1-unscaled"):
        lab.translator("h2")  # not shipped
    first = lab.translator("h1")
    assert lab.translator("h1") is first and lab.loaded() == ["h1"]
    unscaled = lab.translator("h1-unscaled")
    assert lab.loaded() == ["h1-unscaled"] and unscaled.cfg.scale == 1.0
    result = unscaled.attention("the dog runs .")
    model = load_model(out / "h1-unscaled", torch.device("cpu")).eval()
    src = torch.tensor([unscaled.token_ids("the dog runs .")])
    maps = AttentionMaps()
    with torch.no_grad():
        model(src, torch.tensor([[TINY.bos_id, *result.target_ids]])[:, : result.cross.shape[2]], maps=maps)
    np.testing.assert_allclose(result.cross, torch.cat(maps.cross).numpy(), atol=1e-5)


def test_the_app_runs_a_sibling_beside_the_shipped_model_in_one_cache(tiny_lab, tiny_model_dir):
    from model.network.inference import Translator
    from model.serving.batching import BatchSettings
    from model.serving.lab import SHIPPED, Lab
    from model.serving.runs import Runs

    _, out, _, _ = tiny_lab
    runs = Runs(Translator(tiny_model_dir, "cpu"), batching=BatchSettings(enabled=False), lab=Lab(out))
    sibling = runs.lab_attention(" the dog runs . ", "h1")
    assert runs.lab_attention("the dog runs .", "h1") is sibling  # cached by the cleaned text
    np.testing.assert_array_equal(sibling.cross, runs.lab.translator("h1").attention("the dog runs .").cross)
    assert sibling.encoder_self.shape[1] == 1  # h = 1
    assert runs.lab_attention("the dog runs .", SHIPPED) is runs.attention("the dog runs .")
    with pytest.raises(ValueError, match="unknown run 'h2'; choose one of: shipped, h8, h1, h1-unscaled"):
        runs.lab_attention("the dog runs .", "h2")

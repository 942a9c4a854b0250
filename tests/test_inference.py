"""The shared loader and the CLIs, on a tiny model folder; odd input never crashes."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from model import evaluate, translate
from model.network.heads import head_mask_for
from model.network.inference import AttentionResult, Translator, clean_text
from model.terms import MAX_TOKENS
from model.training.data import read_lines

ODD_INPUTS = [
    "A dog 🐕 runs 🏃‍♂️ in the park.",
    "שלום עולם مرحبا بالعالم",  # right-to-left scripts
    "a\x00b\x07c\x1b[31m red \u200f\u202e dog",  # NUL, bell, escape, bidi overrides
    "<b>bold</b> <script>alert(1)</script> & \"quotes\"",
    "\ud7ff\ue000 private use and \ufeff BOM",
]


def check_result(r: AttentionResult, layers: int, heads: int) -> None:
    s, t = len(r.source_tokens), len(r.target_tokens)
    assert r.encoder_self.shape == (layers, heads, s, s)
    assert r.decoder_self.shape == (layers, heads, t, t)
    assert r.cross.shape == (layers, heads, t, s)
    for arr in (r.encoder_self, r.decoder_self, r.cross):
        assert arr.dtype == np.float32
        np.testing.assert_allclose(arr.sum(-1), 1.0, atol=1e-5)
    assert np.all(np.triu(r.decoder_self, k=1) == 0)
    assert r.source_tokens[-1] == "</s>" and r.target_tokens[0] == "<s>"


def test_attention_of_free_and_forced_translation(translator):
    cfg = translator.cfg
    r = translator.attention("a dog runs in the park.")
    check_result(r, cfg.n_layers, cfg.n_heads)
    assert not r.teacher_forced and r.scale == pytest.approx(cfg.d_k**-0.5)
    forced = translator.attention("a dog runs in the park.", target="ein hund rennt in dem park.")
    check_result(forced, cfg.n_layers, cfg.n_heads)
    assert forced.teacher_forced and forced.translation == "ein hund rennt in dem park."
    assert "".join(forced.target_tokens[1:]).replace("▁", " ").strip() == "ein hund rennt in dem park."
    np.testing.assert_allclose(forced.encoder_self, r.encoder_self, atol=1e-6)  # the encoder does not see the target


def test_scale_override_changes_maps_and_not_the_model(translator):
    normal = translator.attention("a red dog.", target="ein roter hund.")
    unscaled = translator.attention("a red dog.", target="ein roter hund.", scale=1.0)
    again = translator.attention("a red dog.", target="ein roter hund.")
    assert unscaled.scale == 1.0
    assert not np.allclose(normal.encoder_self, unscaled.encoder_self)
    np.testing.assert_array_equal(normal.encoder_self, again.encoder_self)


@pytest.mark.parametrize("text", ["", "   ", "\x00\x01", None])
def test_blank_input_is_a_clear_error(translator, text):
    with pytest.raises(ValueError, match="empty"):
        translator.attention(text)


@pytest.mark.parametrize("text", ODD_INPUTS)
def test_odd_input_never_crashes(translator, text):
    r = translator.attention(text)
    check_result(r, translator.cfg.n_layers, translator.cfg.n_heads)
    assert "\x00" not in "".join(r.source_tokens)


def test_long_input_is_cut_with_a_warning(translator):
    r = translator.attention("dog " * 300)
    assert len(r.source_tokens) == translator.max_tokens == min(MAX_TOKENS, translator.cfg.max_len)
    assert r.warnings and "cut" in r.warnings[0]
    r = translator.attention("a dog.", target="hund " * 300)
    assert len(r.target_tokens) == translator.max_tokens


def test_clean_text():
    assert clean_text("a\x00b\tc\n d\u202e") == "a b c d"
    assert clean_text(None) == ""


def test_exports_round_trip(translator, tmp_path):
    r = translator.attention("a small child plays.")
    path = tmp_path / "a.npz"
    path.write_bytes(r.to_npz_bytes())
    z = np.load(path)
    assert list(z["source_tokens"]) == r.source_tokens and list(z["target_tokens"]) == r.target_tokens
    for kind in ("encoder_self", "decoder_self", "cross"):
        np.testing.assert_array_equal(z[kind], getattr(r, kind))
        assert z[kind].dtype == np.float32
    data = json.loads(r.to_json())
    assert data["source_tokens"] == r.source_tokens
    assert np.array(data["cross"]).shape == r.cross.shape


def test_translate_cli(tiny_model_dir, tmp_path, capsys):
    npz, js = tmp_path / "a.npz", tmp_path / "a.json"
    assert translate.main(["a dog runs.", "--model", str(tiny_model_dir), "--npz", str(npz), "--json", str(js)]) == 0
    # A barely trained model may well say nothing; the CLI prints exactly the loader's greedy translation.
    assert capsys.readouterr().out == Translator(tiny_model_dir, "cpu").attention("a dog runs.").translation + "\n"
    assert np.load(npz)["encoder_self"].ndim == 4 and json.loads(js.read_text())["encoder_self"]
    assert translate.main(["a dog.", "--target", "ein hund.", "--model", str(tiny_model_dir)]) == 0
    assert capsys.readouterr().out.strip() == "ein hund."
    assert translate.main(["  ", "--model", str(tiny_model_dir)]) == 2
    assert "empty" in capsys.readouterr().err
    assert translate.main(["a dog.", "--model", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "nope" in err and err.count("\n") == 1


def test_evaluate_cli_prints_bleu_with_signature(tiny_model_dir, corpus, tmp_path, capsys):
    out = tmp_path / "score.json"
    args = ["--model", str(tiny_model_dir), "--data", str(corpus), "--beam", "2", "--json", str(out)]
    assert evaluate.main(args) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("BLEU = ") and "signature: nrefs:1|case:mixed|eff:no|tok:13a" in printed
    assert json.loads(out.read_text())["beam"] == 2
    assert "reference cross-entropy" not in printed and "loss" not in json.loads(out.read_text())
    plain = tmp_path / "src.txt"
    plain.write_text("a dog.\n")
    assert evaluate.main(["--model", str(tiny_model_dir), "--src", str(plain), "--ref", str(corpus / "val.de.gz")]) == 2


def test_evaluate_loss_is_the_teacher_forced_cross_entropy(tiny_model_dir, corpus, tmp_path, capsys):
    out = tmp_path / "score.json"
    args = ["--model", str(tiny_model_dir), "--data", str(corpus), "--beam", "1", "--loss"]
    assert evaluate.main([*args, "--limit", "3", "--json", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["sentences"] == 3 and "reference cross-entropy" in capsys.readouterr().out
    # The same figure by hand: one batch, summed token losses over the count of non-pad targets.
    t = Translator(tiny_model_dir, "cpu")
    src, ref = read_lines(corpus / "test_2016_flickr.en.gz")[:3], read_lines(corpus / "test_2016_flickr.de.gz")[:3]
    total = count = 0
    for s, r in zip(src, ref):
        s_ids = t.tokenizer.encode(s) + [t.cfg.eos_id]
        r_ids = t.tokenizer.encode(r) + [t.cfg.eos_id]
        with torch.no_grad():
            logits = t.model(torch.tensor([s_ids]), torch.tensor([[t.cfg.bos_id, *r_ids[:-1]]]))
        total += torch.nn.functional.cross_entropy(logits[0], torch.tensor(r_ids), reduction="sum").item()
        count += len(r_ids)
    assert record["loss"] == pytest.approx(total / count, abs=1e-3)
    assert evaluate.main([*args, "--limit", "0"]) == 2
    assert "--limit" in capsys.readouterr().err


def test_diagnose_prints_one_row_per_encoder_layer(tiny_model_dir, corpus, capsys):
    from model import diagnose

    base = ["--model", str(tiny_model_dir), "--data", str(corpus), "--sentences", "3"]
    assert diagnose.main(base) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:]]
    n_layers = Translator(tiny_model_dir, "cpu").cfg.n_layers
    assert [int(r[0]) for r in rows] == list(range(1, n_layers + 1))
    assert all(-1.0 <= float(r[1]) <= 1.0 and float(r[2]) >= 0 for r in rows)
    assert diagnose.main([*base, "--init", "0.5"]) == 0
    assert "branch init gain 0.5" in capsys.readouterr().out
    assert diagnose.main(["--model", str(corpus / "missing")]) == 2


# ----------------------------------------------------------------------------- head ablation, per request


def test_ablation_changes_only_what_it_should(translator):
    cfg = translator.cfg
    text, target = "a big dog sits near the water.", "ein großer hund sitzt nahe wasser."
    plain = translator.attention(text, target=target)
    ones = translator.attention(text, target=target, head_mask=np.ones((3, cfg.n_layers, cfg.n_heads)))
    for kind in ("encoder_self", "decoder_self", "cross"):
        np.testing.assert_array_equal(getattr(ones, kind), getattr(plain, kind))
    assert plain.head_mask is None and ones.head_mask.shape == (3, cfg.n_layers, cfg.n_heads)
    off = head_mask_for(cfg, [("decoder_self", 0, 1)])
    ablated = translator.attention(text, target=target, head_mask=off)
    np.testing.assert_array_equal(ablated.encoder_self, plain.encoder_self)  # the encoder is upstream
    np.testing.assert_array_equal(ablated.decoder_self[0], plain.decoder_self[0])  # weights as the softmax made them
    assert not np.allclose(ablated.cross, plain.cross)  # everything after decoder layer 0's self-attention moves
    np.testing.assert_array_equal(ablated.head_mask, off.numpy())


def test_without_cross_attention_the_source_is_never_seen(translator):
    """All encoder-decoder heads off: the decoder cannot read the source, so every sentence gets one translation."""
    cfg = translator.cfg
    no_cross = head_mask_for(cfg, [("cross", i, h) for i in range(cfg.n_layers) for h in range(cfg.n_heads)])
    sources = ["a dog runs.", "the red house near the street.", "a woman plays in the water."]
    ids = [translator.token_ids(s) for s in sources]  # one padded batch: the same length limit for every row
    for beam in (1, 3):
        assert len(set(translator.translate_batch(ids, beam=beam, head_mask=no_cross))) == 1
    # The decoder's output for one given target, per source: identical without cross-attention, not with it.
    src = torch.tensor([i + [cfg.pad_id] * (max(map(len, ids)) - len(i)) for i in ids])
    tgt_in = torch.tensor([[cfg.bos_id, 5, 6, 7]] * len(ids))
    with torch.inference_mode():
        blind, plain = translator.model(src, tgt_in, head_mask=no_cross), translator.model(src, tgt_in)
    assert torch.equal(blind[0], blind[1]) and torch.equal(blind[0], blind[2])
    assert not torch.allclose(plain[0], plain[1])


def test_concurrent_ablations_never_change_the_shared_model(translator):
    """Requests with different heads off, from several threads at once: each gets exactly what it gets alone,
    and the model's weights stay byte-identical (nothing is patched, hooked or stored on a module)."""
    from concurrent.futures import ThreadPoolExecutor

    cfg = translator.cfg
    before = {k: v.clone() for k, v in translator.model.state_dict().items()}
    masks = [None] + [head_mask_for(cfg, [(kind, i % cfg.n_layers, i % cfg.n_heads)])
                      for i, kind in enumerate(["encoder_self", "decoder_self", "cross"] * 2)]
    text = "a small child plays in the park."

    def request(mask):
        r = translator.attention(text, head_mask=mask)
        return r.translation, r.cross, translator.translate(text, beam=2, head_mask=mask)

    alone = [request(m) for m in masks]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(request, masks * 4))
    for i, (translation, cross, beam) in enumerate(together):
        expected = alone[i % len(masks)]
        assert (translation, beam) == (expected[0], expected[2])
        np.testing.assert_array_equal(cross, expected[1])
    after = translator.model.state_dict()
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    for m in translator.model.modules():
        assert not (m._forward_hooks or m._forward_pre_hooks)
        assert not any("mask" in k for k in vars(m))


def test_the_cpu_layout_changes_no_value_and_no_answer(tiny_model_dir, translator):
    """On a CPU the Translator keeps its matrices transposed behind (out, in) views (model.network.checkpoint.
    transpose_matrices): the same values and shapes as the file's, the same translations and maps as the usual
    layout up to the summation order, beam search and a padded batch included."""
    from model.network.checkpoint import load_model
    from model.serving.batches import attention_requests, translate_requests

    usual = load_model(tiny_model_dir)
    moved = dict(translator.model.named_parameters())
    linears = [n for n, m in translator.model.named_modules() if isinstance(m, (torch.nn.Linear, torch.nn.Embedding))]
    assert linears and {f"{n}.weight" for n in linears} <= set(moved)
    for name, value in usual.named_parameters():
        assert torch.equal(moved[name], value), name
        if name.removesuffix(".weight") in linears:
            assert not moved[name].is_contiguous() and moved[name].t().is_contiguous(), name
    plain = Translator(tiny_model_dir, "cpu")
    plain.model = usual
    texts = ["a dog runs.", "the big red house in the park near the water.", "a man sits."]
    assert translate_requests(translator, texts) == translate_requests(plain, texts)
    for a, b in zip(attention_requests(translator, [(t, None) for t in texts]),
                    attention_requests(plain, [(t, None) for t in texts])):
        assert a.target_ids == b.target_ids
        for kind in ("encoder_self", "decoder_self", "cross"):
            np.testing.assert_allclose(a.maps(kind), b.maps(kind), atol=1e-5)


def test_transposing_keeps_a_shared_matrix_shared():
    from model.network.checkpoint import transpose_matrices

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 4))
    model[1].weight = model[0].weight
    transpose_matrices(model)
    assert model[0].weight is model[1].weight and model[0].weight.t().is_contiguous()
    assert model[0].weight.requires_grad  # as it was

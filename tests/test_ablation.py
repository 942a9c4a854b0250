"""Head ablation: strict head names, a head switched off for one request only (its sub-layer changes, nothing
before it, the shared weights never), sample scores that are sacreBLEU's own, and the ranking CLI."""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import sacrebleu
import torch

from model import rank_heads
from model.network.checkpoint import WEIGHTS_FILE
from model.network.inference import ASSETS, Translator
from model.probes.ablation import (
    RANKING_FILE,
    SAMPLE_STATS_FILE,
    Sample,
    ablate,
    all_heads,
    baseline_score,
    file_sha256,
    head_mask,
    load_ranking,
    load_sample,
    parse_head,
    parse_heads,
    score_sample,
)
from model.terms import KINDS
from viz.views.head_analysis import (
    ABLATION_PROMPT,
    ablation_again,
    ablation_for,
    ablation_markdown,
    ablation_view,
    ranking_markdown,
    top_heads,
)

SOURCES = ("a dog runs in the park.", "the red house.", "a small child plays near the water.", "a man sits.")
REFS = ("ein hund rennt in dem park.", "dem roter haus.", "ein kleiner kind spielt nahe dem wasser.", "ein mann sitzt.")


@pytest.fixture(scope="module")
def sample() -> Sample:
    return Sample(SOURCES, REFS, "tiny")


# ------------------------------------------------------------------------------------------------- head names
def test_head_names_are_one_based_and_strict():
    assert parse_head("cross:1:2", 6, 8) == ("cross", 0, 1)
    assert parse_head(" encoder_self : 6 : 8 ", 6, 8) == ("encoder_self", 5, 7)
    assert parse_heads("cross:2:1, encoder_self:1:1 cross:2:1", 6, 8) == [("encoder_self", 0, 0), ("cross", 1, 0)]
    assert parse_heads(None, 6, 8) == [] and parse_heads([], 6, 8) == []
    assert len(all_heads(6, 8)) == 144 == len(set(all_heads(6, 8)))
    assert all(parse_head(name, 6, 8) for name in all_heads(6, 8))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("cross:0:1", "layers run 1–6 and heads 1–8"),
        ("cross:7:1", "layers run 1–6"),
        ("cross:1:9", "heads 1–8"),
        ("attn:1:1", "unknown kind 'attn'"),
        ("cross:1", "is not 'kind:layer:head'"),
        ("cross:1:1:1", "is not 'kind:layer:head'"),
        ("cross:one:1", "whole numbers"),
        ("cross:-1:1", "whole numbers"),
        ("cross:1.5:1", "whole numbers"),
        (7, "must be a string"),
    ],
)
def test_bad_head_names_say_what_is_wrong(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_head(spec, 6, 8)


def test_a_long_bad_head_is_quoted_short():
    for spec in ("x" * 3000, "y" * 3000 + ":1:1", ["z"] * 1000):
        with pytest.raises(ValueError) as caught:
            parse_head(spec, 6, 8)
        assert len(str(caught.value)) < 200 and "…" in str(caught.value), str(caught.value)[:300]


def test_bad_head_lists_say_what_is_wrong(translator):
    with pytest.raises(ValueError, match="must be a list"):
        parse_heads(3, 6, 8)
    with pytest.raises(ValueError, match="layers run 1–2"):  # the tiny model has 2 layers
        ablate(translator, SOURCES[0], ["cross:3:1"], Sample(SOURCES[:1], REFS[:1]))


def test_head_mask_switches_off_exactly_the_named_heads():
    mask = head_mask(parse_heads(["decoder_self:2:3", "cross:6:8"], 6, 8), 6, 8)
    assert mask.shape == (3, 6, 8) and mask.sum() == 142
    assert mask[KINDS.index("decoder_self"), 1, 2] == 0 and mask[KINDS.index("cross"), 5, 7] == 0
    assert head_mask([], 6, 8) is None


# ---------------------------------------------------------------------------------------------------- ablation
def test_no_head_off_leaves_everything_identical(translator, sample):
    plain = translator.attention(SOURCES[0])
    r = ablate(translator, SOURCES[0], [], sample)
    assert r.heads_off == [] and r.attention.translation == plain.translation == r.translation_before
    for kind in KINDS:
        np.testing.assert_array_equal(r.attention.maps(kind), plain.maps(kind))
    assert r.after is r.before


def test_ablated_sentence_and_scores_are_the_models_own(translator, sample):
    heads = ["cross:2:1", "decoder_self:1:3"]
    mask = head_mask(parse_heads(heads, 2, 4), 2, 4)
    r = ablate(translator, SOURCES[2], heads, sample)
    again = translator.attention(SOURCES[2], head_mask=mask)
    assert r.heads_off == ["decoder_self:1:3", "cross:2:1"]  # sorted in KINDS order
    assert r.attention.translation == again.translation
    assert r.translation_before == translator.translate(SOURCES[2], beam=1)
    for kind in KINDS:
        np.testing.assert_array_equal(r.attention.maps(kind), again.maps(kind))
    for got, m in ((r.before, None), (r.after, mask)):
        hyps = [translator.translate(s, beam=1, head_mask=m) for s in SOURCES]
        assert list(got.hypotheses) == hyps
        assert got.bleu == pytest.approx(sacrebleu.corpus_bleu(hyps, [list(REFS)]).score)
        assert got.chrf == pytest.approx(sacrebleu.corpus_chrf(hyps, [list(REFS)]).score)
    out = json.loads(json.dumps(r.to_json_dict()))
    assert out["heads_off"] == r.heads_off and out["sample"]["after"]["sentences"] == len(SOURCES)
    assert np.array(out["cross"]).shape == r.attention.cross.shape


SUBLAYER = {"encoder_self": ("encoder", 0), "decoder_self": ("decoder", 0), "cross": ("decoder", 1)}


@pytest.mark.parametrize("kind", KINDS)
def test_ablating_a_head_changes_its_sublayer_and_nothing_before_it(translator, kind):
    """Teacher-forced; layer 2 (of 2) head 3. Sub-layer input and every map up to that sub-layer are unchanged;
    its output loses exactly that head's share, Attention_i · W^O_i."""
    model, layer, head, d_k = translator.model, 1, 2, translator.cfg.d_k
    stack, index = SUBLAYER[kind]
    block = getattr(model, stack).layers[layer]
    attn = block.self_attn if kind != "cross" else block.src_attn
    inputs, memories = [], []
    hooks = [block.sublayer[index].register_forward_pre_hook(lambda _m, args: inputs.append(args)),
             model.encoder.register_forward_hook(lambda _m, _a, out: memories.append(out))]
    try:
        plain = translator.attention(SOURCES[0], target=REFS[0])
        ablated = translator.attention(SOURCES[0], target=REFS[0],
                                       head_mask=head_mask([(kind, layer, head)], 2, 4))
    finally:
        for h in hooks:
            h.remove()
    (x, out), (x_ab, out_ab) = inputs
    torch.testing.assert_close(x_ab, x, rtol=0, atol=0)  # the sub-layer's input: nothing before it changed
    order = list(KINDS)
    for k in order[: order.index(kind)]:
        np.testing.assert_array_equal(ablated.maps(k), plain.maps(k))
    np.testing.assert_array_equal(ablated.maps(kind)[: layer + 1], plain.maps(kind)[: layer + 1])
    weights = plain.maps(kind)[layer, head]  # (Q, K): the ablated head's softmax is computed as before
    kv = memories[0][0] if kind == "cross" else x[0]  # (K, d_model)
    with torch.inference_mode():
        v = attn.w_v(kv)[:, head * d_k : (head + 1) * d_k]  # (K, d_k)
        share = (torch.from_numpy(weights) @ v) @ attn.w_o.weight[:, head * d_k : (head + 1) * d_k].T  # (Q, d_model)
    assert share.abs().max() > 1e-3  # the head did contribute
    torch.testing.assert_close(out[0] - out_ab[0], share, rtol=1e-4, atol=1e-5)


def _weights_digest(model) -> str:
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def test_shared_weights_are_byte_identical_after_any_ablation_requests(translator, sample):
    before = _weights_digest(translator.model)
    requests = [[], ["cross:1:1"], ["encoder_self:2:4", "decoder_self:1:1"], [f"cross:2:{h}" for h in range(1, 5)]]
    alone = [ablate(translator, SOURCES[1], heads, sample).attention.translation for heads in requests]
    assert _weights_digest(translator.model) == before
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda heads: ablate(translator, SOURCES[1], heads, sample), requests * 3))
    assert [r.attention.translation for r in results] == alone * 3  # no request sees another's heads
    assert _weights_digest(translator.model) == before


def test_progress_runs_from_zero_to_one_and_the_baseline_is_computed_once(tiny_model_dir):
    translator = Translator(tiny_model_dir, device="cpu")  # a fresh model: nothing cached
    sample = Sample(SOURCES * 3, REFS * 3, "tiny x3")
    calls: list[tuple[float, str]] = []
    ablate(translator, SOURCES[0], ["cross:1:2"], sample, progress=lambda f, m: calls.append((f, m)))
    fractions = [f for f, _ in calls]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and fractions[-1] == 1.0
    assert any(f < 0.5 for f in fractions) and all(isinstance(m, str) and m for _, m in calls)
    assert baseline_score(translator, sample) is baseline_score(translator, sample)
    calls.clear()
    ablate(translator, SOURCES[0], ["cross:1:3"], sample, progress=lambda f, m: calls.append((f, m)))
    assert min(f for f, _ in calls) == 0.5  # the baseline came from the cache


def test_ablation_markdown_escapes_text(translator, sample):
    r = ablate(translator, SOURCES[0], ["cross:1:1"], sample)
    r.attention.translation = "<b>*bold*</b> | $x$"
    text = ablation_markdown(r)
    assert "<b>" not in text and "\\*bold\\*" in text and "\\|" in text and "$x$" not in text
    assert f"{r.before.bleu:.2f}" in text and "`cross:1:1`" in text
    text, overview = ablation_view(r, "cross")
    assert overview["data"][0]["type"] == "heatmap" and "sample BLEU" in text


def test_the_overview_marks_the_heads_off_on_their_own_tiles(translator, sample):
    r = ablate(translator, SOURCES[0], ["cross:2:3", "cross:1:1", "encoder_self:1:2"], sample)
    _, overview = ablation_view(r, "cross")
    trace = overview["data"][0]
    shapes = {s["name"]: s for s in overview["layout"]["shapes"] if str(s.get("name")).endswith(" off")}
    assert sorted(shapes) == ["L1 H1 off", "L2 H3 off"]  # this kind's heads only
    box = shapes["L2 H3 off"]
    inside_x = trace["x"][int(box["x0"] + 0.5): int(box["x1"] + 0.5)]
    inside_y = trace["y"][int(box["y0"] + 0.5): int(box["y1"] + 0.5)]
    assert inside_x and all(str(x).startswith("H3 key ") for x in inside_x)
    assert len(inside_x) == len(r.attention.source_tokens)  # every key column of that head, and nothing else
    assert inside_y and all(str(y).startswith("L2 query ") for y in inside_y)
    assert len(inside_y) == len(r.attention.target_tokens)
    assert off_tiles(ablation_view(r, "encoder_self")[1]) == ["L1 H2 off"]
    assert off_tiles(ablation_view(r, "decoder_self")[1]) == []  # its masked cells are drawn, no head is off
    with pytest.raises(ValueError, match="Unknown kind"):
        ablation_view(r, "both")


def off_tiles(overview: dict) -> list[str]:
    return [s["name"] for s in overview["layout"].get("shapes", []) if str(s.get("name")).endswith(" off")]


def test_the_tabs_ablation_takes_the_sessions_sentence_and_keeps_only_its_key(translator, sample):
    calls = []

    def runs_ablate(text, heads, progress=None):  # what the app passes: Runs.ablate, cached there
        calls.append((text, list(heads), progress))
        return ablate(translator, text, heads, sample, progress=progress)

    result = translator.attention(SOURCES[3])
    with pytest.raises(ValueError, match="Attention tab first"):
        ablation_for(runs_ablate, None, ["cross:1:1"], "cross")
    text, overview, last = ablation_for(runs_ablate, result, ["cross:1:1"], "cross", progress=print)
    assert calls == [(SOURCES[3], ["cross:1:1"], print)] and last == (SOURCES[3], ("cross:1:1",))
    assert "`cross:1:1`" in text and off_tiles(overview) == ["L1 H1 off"]
    _, again = ablation_again(runs_ablate, last, "decoder_self")
    assert calls[-1] == (SOURCES[3], ["cross:1:1"], None) and off_tiles(again) == []
    assert ablation_again(runs_ablate, None, "cross") == (ABLATION_PROMPT, None)
    ranking = {"heads": [{"head": f"cross:1:{h}"} for h in range(1, 5)]}
    assert top_heads(ranking, 3) == ["cross:1:1", "cross:1:2", "cross:1:3"] and top_heads(None) == []


# --------------------------------------------------------------------------------------------------- ranking CLI
def test_rank_heads_cli_writes_a_reproducible_ranking(tiny_model_dir, tmp_path):
    folder = tmp_path / "sample"
    folder.mkdir()
    (folder / "val200.en").write_text("\n".join(SOURCES[:3]) + "\n")
    (folder / "val200.de").write_text("\n".join(REFS[:3]) + "\n")
    ranking, stats = tmp_path / "ranking.json", tmp_path / "stats.json"
    args = ["--model", str(tiny_model_dir), "--sample", str(folder), "--ranking", str(ranking), "--stats", str(stats)]
    assert rank_heads.main(args) == 0
    record = json.loads(ranking.read_text())
    assert record["command"].startswith("python -m model.rank_heads --model ")
    assert record["model"]["weights_sha256"] == file_sha256(tiny_model_dir / WEIGHTS_FILE)
    names = [r["head"] for r in record["heads"]]
    assert sorted(names) == sorted(all_heads(2, 4))
    losses = [r["bleu_loss"] for r in record["heads"]]
    assert losses == sorted(losses, reverse=True)
    translator = Translator(tiny_model_dir, device="cpu")
    small = load_sample(folder)
    base = score_sample(translator, small)
    assert record["baseline"]["bleu"] == round(base.bleu, 2)
    top = record["heads"][0]
    again = score_sample(translator, small, head_mask(parse_heads([top["head"]], 2, 4), 2, 4))
    assert top["bleu"] == round(again.bleu, 2) and top["chrf_loss"] == round(base.chrf - again.chrf, 2)
    assert json.loads(stats.read_text())["sentences"] == 3
    assert "BLEU lost" in ranking_markdown(record)


def test_the_ranking_text_says_what_its_numbers_are():
    record = {"command": "python -m model.rank_heads", "sample": {"sentences": 3}, "baseline": {"bleu": 30, "chrf": 50},
              "heads": [{"head": "cross:1:2", "bleu_loss": 1.25, "chrf_loss": 0.5},
                        {"head": "cross:1:1", "bleu_loss": -0.75, "chrf_loss": -0.25},
                        {"head": "encoder_self:1:1", "bleu_loss": 0.0, "chrf_loss": 0.0}]}
    text = ranking_markdown(record, top=2)
    assert "BLEU 30.00, chrF 50.00" in text and "largest loss is 1.25 BLEU" in text
    assert "1 of 3 heads *raise* BLEU when off (up to 0.75)" in text and "`python -m model.rank_heads`" in text
    assert "| 1 | `cross:1:2` | +1.25 | +0.50 |" in text and "| 2 | `cross:1:1` | -0.75 | -0.25 |" in text
    assert "encoder_self:1:1" not in text and "\\" not in text


def test_rank_heads_cli_refuses_bad_input(tiny_model_dir, tmp_path, capsys):
    assert rank_heads.main(["--model", str(tiny_model_dir), "--limit", "0", "--ranking", str(tmp_path / "r")]) == 2
    assert "at least one sentence" in capsys.readouterr().err
    assert rank_heads.main(["--model", str(tmp_path / "missing"), "--ranking", str(tmp_path / "r")]) == 2
    assert not (tmp_path / "r").exists()


# ------------------------------------------------------------------------------------------------ shipped files
def test_shipped_sample_is_the_first_200_val_pairs():
    sample = load_sample()
    assert len(sample.sources) == len(sample.references) == 200
    assert sample.sources[0] == "A group of men are loading cotton onto a truck"
    assert all(s.strip() for s in sample.sources + sample.references)


def test_shipped_ranking_is_of_the_shipped_model_and_its_numbers_are_the_models():
    record = load_ranking()
    assert load_ranking(RANKING_FILE.parent / "missing.json") is None
    weights = file_sha256(ASSETS / WEIGHTS_FILE)
    assert record["model"]["weights_sha256"] == weights, "rerun `python -m model.rank_heads` for these weights"
    assert json.loads(SAMPLE_STATS_FILE.read_text())["model_weights_sha256"] == weights
    assert sorted(r["head"] for r in record["heads"]) == sorted(all_heads(6, 8))
    translator = Translator(ASSETS, device="cpu")
    sample = load_sample()
    if record["sample"]["sentences"] != 200:
        sample = sample.head(record["sample"]["sentences"])
    assert record["baseline"]["bleu"] == round(score_sample(translator, sample).bleu, 2)

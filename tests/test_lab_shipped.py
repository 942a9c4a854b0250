"""What the app says about the shipped lab (assets/lab) is what its files hold: the records against the model
card's section, the Lab tab's table and verdicts against a recomputation from the records, the time-lapse maps
as attention (rows that sum to 1), and each live sibling's weights against their recorded SHA-256 and its maps
against a forward pass of the weights as shipped."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
import sacrebleu
import torch

from bench.common import ROOT
from model.network.checkpoint import load_model
from model.network.transformer import AttentionMaps
from model.serving.lab import LAB, Lab
from model.training.lab_export import CARD_END, CARD_START, card_section, readme_section
from model.training.lab_series import collapse_step
from model.training.lab_stats import (
    DECODINGS,
    kept_reading,
    read_lines,
    reference_file,
    statistics,
    translation_file,
)
from model.training.lab_weights import LAST_FRAME_TOLERANCE, last_frame_gap
from model.training.siblings import BY_NAME
from viz.views import lab as lab_view
from viz.views import lecture

CARD = LAB.parent / "model" / "MODEL_CARD.md"


@pytest.fixture(scope="module")
def lab() -> Lab:
    return Lab(LAB, device="cpu")


def test_the_shipped_lab_has_runs_in_the_labs_order_and_fits_its_budget(lab):
    names = lab.index["runs"]
    assert names, "assets/lab holds no run: export the finished ones with `python -m model.lab export`"
    order = list(BY_NAME)
    assert names == sorted(names, key=order.index)
    size = sum(p.stat().st_size for p in LAB.rglob("*") if p.is_file())
    assert size <= 64 * 2**20
    for record in lab.records.values():
        assert set(record["bleu"]) == {"val.greedy", "val.beam4", "test_2016_flickr.greedy", "test_2016_flickr.beam4"}
        assert record["signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
        assert record["epochs"][-1]["step"] == record["steps"] == record["timelapse"]["steps"][-1]
        assert record["curves"]["step"][-1] <= record["steps"]


def test_the_model_card_lists_every_shipped_run_as_the_files_say(lab):
    text = CARD.read_text(encoding="utf-8")
    section = text[text.index(CARD_START): text.index(CARD_END) + len(CARD_END)]
    assert section == card_section(list(lab.records.values()))


def test_the_tabs_table_and_verdicts_are_computed_from_the_shipped_records(lab):
    payload = lab.runs_payload()
    summary = lab_view.summary(lab)
    assert lab_view.evidence_markdown(lab.statistics) in summary
    assert lab_view.table_markdown(payload, lab.records) in summary
    ppl = [np.exp(r["epochs"][-1]["val_loss"]) for name, r in lab.records.items()
           if name.removesuffix(f"-seed{r['seed']}") == "h8"]  # the reference's seeds
    assert f"| 8 | 64 · 4.92 · 25.8 | 24 | {lab_view.mean_sd(ppl)} |" in summary


def test_the_shipped_statistics_are_recomputed_from_the_shipped_translations(lab):
    """statistics.json, as the tab shows it, against a recomputation from the shipped translations and references:
    each run's BLEU with sacreBLEU's own corpus_bleu, and every interval, verdict and collapse by lab_stats."""
    refs = read_lines(reference_file(LAB))
    assert len(refs) == 1000
    scored = lab.statistics["runs"]
    assert {"h1", "h1-unscaled", "h1-additive"} <= set(scored)  # the runs whose weights ship, at least
    for name, entry in scored.items():
        for decoding in DECODINGS:
            hyps = read_lines(translation_file(LAB, name, decoding))
            bleu = round(sacrebleu.corpus_bleu(hyps, [refs]).score, 2)
            assert entry[decoding] == bleu == lab.records[name]["bleu"][f"test_2016_flickr.{decoding}"], name
            assert entry["distinct"][decoding] == len(set(hyps))
    assert json.loads(json.dumps(statistics(LAB, lab.records))) == lab.statistics


def test_the_table_3a_chart_and_its_sentence_are_the_records_beam_4_scores_against_h8s_mean(lab):
    """Each scaled dot-product run a point (its test BLEU, beam 4, minus h = 8's mean over its seeds), per h the mean
    the sentence says — with no "-0.00" for h = 8 against itself."""
    figure, text = lab_view.table3a_plot(lab)
    test = {name: r["bleu"]["test_2016_flickr.beam4"] for name, r in lab.records.items()
            if r["config"].get("attention", "dot") == "dot" and r["config"].get("scaled", True)}
    heads = {name: lab.records[name]["config"]["n_heads"] for name in test}
    ref = np.mean([b for name, b in test.items() if heads[name] == 8])
    seeds = [t for t in figure["data"] if str(t.get("name", "")).startswith("a seed")]
    shown = sorted((int(h), round(float(y), 2)) for t in seeds for h, y in zip(t["x"], t["y"]))
    assert shown == sorted((heads[name], round(b - ref, 2)) for name, b in test.items())
    assert f"against h = 8's mean ({ref:.2f})" in text and "-0.00" not in text
    for h in sorted(set(heads.values())):
        mean = np.mean([round(b - ref, 2) for name, b in test.items() if heads[name] == h])
        assert f"h = {h}: {round(mean, 2) + 0.0:+.2f} (3 seeds)" in text


def test_the_collapse_the_tab_states_is_in_the_records(lab):
    collapse = lab.statistics["collapse"]
    assert {c["setting"] for c in collapse.values()} == {"h1-unscaled"}  # the scaled and additive runs never do
    for name, c in collapse.items():
        ratio = np.asarray(lab.records[name]["timelapse"]["series"]["entropy_ratio"]["cross"])  # (steps, L)
        steps = lab.records[name]["timelapse"]["steps"]
        assert ratio[steps.index(c["step"]):].min() >= c["threshold"] > ratio[:steps.index(c["step"])].min(axis=1).max()
    said = lab_view.collapse_markdown(lab.statistics)
    assert "from step 800 of 1578" in said and "writes one sentence for the 1,000 test inputs" in said


def test_without_the_scale_at_d_k_24_the_model_keeps_reading_the_source_as_the_page_says(lab):
    """h8-unscaled: no seed's cross-attention turns uniform for good in its time-lapse (lab_series.collapse_step), each
    seed's beam-4 test translations (the shipped files) are nearly all distinct, and the Lab tab and the README say
    so with those numbers and the claim's difference and interval; a setting with a collapsed seed says nothing."""
    stats = lab.statistics
    runs = stats["settings"]["h8-unscaled"]["runs"]
    assert len(runs) == 3
    for name in runs:
        record = lab.records[name]
        steps = record["timelapse"]["steps"]
        assert collapse_step(steps, record["timelapse"]["series"]["entropy_ratio"]["cross"]) is None, name
    distinct = min(len(set(read_lines(translation_file(LAB, name, "beam4")))) for name in runs)
    assert distinct >= 990
    claim = next(c for c in stats["claims"] if c["key"] == "footnote4_24")
    said = (f"in none of its 3 seeds does the cross-attention become uniform, and each writes at least {distinct:,} "
            f"distinct translations of the 1,000 test inputs; it is {-claim['difference']:.2f} BLEU worse than with it "
            f"(95 % interval [{claim['low']:+.2f}, {claim['high']:+.2f}])")
    assert said in lab_view.collapse_markdown(stats)
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert f"Without 1/√d_k at d_k = 24 (h = 8) it keeps reading the source: {said}." in readme
    assert kept_reading(stats, "h1-unscaled") is None  # its seeds collapsed


def test_footnote_4s_sentences_say_what_the_records_show(lab):
    """The curves' caption names the softmax's own gradient as footnote 4's quantity and says whether it shrank, and
    ‖∇W^Q‖ as another quantity, larger unscaled, with its ratio against √d_k; the lecture's question (which panel
    shrinks, why the other starts larger) has the answer the records give."""
    payload = lab.runs_payload()
    for scaled, unscaled in (("h1", "h1-unscaled"), ("h8", "h8-unscaled")):
        a, b = lab.records[unscaled], lab.records[scaled]
        d_k = 192 // a["config"]["n_heads"]
        for kind in ("encoder_self", "decoder_self", "cross"):
            said = lab_view.early_gradients(payload, lab.records, scaled, unscaled, kind)
            soft = [np.mean([np.mean(v) for s, v in zip(r["timelapse"]["steps"],
                                                        r["timelapse"]["series"]["softmax_grad"][kind]) if s <= 200])
                    for r in (a, b)]
            wq = [np.mean([np.mean(v) for s, v in zip(r["curves"]["step"], r["curves"][f"grad_wq.{kind}"]) if s <= 200])
                  for r in (a, b)]
            assert f"was {soft[0]:.3f} unscaled against {soft[1]:.3f} scaled" in said
            assert ("smaller, as footnote 4 predicts" in said) == (soft[0] < soft[1])
            assert f"it was {wq[0] / wq[1]:.2g} × larger unscaled" in said and wq[0] > wq[1]
            assert ("more than √d_k larger" in said) == (wq[0] / wq[1] > np.sqrt(d_k))
    stop = next(s for s in lecture.STOPS if s.tab == "lab")
    assert "which one, and why does the other start larger?" in stop.question
    note = lab_view.CURVES_NOTE
    assert "the softmax's own gradient" in note and "footnote 4 does not speak of" in note


def test_the_time_lapse_maps_are_attention(lab):
    for name in lab.timelapse_runs():
        record = lab.records[name]
        with np.load(LAB / record["timelapse"]["maps"]) as z:
            assert len(z.files) == 3 * len(lab.sentences)
            for key in z.files:
                maps = z[key] / 255  # (steps, L, H, Q, K)
                assert maps.shape[:3] == (len(record["timelapse"]["steps"]), record["config"]["n_layers"],
                                          record["config"]["n_heads"])
                np.testing.assert_allclose(maps.sum(-1), 1, atol=0.03, err_msg=f"{name} {key}")


def test_no_shipped_translation_is_empty(lab):
    """Every test sentence gets a translation of at least one token (beam search once returned the empty one for 21
    of h1's, whose EOS-only hypothesis beat the rest: model.network.decode.first_step_without_eos)."""
    for name in lab.statistics["runs"]:
        for decoding in DECODINGS:
            hyps = read_lines(translation_file(LAB, name, decoding))
            assert len(hyps) == 1000 and all(h.strip() for h in hyps), (name, decoding, hyps.count(""))
        assert lab.records[name]["search"].endswith("EOS barred at the first step"), name


def test_the_time_lapses_last_frame_is_the_attention_of_the_shipped_weights(lab):
    """Each run whose weights ship (float16, or the reference's 8 bits) attends, teacher-forced on the time-lapse
    sentences, as the time-lapse's last frame shows, within ``LAST_FRAME_TOLERANCE`` in every cell; the record's
    figure is this recomputation's."""
    shipped = [name for name, r in lab.records.items() if r["weights"]["folder"] and r["timelapse"]["maps"]]
    assert {"h1", "h1-unscaled", "h1-additive"} <= set(shipped)
    for name in shipped:
        weights = lab.records[name]["weights"]
        gap = last_frame_gap(LAB / weights["folder"], LAB / lab.records[name]["timelapse"]["maps"])
        assert weights["last_frame_gap"] == pytest.approx(gap, abs=1e-4) and gap <= LAST_FRAME_TOLERANCE, name


def test_each_live_sibling_is_its_recorded_weights_and_attends_as_its_forward_pass(lab):
    for name in lab.live:
        record = lab.records[name]
        folder = LAB / record["weights"]["folder"]
        digest = hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
        assert digest == record["weights"]["file_sha256"]
        # float16 weights are the scored ones; 8-bit ones name the float16 weights scored and their own BLEU
        assert (digest == record["weights"]["sha256"]) == (record["weights"]["format"] == "float16")
        assert json.loads((folder / "config.json").read_text()) == record["config"]
        translator = lab.translator(name)
        result = translator.attention("Two dogs are running through the snow.")
        model = load_model(folder, torch.device("cpu")).eval()
        maps = AttentionMaps()
        src = torch.tensor([translator.token_ids("Two dogs are running through the snow.")])
        tgt = torch.tensor([[translator.cfg.bos_id, *result.target_ids]])[:, : result.cross.shape[2]]
        with torch.no_grad():
            model(src, tgt, maps=maps)
        np.testing.assert_allclose(result.cross, torch.cat(maps.cross).numpy(), atol=1e-4)


def test_the_readmes_lab_results_are_what_the_shipped_statistics_say(lab):
    """The README's lab results, claim by claim, as statistics.json (recomputed above) gives each verdict: once
    decided, with its difference and 95 % interval."""
    text = (LAB.parents[1] / "README.md").read_text(encoding="utf-8")
    assert readme_section(lab.statistics, len(lab.records)) in text  # as `python -m model.lab export` writes it
    readme = " ".join(text.split())
    for c in lab.statistics["claims"]:
        said = (f" — {c['why']}." if c["verdict"] == "not decided yet" else f" ({c['a']} − {c['b']}: "
                f"{c['difference']:+.2f} BLEU, 95 % interval [{c['low']:+.2f}, {c['high']:+.2f}];")
        assert f"{c['title']}: {c['verdict']}{said}" in readme, c["title"]


def test_what_the_tab_says_of_step_0_and_of_each_runs_factor_is_in_the_files(lab):
    """At step 0 a scaled model's attention is spread but not uniform, an unscaled one's already sharp (the Lab's
    reading guide says so), by the shipped time-lapse series; an additive run's config says its factor is not
    1/√d_k (it never multiplies by it), in its record and in its shipped model folder alike."""
    from viz.views.reading import HOW_TO_READ

    said = " ".join(HOW_TO_READ["lab"].split())
    assert "at step 0 a scaled model's attention is spread but not uniform, an unscaled one's already sharp" in said
    first = {name: r for name, r in lab.records.items() if r["seed"] == 1 and "series" in r["timelapse"]}
    at0 = {name: np.array([v[0] for v in r["timelapse"]["series"]["entropy_ratio"].values()])  # (kinds, L) at step 0
           for name, r in first.items()}
    scaled = [n for n, r in first.items() if r["config"]["scaled"] or r["config"]["attention"] == "additive"]
    unscaled = [n for n in first if n not in scaled]
    assert scaled and unscaled
    for name in scaled:  # spread (over half of log n) but not uniform (below the collapse's 0.98) in every layer
        assert 0.5 < at0[name].min() and at0[name].max() < 0.98, name
    assert max(at0[n].max() for n in unscaled) < min(at0[n].min() for n in scaled)
    for name, record in lab.records.items():
        if record["config"]["attention"] == "additive":
            assert record["config"]["scaled"] is False, name
            if record["weights"]["folder"]:
                assert json.loads((LAB / record["weights"]["folder"] / "config.json").read_text())["scaled"] is False

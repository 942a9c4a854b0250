"""What the app says about the shipped lab (assets/lab) is what its files hold: the records against the model
card's section, the Lab tab's table and verdicts against a recomputation from the records, the time-lapse maps
as attention (rows that sum to 1), and each live sibling's weights against their recorded SHA-256 and its maps
against a forward pass of the weights as shipped."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
import torch

from model.network.checkpoint import load_model
from model.network.transformer import AttentionMaps
from model.serving.lab import LAB, Lab
from model.training.lab_export import CARD_END, CARD_START, card_section
from model.training.siblings import BY_NAME
from viz.views import lab as lab_view

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
    for verdict in lab_view.verdicts(payload):
        assert verdict in summary
    assert lab_view.table_markdown(payload) in summary
    ppl = [np.exp(r["epochs"][-1]["val_loss"]) for name, r in lab.records.items()
           if name.removesuffix(f"-seed{r['seed']}") == "h8"]  # the reference's seeds
    seeds = f" (seeds {' / '.join(f'{p:.2f}' for p in ppl)})" if len(ppl) > 1 else ""
    assert f"| 8 | 64 · 4.92 · 25.8 | 24 | {np.mean(ppl):.2f}{seeds} |" in summary


def test_the_time_lapse_maps_are_attention(lab):
    for name, record in lab.records.items():
        with np.load(LAB / record["timelapse"]["maps"]) as z:
            assert len(z.files) == 3 * len(lab.sentences)
            for key in z.files:
                maps = z[key] / 255  # (steps, L, H, Q, K)
                assert maps.shape[:3] == (len(record["timelapse"]["steps"]), record["config"]["n_layers"],
                                          record["config"]["n_heads"])
                np.testing.assert_allclose(maps.sum(-1), 1, atol=0.03, err_msg=f"{name} {key}")


def test_each_live_sibling_is_its_recorded_weights_and_attends_as_its_forward_pass(lab):
    for name in lab.live:
        record = lab.records[name]
        folder = LAB / record["weights"]["folder"]
        assert hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest() == record["weights"]["sha256"]
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


def test_the_readmes_lab_results_are_what_the_shipped_runs_say(lab):
    """The README's one-line result and the tab's verdicts, against a recomputation from the records: a claim that a
    change costs BLEU reproduces when the mean test BLEU (beam 4, over seeds) drops by more than the seed noise (the
    largest gap between two seeds of one sibling)."""
    by_family: dict[str, list[float]] = {}
    for name, record in lab.records.items():
        by_family.setdefault(name.removesuffix(f"-seed{record['seed']}"), []).append(
            record["bleu"]["test_2016_flickr.beam4"])
    assert set(by_family) >= {"h1", "h1-unscaled", "h8", "h8-unscaled", "h2", "h4", "h16"}, "the lab is not complete"
    noise = max(max(v) - min(v) for v in by_family.values() if len(v) > 1)

    def costs(changed: str, reference: str) -> bool:
        diff = np.mean(by_family[changed]) - np.mean(by_family[reference])
        return diff < 0 and abs(diff) > noise

    best_multi = max(("h2", "h4", "h8", "h16"), key=lambda f: np.mean(by_family[f]))
    found = {"d_k = 192": costs("h1-unscaled", "h1"), "d_k = 24": costs("h8-unscaled", "h8"),
             "Table 3 (A)": costs("h1", best_multi)}
    readme = " ".join((LAB.parents[1] / "README.md").read_text(encoding="utf-8").split())
    said = {"d_k = 192": "footnote 4 reproduces at d_k = 192" in readme,
            "d_k = 24": "reproduces at d_k = 192 and at d_k = 24" in readme,
            "Table 3 (A)": "Table 3 (A)'s cost of a single head does not at our scale" not in readme}
    assert said == found
    verdicts = lab_view.verdicts(lab.runs_payload())
    for claim, holds in found.items():
        verdict = next(v for v in verdicts if v.split(":")[0].endswith(claim))
        assert ("the claim reproduces" in verdict) == holds, verdict

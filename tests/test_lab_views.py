"""The Lab tab's words and figures, from lab records: Table 3 beside ours, the verdicts against the seed noise,
the curves and the time-lapse figures."""

from __future__ import annotations

import math

import pytest

from viz.lab import MEAN, curves_figure, head_timeline_figure, role_legend, timelapse_figure
from viz.views.lab import heads_plot, seed_noise, table_markdown, verdicts


def entry(name, heads, bleus, scaled=True, attention="dot", val_loss=1.5):
    """A /lab_runs entry with these test BLEU scores (one per seed) and two recorded steps."""
    curves = {"step": [25, 50], "probe_loss": [5.0, 4.0]}
    for kind in ("encoder_self", "decoder_self", "cross"):
        for key in ("grad_wq", "grad_wk", "entropy", "max_weight"):
            curves[f"{key}.{kind}"] = [[0.1 * (i + 1)] * 6 for i in range(2)]
    return {"name": name, "label": f"h = {heads}", "tests": "", "parameters": 7_766_016,
            "config": {"n_heads": heads, "scaled": scaled, "attention": attention},
            "seeds": list(range(1, len(bleus) + 1)), "curves": [curves] * len(bleus),
            "bleu": [{"test_2016_flickr.beam4": b, "val.beam4": b + 1} for b in bleus],
            "epochs": [[{"val_loss": val_loss}]] * len(bleus)}


def test_the_seed_noise_is_the_largest_difference_between_two_seeds():
    payload = {"runs": [entry("h8", 8, [30.0, 30.5]), entry("h1", 1, [29.0, 28.0]), entry("h4", 4, [31.0])]}
    assert seed_noise(payload) == pytest.approx(1.0)
    assert seed_noise({"runs": [entry("h8", 8, [30.0])]}) is None


def test_verdicts_say_whether_a_claim_reproduces_beyond_the_seed_noise():
    runs = [entry("h8", 8, [30.0, 30.4]), entry("h1", 1, [29.0, 29.2]), entry("h1-unscaled", 1, [26.0, 26.5], False),
            entry("h8-unscaled", 8, [30.1], False)]
    lines = verdicts({"runs": runs})
    assert lines[0].startswith("Footnote 4 at d_k = 192: without 1/√d_k the test BLEU is -2.85")
    assert "beyond the seed noise of 0.50 — the claim reproduces" in lines[0]
    assert "d_k = 24" in lines[1] and "within the seed noise of 0.50 — the claim does not reproduce" in lines[1]
    assert lines[2].startswith("Table 3 (A): one head scores -1.10 test BLEU against the best multi-head sibling "
                               "(h = 8), beyond")
    # one seed each: however large the difference, the verdict waits for the seed noise
    one_seed = verdicts({"runs": [entry("h8", 8, [34.2]), entry("h1", 1, [34.7]),
                                  entry("h1-unscaled", 1, [2.3], False)]})
    assert one_seed[0] == ("Footnote 4 at d_k = 192: without 1/√d_k the test BLEU is -32.40 against the scaled model, "
                           "with the seed noise not measured yet — not decided until a second seed has measured the "
                           "seed noise.")
    assert "reproduce" not in one_seed[-1] and "not decided" in one_seed[-1]
    partial = verdicts({"runs": [entry("h8", 8, [30.0])]})
    assert partial[0] == "Footnote 4 at d_k = 192: not measured yet (h1 and h1-unscaled must both finish)."


def test_table_3_sets_the_papers_rows_beside_ours():
    payload = {"runs": [entry("h8", 8, [30.0, 30.4], val_loss=math.log(5.0)), entry("h1", 1, [29.0], val_loss=1.5)]}
    text = table_markdown(payload)
    assert "| 1 | 512 · 5.29 · 24.9 | 192 | 4.48 | 30.0 | 29.0 | 7,766,016 |" in text
    assert "| 8 | 64 · 4.92 · 25.8 | 24 | 5.00 (seeds 5.00 / 5.00) | 31.2 (seeds 31.0 / 31.4) | 30.2 (seeds " in text
    assert "| 2 | — | 96 | not trained yet |" in text and "| 32 | 16 · 5.01 · 25.4 | — |" in text
    assert "differ by up to 0.40 BLEU" in text


def test_the_curves_draw_each_seed_and_the_chosen_layer():
    payload = [entry("h1", 1, [29.0, 29.2]), entry("h1-unscaled", 1, [26.0], False)]
    fig = curves_figure(payload, "cross", layer=2)
    # per seed: loss, W^Q, W^K, entropy
    assert len(fig.data) == 4 * 3
    assert [t.line.dash for t in fig.data[:4]] == ["solid", "solid", "dot", "solid"]
    assert fig.data[4].line.dash == "dash"  # the second seed
    assert list(fig.data[1].y) == pytest.approx([0.1, 0.2])
    assert list(curves_figure(payload, "cross", MEAN).data[3].y) == pytest.approx([0.1, 0.2])


def test_time_lapse_figures_blank_the_mask_and_label_roles():
    fig = timelapse_figure([[1.0, 0.0], [0.4, 0.6]], ["<s>", "Ein"], ["<s>", "Ein"], "step 50", causal=True)
    z = fig.data[0].z
    assert math.isnan(z[0][1]) and z[1][0] == pytest.approx(0.4)
    roles = [["alignment", "mixed"], ["EOS-sink", "alignment"]]
    fig = head_timeline_figure([[0.2, 0.3], [0.8, 0.1]], roles, [0, 100], "sharpness")
    assert list(fig.data[0].y) == ["step 0", "step 100"] and list(fig.data[0].x) == ["H1", "H2"]
    assert [list(row) for row in fig.data[0].text] == [["A", ""], ["E", "A"]]
    assert "**A** alignment" in role_legend() and "mixed" not in role_legend()
    assert "**&lt;s&gt;** start-sink" in role_legend()  # a decoder head parked on <s>, drawn as "<s>"
    fig = head_timeline_figure([[0.9]], [["start-sink"]], [0], "eos")
    assert [list(row) for row in fig.data[0].text] == [["&lt;s&gt;"]]


def test_a_records_decoder_eos_sink_is_shown_as_the_start_sink_it_is():
    """Time-lapse records written before the start-sink had its name call a decoder head on <s> an EOS-sink."""
    from types import SimpleNamespace

    timelapse = {"steps": [0, 50], "stats": {"decoder_self": {"eos": [[[0.2, 0.9]], [[0.1, 0.95]]]}},
                 "roles": {"decoder_self": [[["mixed", "EOS-sink"]], [["mixed", "EOS-sink"]]]}}
    lab = SimpleNamespace(index={"reference": 0}, records=[{"timelapse": timelapse}])
    fig = heads_plot(lab, "decoder_self", 1, "eos")
    assert [list(row) for row in fig["data"][0]["text"]] == [["", "&lt;s&gt;"]] * 2
    assert [list(row) for row in fig["data"][0]["customdata"]] == [["mixed", "start-sink"]] * 2

"""The Lab tab's words and figures, from lab records: Table 3 beside ours, the verdicts with their intervals,
the curves and the time-lapse figures."""

from __future__ import annotations

import math

import pytest

from viz.lab import MEAN, curve_trace, curves_figure, head_timeline_figure, role_legend, timelapse_figure
from viz.views.lab import claim_row, collapse_markdown, heads_plot, table_markdown


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


def test_table_3_sets_the_papers_rows_beside_ours_with_mean_and_sd_over_seeds():
    payload = {"runs": [entry("h8", 8, [30.0, 30.4], val_loss=math.log(5.0)), entry("h1", 1, [29.0], val_loss=1.5)]}
    payload["runs"][0]["runs"] = ["h8", "h8-seed2"]
    payload["runs"][1]["runs"] = ["h1"]
    records = {"h8": {"trained_on": ["cpu"]}, "h8-seed2": {"trained_on": ["cuda: NVIDIA H200"]}, "h1": {}}
    text = table_markdown(payload, records)
    assert "| 1 | 512 · 5.29 · 24.9 | 192 | 4.48 (1 seed) | 29.00 (1 seed) | 29.00 | CPU |" in text
    assert ("| 8 | 64 · 4.92 · 25.8 | 24 | 5.00 ± 0.00 (2 seeds) | 30.20 ± 0.28 (2 seeds) | 30.00 / 30.40 | "
            "CPU and GPU |") in text
    assert "| 2 | — | 96 | not trained yet |" in text and "| 32 | 16 · 5.01 · 25.4 | — | — |" in text
    assert "seed noise" not in text.lower()


def claim(**kw):
    base = {"title": "Footnote 4 at d_k = 192", "a": "h1-unscaled", "b": "h1", "verdict": "not decided yet",
            "why": "no run of h1 ships translations"}
    return {**base, **kw}


def test_a_claim_row_gives_the_difference_its_interval_the_seeds_and_the_verdict():
    decided = claim(difference=-32.71, low=-34.05, high=-31.4, seeds_a=[1, 2, 3], seeds_b=[1, 2, 3], devices=["cpu"],
                    verdict="reproduces", why="")
    assert claim_row(decided) == ("| Footnote 4 at d_k = 192 | h1-unscaled − h1 | -32.71 | [-34.05, -31.40] | "
                                  "3 / 3 on CPU | **reproduces** |")
    provisional = claim(difference=0.4, low=-1.2, high=2.0, seeds_a=[1], seeds_b=[1, 3],
                        devices=["cpu", "cuda: H200"], why="h1-unscaled has 1 of 3 seeds with translations")
    assert claim_row(provisional).endswith("| 1 / 2 on CPU and GPU | not decided yet (h1-unscaled has 1 of 3 seeds "
                                           "with translations; provisional interval) |")
    assert claim_row(claim()) == ("| Footnote 4 at d_k = 192 | h1-unscaled − h1 | — | — | — | not decided yet: no run "
                                  "of h1 ships translations |")


def test_the_collapse_is_told_with_its_numbers():
    stats = {"sentences": 1000, "runs": {"h1-unscaled": {"beam4": 2.33}},
             "collapse": {"h1-unscaled": {"setting": "h1-unscaled", "seed": 1, "step": 800, "last_step": 1578,
                                          "threshold": 0.98, "distinct": {"greedy": 1, "beam4": 1},
                                          "most_common": {"beam4": {"text": "Ein Mann.", "count": 1000}}},
                          "h1-unscaled-seed2": {"setting": "h1-unscaled", "seed": 2, "step": 800, "last_step": 1578,
                                                "threshold": 0.98, "distinct": None, "most_common": None}}}
    text = collapse_markdown(stats)
    assert "seed 1: from step 800 of 1578; seed 2: from step 800 of 1578" in text
    assert "Seed 1 then writes one sentence for the 1,000 test inputs greedily (one sentence with beam 4), most " \
           "often “Ein Mann.” (1,000 times): its test BLEU (2.33)" in text
    assert collapse_markdown({"collapse": {}}) == ""


def test_the_curves_draw_each_seed_in_the_style_the_legend_names():
    payload = [entry("h1", 1, [29.0, 29.2]), entry("h1-unscaled", 1, [26.0], False)]
    series = {"step": [0, 25], "softmax_grad": {k: [[0.3] * 6, [0.2] * 6] for k in ("encoder_self", "cross",
                                                                                    "decoder_self")}}
    payload[0]["series"] = [series, None]  # the second seed ships no time-lapse series: its panel is left out
    payload[1]["series"] = [series]
    fig = curves_figure(payload, "cross", layer=2)
    # per seed: loss, the softmax's gradient (where its series ships), ‖∇W^Q‖, entropy
    assert len(fig.data) == 4 + 3 + 4
    assert [t.line.dash for t in fig.data[:4]] == ["solid"] * 4  # seed 1
    assert {t.line.dash for t in fig.data[4:7]} == {"dash"}  # seed 2
    assert [t.name for t in fig.data if t.showlegend] == ["h = 1 · seed 1", "h = 1 · seed 2", "h = 1 · seed 1"]
    assert fig.data[0].line.color != fig.data[7].line.color and fig.data[0].marker.symbol != fig.data[7].marker.symbol
    assert list(fig.data[1].y) == pytest.approx([0.3, 0.2]) and list(fig.data[2].y) == pytest.approx([0.1, 0.2])
    assert list(curves_figure(payload, "cross", MEAN).data[3].y) == pytest.approx([0.1, 0.2])
    assert curve_trace(payload, "h1-unscaled") == 7 and curve_trace(payload, "h1", "grad_wq") == 2


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

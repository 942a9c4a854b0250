"""The Lab tab's words and tables: the paper's Table 3 beside our siblings, and what the runs say.

Everything here is computed from the shipped records (``model.serving.lab.Lab.runs_payload()``), never written
by hand: a verdict is the one the shipped statistics give (``model.training.lab_stats``: the difference in test
BLEU with its 95 % interval over seeds and sentences), "inconclusive at this scale" when that is what the interval
says. Gradio-free.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from model.probes.analysis import role_name
from model.serving.lab import SHIPPED
from model.training.lab_stats import kept_reading, kept_sentence
from viz.lab import curves_figure, head_timeline_figure, table3a_figure, timelapse_figure
from viz.views import inputs
from viz.views.attention.maps import overview_plot
from viz.views.attention.share import View, opens
from viz.views.outputs import SKIP, Figure, drawn_key, finish_figure, open_tab
from viz.vocab import KIND_LABELS

# Table 3 of the paper (newstest2013, En→De, beam 4): (h, d_k, PPL, BLEU). Row (A) keeps the compute constant.
PAPER_BASE = (8, 64, 4.92, 25.8)
PAPER_A = ((1, 512, 5.29, 24.9), (4, 128, 5.00, 25.5), (16, 32, 4.91, 25.8), (32, 16, 5.01, 25.4))
PAPER_B = ((8, 16, 5.16, 25.1), (8, 32, 5.01, 25.4))
# Britz et al. 2017, newstest2013 BLEU at attention dimension 128 / 256 / 512 / 1024.
BRITZ_DIMS = (128, 256, 512, 1024)
BRITZ_DOT = (22.03, 22.33, 21.78, 18.22)
BRITZ_ADDITIVE = (22.23, 22.33, 22.47, 22.10)
SCORE = "test_2016_flickr.beam4"  # what the verdicts compare: the reported score
SCALE_NOTE = ("Our scale: 29,000 Multi30k caption pairs, d_model = 192, six epochs (about 1,600 updates) — not "
              "WMT's 4.5 M sentence pairs, d_model = 512 and 100,000 steps on eight GPUs.")


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if values else math.nan


def family(payload: dict, name: str) -> dict | None:
    return next((r for r in payload["runs"] if r["name"] == name), None)


def scores(entry: dict | None, key: str = SCORE) -> list[float]:
    return [b[key] for b in entry["bleu"]] if entry else []


def val_ppl(entry: dict) -> list[float]:
    """Each seed's validation perplexity after its last epoch (the full val set, teacher-forced, no smoothing)."""
    return [math.exp(epochs[-1]["val_loss"]) for epochs in entry["epochs"]]


def mean_sd(values: Sequence[float], digits: int = 2) -> str:
    """"35.05 ± 0.07 (3 seeds)"; one seed: its value; none: "not trained yet"."""
    if not values:
        return "not trained yet"
    if len(values) == 1:
        return f"{values[0]:.{digits}f} (1 seed)"
    return f"{_mean(values):.{digits}f} ± {np.std(values, ddof=1):.{digits}f} ({len(values)} seeds)"


def _devices(payload_entry: dict, records: dict) -> str:
    kinds = sorted({"GPU" if d.startswith("cuda") else "CPU" for name in payload_entry["runs"]
                    for d in records[name].get("trained_on", ["cpu"])})
    return " and ".join(kinds)


def table_markdown(payload: dict, records: dict) -> str:
    """Table 3 (A)/(B) of the paper beside our siblings with the 1/√d_k factor and dot products: per h, the mean ±
    sd over seeds of validation perplexity and of test BLEU (beam 4), and where the seeds trained."""
    ours = {r["config"]["n_heads"]: r for r in payload["runs"]
            if r["config"].get("attention", "dot") == "dot" and r["config"].get("scaled", True)}
    paper = {h: (d_k, ppl, bleu) for h, d_k, ppl, bleu in (*PAPER_A, PAPER_BASE)}
    rows = ["| h | paper: d_k · PPL · BLEU | ours: d_k | val PPL | test_2016 BLEU (beam 4) | seeds | trained on |",
            "|---|---|---|---|---|---|---|"]
    for h in sorted(set(paper) | set(ours) | {2}):
        p = paper.get(h)
        paper_cell = f"{p[0]} · {p[1]:.2f} · {p[2]:.1f}" if p else "—"
        entry = ours.get(h)
        if entry is None:
            rows.append(f"| {h} | {paper_cell} | {'—' if h > 16 else 192 // h} | "
                        f"{'—' if h > 16 else 'not trained yet'} | | | |")
            continue
        seeds = " / ".join(f"{b:.2f}" for b in scores(entry))
        rows.append(f"| {h} | {paper_cell} | {192 // h} | {mean_sd(val_ppl(entry))} | {mean_sd(scores(entry))} | "
                    f"{seeds} | {_devices(entry, records)} |")
    for h, d_k, ppl, bleu in PAPER_B:
        rows.append(f"| {h} (B) | {d_k} · {ppl:.2f} · {bleu:.1f} | — | — | — | | |")
    return "\n".join(rows) + (
        "\n\nThe paper's rows are newstest2013 (WMT, d_model = 512, d_k = 512 / h); ours are Multi30k "
        f"(d_model = 192, d_k = 192 / h): mean ± standard deviation over seeds. {SCALE_NOTE}")


VERDICT_WORDS = {"reproduces": "**reproduces**", "the opposite": "**the opposite**",
                 "inconclusive at this scale": "**inconclusive at this scale**", "not decided yet": "not decided yet"}


def claim_row(claim: dict) -> str:
    """One claim as a table row: the pair, the difference with its interval, the seeds, the verdict and why."""
    pair = f"{claim['a']} − {claim['b']}"
    if "difference" not in claim:
        return f"| {claim['title']} | {pair} | — | — | — | {claim['verdict']}: {claim['why']} |"
    seeds = f"{len(claim['seeds_a'])} / {len(claim['seeds_b'])}"
    devices = " and ".join("GPU" if d.startswith("cuda") else "CPU" for d in claim["devices"])
    why = f" ({claim['why']}; provisional interval)" if claim["why"] else ""
    return (f"| {claim['title']} | {pair} | {claim['difference']:+.2f} | [{claim['low']:+.2f}, {claim['high']:+.2f}] | "
            f"{seeds} on {devices} | {VERDICT_WORDS[claim['verdict']]}{why} |")


def evidence_markdown(stats: dict) -> str:
    """The verdicts, from the shipped statistics (``model.training.lab_stats``): one row per claim."""
    if not stats.get("claims"):
        return ("*The lab's statistics are not shipped (`python -m model.lab export` computes them from the runs' "
                "translations).*")
    rows = ["| claim | settings compared | difference (test BLEU, beam 4) | 95 % interval | seeds (a / b) | verdict |",
            "|---|---|---|---|---|---|", *(claim_row(c) for c in stats["claims"])]
    method = (f"The difference is the mean over seeds of a − b on test_2016_flickr ({stats['sentences']:,} sentences); "
              f"the interval, a bootstrap over seeds × sentences ({stats['resamples']:,} resamples: the same "
              "sentences drawn for both settings, each setting's seeds drawn with replacement). A verdict needs "
              f"{stats['seeds_needed']} seeds with shipped translations a side: *reproduces* when the whole interval "
              "lies on the paper's side of 0, *the opposite* on the other, *inconclusive at this scale* when it "
              "holds 0. Only runs whose translations ship enter the interval; every run's BLEU is in the table below.")
    return "\n".join(rows) + "\n\n" + method


def _words(n: int) -> str:
    return "one sentence" if n == 1 else f"{n:,} distinct sentences"


def collapse_markdown(stats: dict) -> str:
    """What happened without 1/√d_k, from the records: at d_k = 192, when the cross-attention became uniform and
    what the model then writes; at d_k = 24, that it kept reading the source (``lab_stats.kept_reading``)."""
    kept = kept_reading(stats)
    kept = f"**Without 1/√d_k at d_k = 24 (h = 8) the model keeps reading the source:** {kept_sentence(kept)}." \
        if kept else ""
    runs = [c for c in stats.get("collapse", {}).values() if c["setting"] == "h1-unscaled"]
    if not runs:
        return kept
    when = "; ".join(f"seed {c['seed']}: from step {c['step']} of {c['last_step']}" for c in runs)
    lines = [f"**Without 1/√d_k at d_k = 192 the model stopped reading the source.** Its cross-attention became "
             f"uniform in all six layers (entropy ÷ log n ≥ {runs[0]['threshold']:.2f}: every source token weighted "
             f"alike) and stayed so to the end of training — {when}."]
    scored = [c for c in runs if c["distinct"]]
    for c in scored:
        common = c["most_common"]["beam4"]
        lines.append(f"Seed {c['seed']} then writes {_words(c['distinct']['greedy'])} for the "
                     f"{stats['sentences']:,} test inputs greedily ({_words(c['distinct']['beam4'])} with beam 4), "
                     f"most often “{common['text']}” ({common['count']:,} times): its test BLEU "
                     f"({stats['runs'][next(n for n, v in stats['collapse'].items() if v is c)]['beam4']:.2f}) is "
                     "what a fixed sentence scores against every reference.")
    lines.append("The time-lapse below shows the moment: choose the run h1-unscaled, kind cross, and step through "
                 f"{runs[0]['step']}.")
    return " ".join(lines) + (f"\n\n{kept}" if kept else "")


def early_gradients(payload: dict, records: dict, scaled: str, unscaled: str, kind: str = "encoder_self",
                    until: int = 200) -> str | None:
    """Footnote 4's two gradients in the first ``until`` steps (first seeds, mean over layers): the softmax's own
    (‖diag(p) − p pᵀ‖, from the time-lapse maps) and ‖∇W^Q‖ (from the curves), unscaled against scaled."""
    a, b = records.get(unscaled), records.get(scaled)
    if not a or not b or "series" not in a["timelapse"] or "series" not in b["timelapse"]:
        return None

    def early_wq(record: dict) -> float:
        curves = record["curves"]
        return float(np.mean([np.mean(v) for s, v in zip(curves["step"], curves[f"grad_wq.{kind}"]) if s <= until]))

    def early_softmax(record: dict) -> float:
        tl = record["timelapse"]
        return float(np.mean([np.mean(v) for s, v in zip(tl["steps"], tl["series"]["softmax_grad"][kind])
                              if s <= until]))

    d_k = 192 // a["config"]["n_heads"]
    sa, sb = early_softmax(a), early_softmax(b)
    said = "smaller, as footnote 4 predicts for a saturated softmax" if sa < sb else "not smaller, against footnote 4"
    ratio = early_wq(a) / early_wq(b)
    rest = "" if ratio <= math.sqrt(d_k) else (
        "; that it is more than √d_k larger comes from what else differs between the two runs (their keys, the loss's "
        "gradient reaching the scores), which the footnote does not speak of")
    return (f"At d_k = {d_k} ({unscaled} against {scaled}, seed 1, {kind.replace('_', ' ')}, first {until} steps): "
            f"the softmax's own gradient, footnote 4's quantity, was {sa:.3f} unscaled against {sb:.3f} scaled — "
            f"{said}. ‖∇W^Q‖ is another quantity: it was {ratio:.2g} × larger unscaled, because there the scores, and "
            f"so their derivative in W^Q, are not divided by √d_k (= {math.sqrt(d_k):.3g}){rest}.")


# ------------------------------------------------------------------------------------------ the tab's views
FOOTNOTE4_RUNS = ("h8", "h8-unscaled", "h1", "h1-unscaled", "h1-additive")
STATS = ("entropy", "sharpness", "confidence", "eos", "previous")
NOT_YET = ("*The lab's runs are still training (`python -m model.lab train`); nothing is shipped in `assets/lab/` "
           "yet. This tab fills in as `python -m model.lab export` ships them.*")
CURVES_NOTE = ("What it shows: each sibling's validation loss (the shipped sample, teacher-forced); the softmax's own "
               "gradient ‖diag(p) − p pᵀ‖ (from the time-lapse maps), the quantity footnote 4 predicts to shrink when "
               "the softmax saturates; ‖∇W^Q‖, how strongly training moves the queries, which footnote 4 does not "
               "speak of; and the mean softmax entropy — recorded every 25 steps while it trained. "
               "What it does not: WMT-scale training, where the paper's effect was seen. ")
TIMELAPSE_NOTE = ("What it shows: the chosen run's attention on this sentence, teacher-forced with its "
                  "reference translation, at log-spaced training steps from the untrained model (step 0) on. "
                  "What it does not: the shipped model's own history (it trained longer, on a longer schedule).")


def summary(lab) -> str:
    """The tab's opening: the verdicts with their intervals, the collapse, then Table 3 beside ours (or why there
    is nothing yet); a lab file that cannot be read is named."""
    payload = lab.runs_payload()
    broken = "".join(f"\n\n*The lab's file {name} cannot be read ({why}): it is left out.*"
                     for name, why in lab.broken.items())
    if not payload["runs"]:
        return NOT_YET + broken
    runs = payload["runs"]
    trained = "; ".join(r["label"] + f" ({len(r['seeds'])} seed{'s' if len(r['seeds']) > 1 else ''})" for r in runs)
    collapse = collapse_markdown(lab.statistics)
    return (f"**{sum(len(r['seeds']) for r in runs)} runs of {len(runs)} settings:** {trained}.{broken}\n\n"
            "### What the lab finds\n\n" + evidence_markdown(lab.statistics) + (f"\n\n{collapse}" if collapse else "")
            + "\n\n### Table 3 (A) at our scale\n\n" + table_markdown(payload, lab.records))


def table3a_plot(lab) -> tuple[Figure, str]:
    """Table 3 (A) as a chart (``viz.lab.table3a_figure``) and the sentence that says what it shows."""
    payload = lab.runs_payload()
    base = family(payload, "h8")
    if not base:
        raise ValueError("the reference h = 8 is not shipped yet")
    ref = _mean(scores(base))
    points = []
    for entry in payload["runs"]:
        if entry["config"].get("attention", "dot") != "dot" or not entry["config"].get("scaled", True):
            continue
        for name, seed, bleu in zip(entry["runs"], entry["seeds"], scores(entry)):
            gpu = any(d.startswith("cuda") for d in lab.records[name].get("trained_on", ["cpu"]))
            points.append({"h": entry["config"]["n_heads"], "seed": seed, "bleu": round(bleu - ref, 2),
                           "device": "GPU" if gpu else "CPU"})
    paper = [(h, round(bleu - PAPER_BASE[3], 1)) for h, _, _, bleu in sorted((*PAPER_A, PAPER_BASE))]
    by_h = {}
    for p in points:
        by_h.setdefault(p["h"], []).append(p["bleu"])
    # (+ 0.0: a mean that rounds to -0.00, h = 8 against itself, is said as +0.00)
    said = "; ".join(f"h = {h}: {round(_mean(v), 2) + 0.0:+.2f} ({len(v)} seed{'s' if len(v) > 1 else ''})"
                     for h, v in sorted(by_h.items()))
    text = (f"Test BLEU (beam 4) against h = 8's mean ({ref:.2f}), per h: {said}. The paper, against its base: "
            + "; ".join(f"h = {h}: {d:+.1f}" for h, d in paper) + ".")
    return finish_figure(table3a_figure(points, paper), "lab_table3a"), text


def run_choices(lab) -> list[tuple[str, str]]:
    return [(r["label"], r["name"]) for r in lab.runs_payload()["runs"]]


def check_names(lab, names) -> list[str]:
    allowed = [r["name"] for r in lab.runs_payload()["runs"]]
    names = list(names or [])
    unknown = [n for n in names if n not in allowed]
    if unknown:
        raise ValueError(f"unknown run {unknown[0]!r}; choose among: {', '.join(allowed)}")
    return names


def _check_layer(value, n_layers: int, mean_ok: bool = False) -> int:
    return inputs.whole_number(value, "layer", 0 if mean_ok else 1, n_layers, " (0 = the mean over layers)"
                               if mean_ok else "")


def curves_plot(lab, kind, layer, names) -> tuple[Figure, str]:
    """The chosen runs' curves for one kind of attention and one layer (0: their mean), with what they say. Built
    once per choice (~80 ms of plotly on a 2-core machine: a lecture's stop 6 built it at every visit), each call a
    copy of its own."""
    payload = lab.runs_payload()
    if not payload["runs"]:
        raise ValueError("no lab run is shipped yet")
    kind = inputs.check_kind(kind)
    layer = _check_layer(layer, payload["runs"][0]["config"]["n_layers"], mean_ok=True)
    chosen = tuple(r["name"] for r in payload["runs"] if r["name"] in check_names(lab, names))
    if not chosen:
        raise ValueError("choose at least one run to draw")
    figure, text = _curves_built(lab, kind, layer, chosen)
    return Figure(json.loads(figure)), text


@lru_cache(maxsize=64)  # (a choice's figure is ~55 kB: ~3.5 MB at most; the shipped runs do not change)
def _curves_built(lab, kind: str, layer: int, names: tuple[str, ...]) -> tuple[str, str]:
    """``curves_plot``'s figure, as JSON text, and its note."""
    payload = lab.runs_payload()
    chosen = [r for r in payload["runs"] if r["name"] in names]
    notes = [early_gradients(payload, lab.records, s, u, kind) for s, u in (("h1", "h1-unscaled"),
                                                                             ("h8", "h8-unscaled"))]
    britz = ("Britz et al. (2017), newstest2013 BLEU at d = " + " / ".join(map(str, BRITZ_DIMS)) + ": dot product "
             + " / ".join(map(str, BRITZ_DOT)) + ", additive " + " / ".join(map(str, BRITZ_ADDITIVE)) + ".")
    text = " ".join([CURVES_NOTE, *(n for n in notes if n), britz])
    return json.dumps(finish_figure(curves_figure(chosen, kind, layer), "lab_curves")), text


def compare(runs, text, left, right, kind) -> tuple[str, Figure, str, Figure]:
    """Two models on the visitor's sentence: each one's translation and its layers × heads overview (0–1)."""
    text, kind = inputs.check_text(text), inputs.check_kind(kind)
    out = []
    for run in (left, right):
        if not isinstance(run, str):
            raise ValueError(f"run must be a name (text), got {inputs.shown(run)}")
        result = runs.lab_attention(text, run)
        name = "the shipped model (h = 8, full budget)" if run == SHIPPED else run
        out += [f"**{name}:** {result.translation}", overview_plot(result, kind)]
    return tuple(out)


def timelapse_plot(lab, example, kind, layer, head, step, run=None) -> tuple[Figure, str]:
    """One head of a run (``run``: one whose time-lapse maps ship; None: the reference) on a time-lapse sentence at
    one snapshot (``step``: its index). A head past the run's own number of heads shows its last head."""
    if run is not None and run not in lab.timelapse_runs():
        raise ValueError(f"unknown run {inputs.shown(run)}; choose one of: {', '.join(lab.timelapse_runs())}")
    run, maps, queries, keys = lab.timelapse_maps(example, inputs.check_kind(kind), run)
    n_steps, n_layers, n_heads = maps.shape[:3]
    layer = _check_layer(layer, n_layers)
    head = min(inputs.whole_number(head, "head", 1, max(n_heads, 8)), n_heads)
    i = inputs.whole_number(step, "snapshot", 0, n_steps - 1)
    record = lab.records[run]
    steps = record["timelapse"]["steps"]
    w = maps[i, layer - 1, head - 1]
    # two lines: at 320 CSS px (400 % zoom) one ran past its figure
    title = f"{run} · step {steps[i]} of {steps[-1]}<br>{KIND_LABELS[kind]}, layer {layer}, head {head}"
    stats = record["timelapse"]["stats"][kind]
    role = role_name(kind, record["timelapse"]["roles"][kind][i][layer - 1][head - 1])
    caption = (f"{TIMELAPSE_NOTE} Run {run} ({record['label']}). At step {steps[i]} this head's entropy over the "
               f"shipped sample is {stats['entropy'][i][layer - 1][head - 1]:.2f} nats and its role *{role}*.")
    series = record["timelapse"].get("series")
    if series:
        ratio = series["entropy_ratio"][kind][i][layer - 1]
        caption += (f" On the time-lapse sentences this layer's rows hold {ratio:.2f} of the entropy of a uniform row "
                    "(1: every key weighted alike; 0: one key).")
    collapse = lab.statistics.get("collapse", {}).get(run)
    if collapse and kind == "cross" and steps[i] >= collapse["step"]:
        caption += (f" **From step {collapse['step']} this run's cross-attention is uniform in every layer: it no "
                    "longer reads the source.**")
    figure = timelapse_figure(w, queries, keys, title, causal=kind == "decoder_self")
    return finish_figure(figure, f"timelapse_{run}_{kind}_L{layer}H{head}_step{steps[i]}"), caption


def heads_plot(lab, kind, layer, stat) -> Figure:
    """A layer's heads over the snapshots: one statistic (over the shipped sample), each cell with its role."""
    kind = inputs.check_kind(kind)
    record = lab.records[lab.index["reference"]]["timelapse"]
    if stat not in STATS:
        raise ValueError(f"unknown statistic {stat!r}; choose one of: {', '.join(STATS)}")
    values = np.asarray(record["stats"][kind][stat], dtype=np.float64)  # (steps, L, H); None -> nan
    layer = _check_layer(layer, values.shape[1])
    roles = [[role_name(kind, r) for r in step_roles[layer - 1]] for step_roles in record["roles"][kind]]
    return finish_figure(head_timeline_figure(values[:, layer - 1], roles, record["steps"], stat),
                         f"timelapse_heads_{kind}_L{layer}")


def open_link(link: View | None) -> tuple:
    """A link that names this tab (viz.views.attention.share): its runs on the training curves (checked against the
    shipped ones when the link was read), and the tab opened; any other link changes nothing."""
    if not opens(link, "lab"):
        return SKIP, SKIP
    return (SKIP if link.runs is None else list(link.runs)), open_tab("lab")


def open_link_drawn(lab, link: View | None, kind, layer, names) -> tuple:
    """``open_link`` with the link's curves in the same answer (a lecture's move: the tab's opening then draws them
    not again, ``viz.ui.wiring.unless_drawn``): the runs, the key of what the curves show, the curves and their note,
    then the tab opened; any other link changes nothing. Curves it cannot draw (no run chosen) are left to the tab's
    opening, which says why."""
    chosen, tab = open_link(link)
    if tab is SKIP:
        return SKIP, SKIP, SKIP, SKIP, SKIP
    names = names if chosen is SKIP else chosen
    try:
        return chosen, drawn_key(kind, layer, names), *curves_plot(lab, kind, layer, names), tab
    except ValueError:
        return chosen, SKIP, SKIP, SKIP, tab

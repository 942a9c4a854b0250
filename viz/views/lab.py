"""The Lab tab's words and tables: the paper's Table 3 beside our siblings, and what the runs say.

Everything here is computed from the shipped records (``model.serving.lab.Lab.runs_payload()``), never written
by hand: a verdict sentence compares two siblings' test BLEU against the seed noise measured in the same lab,
so it says "does not reproduce" when that is what the numbers say. Gradio-free.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from model.probes.analysis import role_name
from model.serving.lab import SHIPPED
from viz.lab import curves_figure, head_timeline_figure, timelapse_figure
from viz.views import inputs
from viz.views.attention.maps import overview_plot
from viz.views.attention.share import View, opens
from viz.views.outputs import SKIP, Figure, finish_figure, open_tab
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
    """Each seed's validation perplexity after its last epoch (teacher-forced, no label smoothing)."""
    return [math.exp(epochs[-1]["val_loss"]) for epochs in entry["epochs"]]


def seed_noise(payload: dict, key: str = SCORE) -> float | None:
    """The largest difference between two seeds of one sibling (None before any sibling has two seeds)."""
    spreads = [max(s) - min(s) for s in (scores(r, key) for r in payload["runs"]) if len(s) >= 2]
    return max(spreads) if spreads else None


def _fmt(values: Sequence[float], digits: int = 1) -> str:
    if not values:
        return "not trained yet"
    text = f"{_mean(values):.{digits}f}"
    return text + (f" (seeds {' / '.join(f'{v:.{digits}f}' for v in values)})" if len(values) > 1 else "")


def table_markdown(payload: dict) -> str:
    """Table 3 (A)/(B) of the paper beside our siblings with the 1/√d_k factor and dot products."""
    ours = {r["config"]["n_heads"]: r for r in payload["runs"]
            if r["config"].get("attention", "dot") == "dot" and r["config"].get("scaled", True)}
    paper = {h: (d_k, ppl, bleu) for h, d_k, ppl, bleu in (*PAPER_A, PAPER_BASE)}
    rows = ["| h | paper: d_k · PPL · BLEU | ours: d_k | val PPL | val BLEU (beam 4) | test_2016 BLEU (beam 4) | "
            "parameters |", "|---|---|---|---|---|---|---|"]
    for h in sorted(set(paper) | set(ours) | {2}):
        p = paper.get(h)
        paper_cell = f"{p[0]} · {p[1]:.2f} · {p[2]:.1f}" if p else "—"
        entry = ours.get(h)
        if entry is None and h > 16:
            rows.append(f"| {h} | {paper_cell} | — | — | — | — | — |")
            continue
        d_k = 192 // h
        if entry is None:
            rows.append(f"| {h} | {paper_cell} | {d_k} | not trained yet | | | |")
            continue
        rows.append(f"| {h} | {paper_cell} | {d_k} | {_fmt(val_ppl(entry), 2)} | {_fmt(scores(entry, 'val.beam4'))} "
                    f"| {_fmt(scores(entry))} | {entry['parameters']:,} |")
    for h, d_k, ppl, bleu in PAPER_B:
        rows.append(f"| {h} (B) | {d_k} · {ppl:.2f} · {bleu:.1f} | — | — | — | — | — |")
    noise = seed_noise(payload)
    noise_text = (f"Seed noise: two seeds of one sibling differ by up to {noise:.2f} BLEU."
                  if noise is not None else "Seed noise: not measured yet (no sibling has two seeds).")
    return "\n".join(rows) + (
        "\n\nThe paper's rows are newstest2013 (WMT, d_model = 512, d_k = 512 / h); ours are Multi30k "
        f"(d_model = 192, d_k = 192 / h), mean over seeds. {noise_text} {SCALE_NOTE}")


def _compare(a: dict | None, b: dict | None, noise: float | None) -> tuple[float, str] | None:
    """(mean BLEU of a − mean of b, how it stands against the seed noise) or None while a run is missing."""
    if not a or not b:
        return None
    diff = _mean(scores(a)) - _mean(scores(b))
    if noise is None:
        return diff, "with the seed noise not measured yet"
    beyond = abs(diff) > noise
    return diff, f"{'beyond' if beyond else 'within'} the seed noise of {noise:.2f}"


def _verdict(diff: float, where: str) -> str:
    """A claim that the change costs BLEU: it reproduces when the loss is beyond the seed noise; while no run has
    two seeds yet, it is not decided, however large the difference."""
    if where.startswith("with the seed noise not measured"):
        return "not decided until a second seed has measured the seed noise"
    holds = diff < 0 and where.startswith("beyond")
    return f"{'the claim reproduces' if holds else 'the claim does not reproduce'} at our scale"


def verdicts(payload: dict) -> list[str]:
    """One sentence per claim, from the numbers: footnote 4 at d_k = 192 and 24, additive vs unscaled, Table 3 (A)."""
    noise = seed_noise(payload)
    out = []
    for scaled, unscaled, d_k in (("h1", "h1-unscaled", 192), ("h8", "h8-unscaled", 24)):
        c = _compare(family(payload, unscaled), family(payload, scaled), noise)
        if c is None:
            out.append(f"Footnote 4 at d_k = {d_k}: not measured yet ({scaled} and {unscaled} must both finish).")
            continue
        diff, where = c
        out.append(f"Footnote 4 at d_k = {d_k}: without 1/√d_k the test BLEU is {diff:+.2f} against the scaled "
                   f"model, {where} — {_verdict(diff, where)}.")
    c = _compare(family(payload, "h1-additive"), family(payload, "h1-unscaled"), noise)
    if c is not None:
        diff, where = c
        out.append(f"Additive against unscaled dot-product attention at d_k = 192: {diff:+.2f} BLEU, {where} "
                   f"(Britz et al. at d = 1024: additive {BRITZ_ADDITIVE[-1]}, dot product {BRITZ_DOT[-1]}).")
    multi = [r for r in payload["runs"] if r["config"]["n_heads"] > 1 and r["config"].get("scaled", True)
             and r["config"].get("attention", "dot") == "dot"]
    single = family(payload, "h1")
    if single and multi:
        best = max(multi, key=lambda r: _mean(scores(r)))
        diff, where = _compare(single, best, noise)
        out.append(f"Table 3 (A): one head scores {diff:+.2f} test BLEU against the best multi-head sibling "
                   f"(h = {best['config']['n_heads']}), {where} — {_verdict(diff, where)} (the paper: −0.9).")
    else:
        out.append("Table 3 (A): not measured yet (h = 1 and a multi-head sibling must finish).")
    return out


def early_gradients(payload: dict, scaled: str, unscaled: str, kind: str = "encoder_self",
                    until: int = 200) -> str | None:
    """The mechanism in one sentence: mean ‖∇W^Q‖ over the first ``until`` steps, unscaled ÷ scaled."""
    a, b = family(payload, unscaled), family(payload, scaled)
    if not a or not b:
        return None

    def early(entry: dict) -> float:
        curves = entry["curves"][0]
        rows = [np.mean(v) for s, v in zip(curves["step"], curves[f"grad_wq.{kind}"]) if s <= until]
        return float(np.mean(rows))

    ratio = early(a) / early(b)
    return (f"In the first {until} steps the unscaled model's ‖∇W^Q‖ ({kind.replace('_', ' ')}, mean over layers) "
            f"was {ratio:.2g} × the scaled model's.")


# ------------------------------------------------------------------------------------------ the tab's views
FOOTNOTE4_RUNS = ("h8", "h8-unscaled", "h1", "h1-unscaled", "h1-additive")
STATS = ("entropy", "sharpness", "confidence", "eos", "previous")
NOT_YET = ("*The lab's runs are still training (`python -m model.lab train`); nothing is shipped in `assets/lab/` "
           "yet. This tab fills in as `python -m model.lab export` ships them.*")
CURVES_NOTE = ("What it shows: each sibling's validation loss (the shipped sample, teacher-forced), the gradient "
               "norm reaching W^Q and W^K, and the mean softmax entropy, recorded every 25 steps while it trained. "
               "What it does not: WMT-scale training, where the paper's effect was seen. ")
TIMELAPSE_NOTE = ("What it shows: the reference sibling's attention on this sentence, teacher-forced with its "
                  "reference translation, at log-spaced training steps from the untrained model (step 0) on. "
                  "What it does not: the shipped model's own history (it trained longer, on a longer schedule).")


def summary(lab) -> str:
    """The tab's opening: the verdicts, then Table 3 beside ours (or why there is nothing yet)."""
    payload = lab.runs_payload()
    if not payload["runs"]:
        return NOT_YET
    runs = payload["runs"]
    trained = "; ".join(r["label"] + (f" ({len(r['seeds'])} seeds)" if len(r["seeds"]) > 1 else "")
                        for r in runs)
    lines = [f"**{sum(len(r['seeds']) for r in runs)} runs of {len(runs)} siblings:** {trained}.",
             *(f"- {v}" for v in verdicts(payload))]
    return "\n".join(lines) + "\n\n### Table 3 (A) at our scale\n\n" + table_markdown(payload)


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
    """The chosen runs' curves for one kind of attention and one layer (0: their mean), with what they say."""
    payload = lab.runs_payload()
    if not payload["runs"]:
        raise ValueError("no lab run is shipped yet")
    kind = inputs.check_kind(kind)
    layer = _check_layer(layer, payload["runs"][0]["config"]["n_layers"], mean_ok=True)
    chosen = [r for r in payload["runs"] if r["name"] in check_names(lab, names)]
    if not chosen:
        raise ValueError("choose at least one run to draw")
    notes = [early_gradients(payload, s, u, kind) for s, u in (("h1", "h1-unscaled"), ("h8", "h8-unscaled"))]
    britz = ("Britz et al. (2017), newstest2013 BLEU at d = " + " / ".join(map(str, BRITZ_DIMS)) + ": dot product "
             + " / ".join(map(str, BRITZ_DOT)) + ", additive " + " / ".join(map(str, BRITZ_ADDITIVE)) + ".")
    text = " ".join([CURVES_NOTE, *(n for n in notes if n), britz])
    return finish_figure(curves_figure(chosen, kind, layer), "lab_curves"), text


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


def timelapse_plot(lab, example, kind, layer, head, step) -> tuple[Figure, str]:
    """One head of the reference sibling on a time-lapse sentence at one snapshot (``step``: its index)."""
    run, maps, queries, keys = lab.timelapse_maps(example, inputs.check_kind(kind))
    n_steps, n_layers, n_heads = maps.shape[:3]
    layer = _check_layer(layer, n_layers)
    head = inputs.whole_number(head, "head", 1, n_heads)
    i = inputs.whole_number(step, "snapshot", 0, n_steps - 1)
    steps = lab.records[run]["timelapse"]["steps"]
    w = maps[i, layer - 1, head - 1]
    title = f"step {steps[i]} of {steps[-1]} · {KIND_LABELS[kind]}, layer {layer}, head {head}"
    stats = lab.records[run]["timelapse"]["stats"][kind]
    role = role_name(kind, lab.records[run]["timelapse"]["roles"][kind][i][layer - 1][head - 1])
    caption = (f"{TIMELAPSE_NOTE} At step {steps[i]} this head's entropy over the shipped sample is "
               f"{stats['entropy'][i][layer - 1][head - 1]:.2f} nats and its role *{role}*.")
    figure = timelapse_figure(w, queries, keys, title, causal=kind == "decoder_self")
    return finish_figure(figure, f"timelapse_{kind}_L{layer}H{head}_step{steps[i]}"), caption


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

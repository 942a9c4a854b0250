"""The Lab tab's words and tables: the paper's Table 3 beside our siblings, and what the runs say.

Everything here is computed from the shipped records (``model.serving.lab.Lab.runs_payload()``), never written
by hand: a verdict sentence compares two siblings' test BLEU against the seed noise measured in the same lab,
so it says "does not reproduce" when that is what the numbers say. Gradio-free.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

# Table 3 of the paper (newstest2013, En→De, beam 4): (h, d_k, PPL, BLEU). Row (A) keeps the compute constant.
PAPER_BASE = (8, 64, 4.92, 25.8)
PAPER_A = ((1, 512, 5.29, 24.9), (4, 128, 5.00, 25.5), (16, 32, 4.91, 25.8), (32, 16, 5.01, 25.4))
PAPER_B = ((8, 16, 5.16, 25.1), (8, 32, 5.01, 25.4))
# Britz et al. 2017, newstest2013 BLEU at attention dimension 128 / 256 / 512 / 1024.
BRITZ_DIMS = (128, 256, 512, 1024)
BRITZ_DOT = (22.03, 22.33, 21.78, 18.22)
BRITZ_ADDITIVE = (22.23, 22.33, 22.47, 22.10)
SCORE = "test_2016_flickr.beam4"  # what the verdicts compare: the reported score
SCALE_NOTE = ("Our scale: 29,000 Multi30k caption pairs, d_model = 192, six epochs on two CPU cores — not WMT's "
              "4.5 M sentence pairs, d_model = 512 and 100,000 steps on eight GPUs.")


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
        holds = diff < 0 and where.startswith("beyond")
        out.append(f"Footnote 4 at d_k = {d_k}: without 1/√d_k the test BLEU is {diff:+.2f} against the scaled "
                   f"model, {where} — {'the claim reproduces' if holds else 'the claim does not reproduce'} "
                   "at our scale.")
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
        holds = diff < 0 and where.startswith("beyond")
        out.append(f"Table 3 (A): one head scores {diff:+.2f} test BLEU against the best multi-head sibling "
                   f"(h = {best['config']['n_heads']}), {where} — "
                   f"{'the claim reproduces' if holds else 'the claim does not reproduce'} at our scale "
                   "(the paper: −0.9).")
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

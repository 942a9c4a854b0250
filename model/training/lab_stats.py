"""The lab's statistics, from the shipped translations: each run's test BLEU, each setting's mean ± sd over its
seeds, and per claim the difference between two settings with a 95 % interval and the verdict it supports.

The interval is a bootstrap over seeds × sentences (``bootstrap``; B = 1,000 resamples, ``numpy`` generator seeded
0, so the numbers are the same on every machine). Each resample draws the 1,000 test sentences with replacement —
one draw for both settings (paired: the same sentences are scored for both) — and, for each setting, as many seeds
as it has, with replacement; the setting's BLEU in that resample is the mean, over the drawn seeds, of corpus BLEU
on the drawn sentences (sacreBLEU's own per-sentence statistics, summed, then its corpus formula). The interval is
the 2.5th to 97.5th percentile of the difference. It holds both sources of chance a reviewer asks for: which seed
the training happened to use, and which sentences the test set happened to contain.

A verdict needs ``SEEDS_NEEDED`` seeds with translations on each side; before that it is "not decided yet", with
the provisional interval of the seeds there are. With them: "reproduces" when the whole interval lies on the side
the paper predicts, "the opposite" when it lies on the other, "inconclusive at this scale" when it holds 0.

Files (``assets/lab/``): ``translations/RUN.SPLIT.DECODING.de.gz`` (one hypothesis a line, the test set's order),
``references/test_2016_flickr.{en,de}.gz`` (Multi30k, shipped so that the app and anyone can recompute without
the data), and ``statistics.json`` (what ``statistics`` returns), which the Lab tab shows.
"""

from __future__ import annotations

import gzip
import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from model.training.lab_series import COLLAPSED, collapse_step

SPLIT = "test_2016_flickr"
DECODINGS = ("greedy", "beam4")
# How the translations are searched (``model.network.decode``); a run scored by another search is scored again at
# export (``model.training.lab_export.run_record``): before this rule beam 4 could return the empty translation.
SEARCH = "greedy and beam 4 (alpha 0.6), EOS barred at the first step"
VERDICT_DECODING = "beam4"  # the paper's decoding (§6.1): what the verdicts compare
SEEDS_NEEDED = 3
RESAMPLES = 1000
SEED_SUFFIX = re.compile(r"-seed(\d+)$")


def setting_of(run: str) -> str:
    """``h1-unscaled-seed3`` -> ``h1-unscaled``; a run without a seed suffix is seed 1 of its own setting."""
    return SEED_SUFFIX.sub("", run)


@dataclass(frozen=True)
class Claim:
    key: str
    title: str
    a: str  # the setting the claim is about ...
    b: str  # ... against this one
    expect: int  # the sign of BLEU(a) − BLEU(b) the paper predicts
    paper: str  # what the paper (or Britz et al.) says, in a sentence


CLAIMS: tuple[Claim, ...] = (
    Claim("footnote4_192", "Footnote 4 at d_k = 192", "h1-unscaled", "h1", -1,
          "without 1/√d_k the dot products grow large and push the softmax into regions of tiny gradient"),
    Claim("footnote4_24", "Footnote 4 at d_k = 24", "h8-unscaled", "h8", -1,
          "the same, at the shipped model's d_k"),
    Claim("additive_192", "Additive against unscaled dot-product attention at d_k = 192", "h1-additive",
          "h1-unscaled", +1, "additive attention outperforms dot products without scaling for larger d_k "
          "(Britz et al. at d = 1024: 22.10 against 18.22 BLEU)"),
    Claim("table3a_base", "Table 3 (A): one head against eight (the paper's base)", "h1", "h8", -1,
          "single-head attention is 0.9 BLEU worse than the best setting (24.9 against 25.8)"),
)
MULTI_HEAD = ("h2", "h4", "h8", "h16")  # Table 3 (A)'s other settings at our d_model: the best is also compared


def read_lines(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return f.read().splitlines()


def write_lines(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with gzip.GzipFile(tmp, "wb", mtime=0) as f:  # mtime 0: the same text gives the same bytes
        f.write(("\n".join(lines) + "\n").encode("utf-8"))
    tmp.replace(path)


def translation_file(folder: Path, run: str, decoding: str, split: str = SPLIT) -> Path:
    return folder / "translations" / f"{run}.{split}.{decoding}.de.gz"


def reference_file(folder: Path, lang: str = "de", split: str = SPLIT) -> Path:
    return folder / "references" / f"{split}.{lang}.gz"


def sentence_stats(hyps: list[str], refs: list[str]) -> np.ndarray:
    """(sentences, 10) int64: sacreBLEU's per-sentence statistics (hyp length, ref length, 4 × matches, 4 × totals)."""
    from sacrebleu.metrics import BLEU

    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} translations for {len(refs)} references")
    return np.asarray(BLEU()._extract_corpus_statistics(hyps, [refs]), dtype=np.int64)


def bleu_of(stats: np.ndarray) -> float:
    """Corpus BLEU (sacreBLEU's formula, its default exponential smoothing) of summed statistics (10,)."""
    from sacrebleu.metrics import BLEU

    return float(BLEU()._compute_score_from_stats(stats.tolist()).score)


def _bleu_rows(stats: np.ndarray) -> np.ndarray:
    return np.array([bleu_of(row) for row in stats])


def bootstrap(a: list[np.ndarray], b: list[np.ndarray], resamples: int = RESAMPLES, seed: int = 0) -> np.ndarray:
    """(resamples,) BLEU differences, mean over ``a``'s drawn seeds − mean over ``b``'s, over seeds × sentences.
    ``a``, ``b``: each seed's per-sentence statistics (sentences, 10), all over the same sentences."""
    rng = np.random.default_rng(seed)
    n = a[0].shape[0]
    counts = np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(resamples)])  # (B, n)
    picks_a = rng.integers(0, len(a), (resamples, len(a)))
    picks_b = rng.integers(0, len(b), (resamples, len(b)))
    bleu_a = np.stack([_bleu_rows(counts @ s) for s in a], axis=1)  # (B, seeds of a)
    bleu_b = np.stack([_bleu_rows(counts @ s) for s in b], axis=1)
    rows = np.arange(resamples)[:, None]
    return bleu_a[rows, picks_a].mean(1) - bleu_b[rows, picks_b].mean(1)


def verdict(expect: int, low: float, high: float, decided: bool) -> str:
    if not decided:
        return "not decided yet"
    if low <= 0 <= high:
        return "inconclusive at this scale"
    return "reproduces" if (low > 0) == (expect > 0) else "the opposite"


def _round(x: float) -> float:
    return round(float(x), 2)


def run_scores(folder: Path, runs: list[str]) -> dict[str, dict]:
    """run -> {decoding: BLEU, "stats": {decoding: (n, 10)}, "distinct": {decoding: distinct outputs}} for every
    run whose translations ship."""
    if not reference_file(folder).is_file():
        return {}  # no references shipped: nothing can be scored (every verdict says so)
    refs = read_lines(reference_file(folder))
    out = {}
    for run in runs:
        if not all(translation_file(folder, run, d).is_file() for d in DECODINGS):
            continue
        entry: dict = {"stats": {}, "distinct": {}, "most_common": {}}
        for d in DECODINGS:
            hyps = read_lines(translation_file(folder, run, d))
            entry["stats"][d] = sentence_stats(hyps, refs)
            entry[d] = _round(bleu_of(entry["stats"][d].sum(0)))
            entry["distinct"][d] = len(set(hyps))
            text, count = Counter(hyps).most_common(1)[0]
            entry["most_common"][d] = {"text": text, "count": count}
        out[run] = entry
    return out


def _setting_rows(scores: dict[str, dict], records: dict[str, dict]) -> dict[str, dict]:
    """setting -> its seeds (those with translations), their BLEU, mean ± sd, and where they trained."""
    settings: dict[str, dict] = {}
    for run, record in records.items():
        s = settings.setdefault(setting_of(run), {"runs": [], "seeds": [], "bleu": [], "devices": [],
                                                   "without_translations": []})
        if run not in scores:
            s["without_translations"].append(run)
            continue
        s["runs"].append(run)
        s["seeds"].append(record["seed"])
        s["bleu"].append(scores[run][VERDICT_DECODING])
        s["devices"] += [d for d in record.get("trained_on", ["cpu"]) if d not in s["devices"]]
    for s in settings.values():
        values = np.asarray(s["bleu"], dtype=np.float64)
        s["mean"] = _round(values.mean()) if len(values) else None
        s["sd"] = _round(values.std(ddof=1)) if len(values) >= 2 else None
    return settings


def _claim_row(claim: Claim, settings: dict, scores: dict, resamples: int) -> dict:
    a, b = settings.get(claim.a), settings.get(claim.b)
    row = {**asdict(claim), "decoding": VERDICT_DECODING, "seeds_needed": SEEDS_NEEDED}
    if not a or not b or not a["runs"] or not b["runs"]:
        missing = [n for n, s in ((claim.a, a), (claim.b, b)) if not s or not s["runs"]]
        return {**row, "verdict": "not decided yet", "why": f"no run of {' or '.join(missing)} ships translations"}
    diffs = bootstrap([scores[r]["stats"][VERDICT_DECODING] for r in a["runs"]],
                      [scores[r]["stats"][VERDICT_DECODING] for r in b["runs"]], resamples)
    low, high = np.percentile(diffs, [2.5, 97.5])
    short = [f"{n} has {len(s['runs'])} of {SEEDS_NEEDED} seeds" for n, s in ((claim.a, a), (claim.b, b))
             if len(s["runs"]) < SEEDS_NEEDED]
    devices = sorted(set(a["devices"]) | set(b["devices"]))
    return {**row, "seeds_a": a["seeds"], "seeds_b": b["seeds"], "difference": _round(a["mean"] - b["mean"]),
            "low": _round(low), "high": _round(high), "devices": devices,
            "verdict": verdict(claim.expect, low, high, not short),
            "why": ("; ".join(short) + " with translations (the rest are training)") if short else ""}


def statistics(folder: Path, records: dict[str, dict], resamples: int = RESAMPLES) -> dict:
    """Everything the Lab tab's verdicts show, from ``folder``'s translations and references (see the module)."""
    scores = run_scores(folder, list(records))
    settings = _setting_rows(scores, records)
    claims = [_claim_row(c, settings, scores, resamples) for c in CLAIMS]
    # Table 3 (A) against the best other h: picked after seeing the scores, which favours it
    multi = [n for n in MULTI_HEAD if n in settings and len(settings[n]["runs"]) > 0]
    best = max(multi, key=lambda n: settings[n]["mean"]) if multi else "h2, h4, h8 or h16"
    title = "Table 3 (A): one head against the best other h" + (
        f" (h = {best[1:]}, picked as the best by its mean)" if multi else "")
    row = _claim_row(Claim("table3a_best", title, "h1", best, -1, CLAIMS[3].paper), settings, scores, resamples)
    # the best is picked among every other h trained: not decided until each has its seeds with translations
    waiting = [f"{n} has {len(settings[n]['runs'])} of {SEEDS_NEEDED} seeds" for n in MULTI_HEAD
               if n in settings and n != best and len(settings[n]["runs"]) < SEEDS_NEEDED]
    if waiting:
        among = "the best h is picked among all of them: " + "; ".join(waiting) + " with translations"
        row |= {"verdict": "not decided yet", "why": "; ".join(filter(None, [row.get("why"), among]))
                + ("" if row.get("why") else " (the rest are training)")}
    claims.append(row)
    runs = {run: {d: s[d] for d in DECODINGS} | {"distinct": s["distinct"], "most_common": s["most_common"]}
            for run, s in scores.items()}
    return {"split": SPLIT, "decoding": VERDICT_DECODING, "resamples": resamples, "seeds_needed": SEEDS_NEEDED,
            "sentences": len(read_lines(reference_file(folder))) if scores else 0,
            "method": "bootstrap over seeds × sentences (paired sentences, seeds drawn with replacement)",
            "runs": runs, "settings": settings, "claims": claims, "collapse": collapses(records, runs)}


def collapses(records: dict[str, dict], runs: dict[str, dict]) -> dict[str, dict]:
    """run -> when its cross-attention became uniform for good (``lab_series.collapse_step``) and how many distinct
    test translations it writes, for every run that collapsed."""
    out = {}
    for name, record in records.items():
        series = record["timelapse"].get("series")
        if not series:
            continue
        steps = record["timelapse"]["steps"]
        step = collapse_step(steps, series["entropy_ratio"]["cross"])
        if step is None:
            continue
        i, scored = steps.index(step), runs.get(name, {})
        out[name] = {"step": step, "threshold": COLLAPSED, "seed": record["seed"], "setting": setting_of(name),
                     "cross_ratio": series["entropy_ratio"]["cross"][i], "last_step": steps[-1],
                     "distinct": scored.get("distinct"), "most_common": scored.get("most_common")}
    return out


def kept_reading(stats: dict, setting: str = "h8-unscaled") -> dict | None:
    """``setting``'s seeds with translations when none of them collapsed (``collapses``): how many, the fewest
    distinct test translations any writes (beam 4) and the claim comparing it (its difference); None where a seed
    collapsed or none has translations yet. Without 1/√d_k at d_k = 24 (h = 8) the model still reads the source."""
    runs = stats.get("settings", {}).get(setting, {}).get("runs", [])
    if not runs or any(stats.get("collapse", {}).get(run) for run in runs):
        return None
    claim = next((c for c in stats.get("claims", []) if c["a"] == setting and c["verdict"] != "not decided yet"), None)
    return {"seeds": len(runs), "distinct": min(stats["runs"][run]["distinct"][VERDICT_DECODING] for run in runs),
            "sentences": stats["sentences"], "claim": claim}


def kept_sentence(kept: dict) -> str:
    """What ``lab_stats.kept_reading`` found, in words (the README's and the Lab tab's)."""
    claim = kept["claim"]
    cost = (f"; it is {abs(claim['difference']):.2f} BLEU {'worse' if claim['difference'] < 0 else 'better'} than "
            f"with it (95 % interval [{claim['low']:+.2f}, {claim['high']:+.2f}])" if claim else "")
    return (f"in none of its {kept['seeds']} seeds does the cross-attention become uniform, and each writes at least "
            f"{kept['distinct']:,} distinct translations of the {kept['sentences']:,} test inputs{cost}")

"""Head ablation: switch heads off for one request and score the shipped sample with and without them.

A head is named ``"kind:layer:head"`` with a 1-based layer and head, e.g. ``"cross:6:2"`` (kinds as in
``KINDS``). Switching heads off builds a per-call head mask (3, N, h) for ``Translator``: the head's output
is zeroed before W^O for that call only; the shared model never changes (Michel et al. 2019 ablate heads the
same way at test time).

The sample (``assets/sample/``) is the first 200 pairs of Multi30k ``val`` (Elliott et al. 2016), so the app
needs nothing outside its folder. Scores are cased sacreBLEU BLEU and chrF of greedy translations, decoded in
padded batches sorted by length.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import sacrebleu

from model.network.inference import AttentionResult, Translator
from model.terms import KINDS

SAMPLE_DIR = Path(__file__).resolve().parents[2] / "assets" / "sample"
SAMPLE_SRC, SAMPLE_REF = "val200.en", "val200.de"
RANKING_FILE = SAMPLE_DIR.parent / "head_ranking.json"  # written by ``python -m model.rank_heads``
SAMPLE_STATS_FILE = SAMPLE_DIR.parent / "head_stats_sample.json"  # the same command
BATCH_SIZE = 50  # measured on 2 cores: 25, 50, 100, 200 per batch decode the 200 sentences in 10.1, 6.8, 8.8, 8.4 s
HEAD_FORMAT = "kind:layer:head"
Progress = Callable[[float, str], object]
# (padded batch of token-id lists, beam=, head_mask=) -> its translations: who decodes the sample
Decode = Callable[..., list[str]]


# ------------------------------------------------------------------------------------------------ head names
def parse_head(spec, n_layers: int, n_heads: int) -> tuple[str, int, int]:
    """``"kind:layer:head"`` (1-based) -> (kind, layer, head) 0-based, or a ValueError that says what is wrong
    (quoting at most the first 40 characters of what was sent)."""
    if not isinstance(spec, str):
        raise ValueError(f"a head must be a string {HEAD_FORMAT!r}, got {_json_cut(spec)}")
    shown = _cut(spec)
    parts = spec.strip().split(":")
    example = f"e.g. 'cross:{n_layers}:1'"
    if len(parts) != 3:
        raise ValueError(f"head {shown} is not {HEAD_FORMAT!r} ({example})")
    kind, layer, head = (p.strip() for p in parts)
    if kind not in KINDS:
        raise ValueError(f"head {shown}: unknown kind {_cut(kind)}; kinds are {', '.join(KINDS)}")
    if not (re.fullmatch(r"[0-9]+", layer) and re.fullmatch(r"[0-9]+", head)):
        raise ValueError(f"head {shown}: layer and head must be whole numbers ({example})")
    if not (1 <= int(layer) <= n_layers and 1 <= int(head) <= n_heads):
        raise ValueError(f"head {shown}: layers run 1–{n_layers} and heads 1–{n_heads} (1-based)")
    return kind, int(layer) - 1, int(head) - 1


def _cut(value, limit: int = 40) -> str:
    """``value`` as a message quotes it: its repr, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json_cut(value, limit: int = 40) -> str:
    """A value that is no string as a message quotes it: its JSON spelling (null, 3, [1]), cut to ``limit``."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = type(value).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_heads(specs, n_layers: int, n_heads: int) -> list[tuple[str, int, int]]:
    """A list of head names (or one string of them separated by commas or spaces) -> sorted unique 0-based
    (kind, layer, head) triples. None or an empty list: no head."""
    if specs is None:
        return []
    if isinstance(specs, str):
        specs = [s for s in re.split(r"[\s,]+", specs) if s]
    if not isinstance(specs, (list, tuple)):
        raise ValueError(f"heads must be a list of {HEAD_FORMAT!r} strings, got {_json_cut(specs)}")
    heads = {parse_head(s, n_layers, n_heads) for s in specs}
    return sorted(heads, key=lambda h: (KINDS.index(h[0]), h[1], h[2]))


def head_name(kind: str, layer: int, head: int) -> str:
    """0-based (kind, layer, head) -> ``"kind:layer:head"`` (1-based)."""
    return f"{kind}:{layer + 1}:{head + 1}"


def all_heads(n_layers: int, n_heads: int) -> list[str]:
    """Every head's name, in ``KINDS`` order, layer by layer."""
    return [head_name(k, layer, h) for k in KINDS for layer in range(n_layers) for h in range(n_heads)]


def head_mask(heads: Iterable[tuple[str, int, int]], n_layers: int, n_heads: int) -> np.ndarray | None:
    """(3, N, h) float32 mask, 0 at each 0-based head of ``heads`` and 1 elsewhere; None when no head is off."""
    heads = list(heads)
    if not heads:
        return None
    mask = np.ones((len(KINDS), n_layers, n_heads), dtype=np.float32)
    for kind, layer, head in heads:
        mask[KINDS.index(kind), layer, head] = 0.0
    return mask


# --------------------------------------------------------------------------------------------------- sample
@dataclass(frozen=True)
class Sample:
    """Parallel sentences to score on; ``name`` says where they come from."""

    sources: tuple[str, ...]
    references: tuple[str, ...]
    name: str = ""

    def __post_init__(self) -> None:
        if len(self.sources) != len(self.references) or not self.sources:
            raise ValueError(f"a sample needs as many references as sources, at least one: "
                             f"{len(self.sources)} and {len(self.references)}")

    def head(self, n: int) -> Sample:
        """The first ``n`` pairs."""
        if n < 1:
            raise ValueError(f"a sample needs at least one sentence, not {n}")
        return Sample(self.sources[:n], self.references[:n], f"{self.name}[:{n}]")


def load_sample(folder: str | Path = SAMPLE_DIR) -> Sample:
    """The shipped sample: ``val200.en`` and ``val200.de``, one sentence a line."""
    folder = Path(folder)
    src = (folder / SAMPLE_SRC).read_text(encoding="utf-8").splitlines()
    ref = (folder / SAMPLE_REF).read_text(encoding="utf-8").splitlines()
    return Sample(tuple(src), tuple(ref), f"{folder.name}/{SAMPLE_SRC}")


# ---------------------------------------------------------------------------------------------------- scores
@dataclass(frozen=True)
class SampleScore:
    """Corpus BLEU and chrF (cased sacreBLEU) of greedy translations of a sample."""

    bleu: float
    chrf: float
    sentences: int
    bleu_signature: str
    chrf_signature: str
    hypotheses: tuple[str, ...] = field(repr=False)

    def to_json_dict(self) -> dict:
        return {"bleu": round(float(self.bleu), 2), "chrf": round(float(self.chrf), 2), "sentences": self.sentences}


def score(hypotheses: Sequence[str], references: Sequence[str]) -> SampleScore:
    """sacreBLEU's corpus BLEU and chrF, default (cased, 13a) settings."""
    refs = [list(references)]
    bleu, chrf = sacrebleu.metrics.BLEU(), sacrebleu.metrics.CHRF()
    return SampleScore(
        bleu=bleu.corpus_score(list(hypotheses), refs).score,
        chrf=chrf.corpus_score(list(hypotheses), refs).score,
        sentences=len(hypotheses),
        bleu_signature=str(bleu.get_signature()),
        chrf_signature=str(chrf.get_signature()),
        hypotheses=tuple(hypotheses),
    )


def score_sample(
    translator: Translator,
    sample: Sample,
    mask: np.ndarray | None = None,
    progress: Progress | None = None,
    batch_size: int = BATCH_SIZE,
    decode: Decode | None = None,
) -> SampleScore:
    """Greedy translations of the sample (shortest first, padded batches) with ``mask``, scored. ``decode``: who
    translates each padded batch (default ``translator.translate_batch``; the app's: its crowd lane)."""
    decode = decode or translator.translate_batch
    ids = [translator.token_ids(s) for s in sample.sources]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    hyps = [""] * len(ids)
    for start in range(0, len(order), batch_size):
        if progress is not None:
            progress(start / len(order), f"translating the sample: {start} of {len(order)} sentences")
        idx = order[start : start + batch_size]
        for i, hyp in zip(idx, decode([ids[i] for i in idx], beam=1, head_mask=mask)):
            hyps[i] = hyp
    if progress is not None:
        progress(1.0, f"translated {len(order)} sentences")
    return score(hyps, sample.references)


_BASELINES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> {Sample: SampleScore}
_BASELINE_LOCK = threading.Lock()


def baseline_score(translator: Translator, sample: Sample, progress: Progress | None = None,
                   decode: Decode | None = None) -> SampleScore:
    """The sample's score with every head on, computed once per model and sample (``decode``: ``score_sample``)."""
    with _BASELINE_LOCK:  # concurrent first callers wait for one run instead of each decoding the sample
        per_model = _BASELINES.setdefault(translator.model, {})
        if sample not in per_model:
            per_model[sample] = score_sample(translator, sample, None, progress, decode=decode)
        return per_model[sample]


# -------------------------------------------------------------------------------------------------- ablation
@dataclass
class AblationResult:
    """One request: the sentence with and without the heads, and the sample's scores with and without them."""

    heads_off: list[str]
    translation_before: str
    attention: AttentionResult  # the sentence with the heads off (maps of ablated heads: where they would look)
    before: SampleScore
    after: SampleScore
    note: str = ""  # where the sample ran, when that is worth a line (a lent GPU, or the CPU when it was refused)

    def to_json_dict(self, digits: int = 4) -> dict:
        r = self.attention
        sample = {
            "before": self.before.to_json_dict(),
            "after": self.after.to_json_dict(),
            "decoding": "greedy",
            "bleu_signature": self.before.bleu_signature,
            "chrf_signature": self.before.chrf_signature,
        }
        return {
            "heads_off": self.heads_off,
            "translation": r.translation,
            "translation_before": self.translation_before,
            "source_tokens": r.source_tokens,
            "target_tokens": r.target_tokens,
            "shapes": {k: list(r.maps(k).shape) for k in KINDS},
            **{k: np.round(r.maps(k).astype(np.float64), digits).tolist() for k in KINDS},
            "sample": {**sample, "note": self.note} if self.note else sample,
        }


def sample_scores(translator: Translator, sample: Sample, mask: np.ndarray | None, progress: Progress | None = None,
                  decode: Decode | None = None) -> tuple[SampleScore, SampleScore, str]:
    """The sample's score with every head on (computed once per model and sample) and with ``mask``'s heads off; no
    note (``Scores``; ``decode``: ``score_sample``)."""
    before = baseline_score(translator, sample, _part(progress, 0.0, 0.5 if mask is not None else 1.0, "every head"),
                            decode)
    after = before if mask is None else score_sample(translator, sample, mask, _part(progress, 0.5, 1.0, "heads off"),
                                                     decode=decode)
    return before, after, ""


# (mask, progress) -> (every head on, heads off, a line saying where they ran or ""): who scores the sample
Scores = Callable[[np.ndarray | None, Progress | None], tuple[SampleScore, SampleScore, str]]


def ablate(
    translator: Translator,
    text: str,
    heads_off,
    sample: Sample | None = None,
    progress: Progress | None = None,
    scores: Scores | None = None,
    decode: Decode | None = None,
) -> AblationResult:
    """``text`` translated (greedy) and its maps with ``heads_off`` switched off for this call, and the sample's
    BLEU/chrF with every head on (cached) and with those heads off. ``progress(fraction, message)`` is called
    as the sample is decoded (``gr.Progress`` fits). Bad head names or text raise ValueError. ``scores``: who scores
    the sample (default ``sample_scores`` on ``translator``, its batches decoded by ``decode``: ``score_sample``; on
    ZeroGPU, ``model.serving.zerogpu.LentGPU.scores``)."""
    cfg = translator.cfg
    heads = parse_heads(heads_off, cfg.n_layers, cfg.n_heads)
    mask = head_mask(heads, cfg.n_layers, cfg.n_heads)
    result = translator.attention(text, head_mask=mask)
    before_text = result.translation if mask is None else translator.translate(text, beam=1)
    if scores is None:
        sample = sample or load_sample()
        before, after, note = sample_scores(translator, sample, mask, progress, decode)
    else:
        before, after, note = scores(mask, progress)
    return AblationResult([head_name(*h) for h in heads], before_text, result, before, after, note)


def _part(progress: Progress | None, lo: float, hi: float, label: str) -> Progress | None:
    """A progress callback for the stretch lo..hi of the whole request, its messages headed by ``label``."""
    if progress is None:
        return None
    return lambda fraction, message: progress(lo + (hi - lo) * fraction, f"{label}: {message}")


# --------------------------------------------------------------------------------------------------- ranking
def file_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load_ranking(path: str | Path = RANKING_FILE) -> dict | None:
    """The ranking ``python -m model.rank_heads`` wrote, or None when there is none."""
    path = Path(path)
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def rank_heads(translator: Translator, sample: Sample, progress: Progress | None = None) -> dict:
    """For every head, the sample's BLEU and chrF without it alone; sorted by the BLEU lost (most first)."""
    cfg = translator.cfg
    base = score_sample(translator, sample)
    names = all_heads(cfg.n_layers, cfg.n_heads)
    rows = []
    for i, name in enumerate(names):
        if progress is not None:
            progress(i / len(names), f"{i + 1} of {len(names)}: {name}")
        mask = head_mask(parse_heads([name], cfg.n_layers, cfg.n_heads), cfg.n_layers, cfg.n_heads)
        s = score_sample(translator, sample, mask)
        rows.append({
            "head": name,
            "bleu": round(s.bleu, 2),
            "chrf": round(s.chrf, 2),
            "bleu_loss": round(base.bleu - s.bleu, 2),
            "chrf_loss": round(base.chrf - s.chrf, 2),
        })
    rows.sort(key=lambda r: (-r["bleu_loss"], -r["chrf_loss"], names.index(r["head"])))
    return {
        "baseline": {"bleu": round(base.bleu, 2), "chrf": round(base.chrf, 2)},
        "bleu_signature": base.bleu_signature,
        "chrf_signature": base.chrf_signature,
        "decoding": f"greedy, padded batches of {BATCH_SIZE} sorted by source length",
        "heads": rows,
    }

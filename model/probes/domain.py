"""How far a sentence is from what the model was trained on (29,000 Multi30k image captions), by a rule read off the
model, its tokenizer and its training data, so that the app can say so beside a translation.

A sentence is **far from the captions** when any of three signs says so (each threshold is in the model folder's
``DOMAIN.json``, written by ``python -m model.domain`` from the training and validation splits, ``Calibration``):

- **long**: more English pieces (SentencePiece tokens, EOS not counted) than ``long_pieces``, the 99th percentile of
  the training captions' lengths;
- **rare pieces**: at least ``rare_min`` of its pieces are rare — seen fewer than ``rare_seen`` times on the English
  side of the training split (byte pieces, spelling a character the tokenizer never saw, count as rare) — and they
  are more than ``rare_share`` of its pieces, the 99th percentile of that share over the validation captions;
- **low confidence**: the model's own greedy translation has a mean log-probability per token (its tokens and EOS,
  by one teacher-forced pass) below ``low_confidence``, the 1st percentile over the validation captions.

Over the validation captions the rule flags ``val_flagged`` of them (a caption-like sentence rarely gets the notice).
Nothing here knows the UI. Notation: B sentences, T decoder positions, V vocabulary.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from model.network.decode import padded
from model.network.inference import AttentionResult, Translator

DOMAIN_FILE = "DOMAIN.json"
RARE_SEEN = 5  # a piece seen fewer times than this in the training captions' English is rare
RARE_MIN = 2  # and a sentence needs at least this many rare pieces for "many rare pieces"


@dataclass(frozen=True)
class Calibration:
    """The rule's thresholds (see the module doc) and what they were measured on."""

    long_pieces: int
    rare_seen: int
    rare_min: int
    rare_share: float
    low_confidence: float  # mean log-probability per token (nats)
    val_flagged: float  # share of the validation captions the rule flags
    train_sentences: int
    val_sentences: int
    english_counts: list[int]  # (V,) how often each piece occurs on the English side of the training split

    def save(self, folder: str | Path) -> Path:
        path = Path(folder) / DOMAIN_FILE
        path.write_text(json.dumps(asdict(self), separators=(",", ":")) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, folder: str | Path) -> Calibration | None:
        """The model folder's calibration, or None where it has none (a model not calibrated: no notice)."""
        path = Path(folder) / DOMAIN_FILE
        if not path.is_file():
            return None
        return cls(**json.loads(path.read_text(encoding="utf-8")))


@dataclass(frozen=True)
class DomainCheck:
    """One sentence against the rule: its measures and the signs that fired (empty: near the captions)."""

    pieces: int
    rare_pieces: tuple[str, ...]  # as the model reads them
    confidence: float  # mean log-probability per token of the model's own translation (nats)
    signs: tuple[str, ...]  # of "long", "rare", "unsure", in that order

    @property
    def far(self) -> bool:
        return bool(self.signs)

    @property
    def mean_probability(self) -> float:
        """exp(confidence): the geometric mean of the probabilities the model gave its own tokens."""
        return math.exp(self.confidence)


def rare_ids(cal: Calibration, ids: Sequence[int], is_byte: Sequence[bool]) -> list[int]:
    """Positions of ``ids`` (EOS excluded) that are rare: seen fewer than ``rare_seen`` times, or a byte piece."""
    counts = cal.english_counts
    return [j for j, (i, byte) in enumerate(zip(ids, is_byte)) if byte or counts[i] < cal.rare_seen]


def signs(cal: Calibration, pieces: int, rare: int, confidence: float) -> tuple[str, ...]:
    """The rule itself: which of the three signs a sentence shows."""
    out = []
    if pieces > cal.long_pieces:
        out.append("long")
    if rare >= cal.rare_min and rare / max(pieces, 1) > cal.rare_share:
        out.append("rare")
    if confidence < cal.low_confidence:
        out.append("unsure")
    return tuple(out)


@torch.inference_mode()
def confidences(translator: Translator, sources: Sequence[Sequence[int]],
                outputs: Sequence[Sequence[int]]) -> list[float]:
    """Mean log-probability per token that the model gives each output (its tokens, then EOS) given its source
    (ids with EOS last): one padded teacher-forced pass."""
    cfg, model, dev = translator.cfg, translator.model, translator.device
    wanted = [list(out) + [cfg.eos_id] for out in outputs]  # what each decoder row predicts
    src = padded([list(s) for s in sources], cfg.pad_id, dev)  # (B, S)
    tgt_in = padded([[cfg.bos_id] + w[:-1] for w in wanted], cfg.pad_id, dev)  # (B, T)
    logp = torch.log_softmax(model(src, tgt_in).float(), dim=-1)  # (B, T, V)
    target = padded(wanted, cfg.pad_id, dev)  # (B, T)
    got = logp.gather(-1, target[..., None])[..., 0]  # (B, T)
    return [float(got[b, : len(w)].mean()) for b, w in enumerate(wanted)]


def check(translator: Translator, cal: Calibration, result: AttentionResult) -> DomainCheck:
    """``result`` (the model's own greedy run, ``Translator.attention``) against the rule."""
    if result.teacher_forced:
        raise ValueError("the domain check reads the model's own translation, not a given one")
    tok = translator.tokenizer
    _, src_ids, _ = translator.encode_input(result.source_text)
    ids = src_ids[:-1]  # without EOS
    rare = rare_ids(cal, ids, [tok.sp.IsByte(i) for i in ids])
    confidence = confidences(translator, [src_ids], [result.target_ids])[0]
    return DomainCheck(pieces=len(ids), rare_pieces=tuple(result.source_tokens[j] for j in rare),
                       confidence=confidence, signs=signs(cal, len(ids), len(rare), confidence))


def flagged_share(cal: Calibration, pieces: Sequence[int], rare: Sequence[int], conf: Sequence[float]) -> float:
    """The share of sentences (their pieces, rare pieces and confidences) the rule flags."""
    hits = [bool(signs(cal, p, r, c)) for p, r, c in zip(pieces, rare, conf)]
    return float(np.mean(hits)) if hits else 0.0

"""What each head does: per-head statistics, a role label per head, and attention rollout.

L - layers, H - heads, Q - query rows, K - key columns, S - source tokens, T - decoder positions.
A stack of maps is (L, H, Q, K) with rows summing to 1, as ``AttentionResult`` holds them.

Statistics, for one row i of one head (weights w_ij over the keys j that row can see):

    entropy      -sum_j w_ij log w_ij, in nats
    spread       entropy / log(number of visible keys): 0 = all on one key, 1 = uniform
    confidence   max_j w_ij, the largest weight
    eos          weight on the special key: the source's EOS </s> (encoder and cross); in decoder
                 self-attention, whose keys hold no EOS, the BOS <s> every row can see
    punctuation  weight on punctuation pieces (every character a Unicode P* character: . , ! ? ...)
    previous     w_i,i-1    (self-attention only; rows i >= 1)
    self         w_i,i      (self-attention only)
    next         w_i,i+1    (encoder self-attention only: the decoder cannot look ahead)
    offset       sum_j w_ij (j - i), the mean offset of the attended key (self-attention only):
                 -1 previous token, 0 itself, +1 next token
    sharpness    max over non-special keys j of w_ij: how much of the row goes to its single best real
                 token; for cross-attention, how sharp the alignment to one source token is

A head's value is the mean over rows, pooled over every sentence (row-weighted). Rows of the decoder's
self-attention that see only one key (row 0: <s> sees itself) carry no choice and are left out.
"""

from __future__ import annotations

import json
import threading
import unicodedata
import weakref
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from model.network.checkpoint import WEIGHTS_FILE
from model.network.inference import AttentionResult, Encoded, Translator
from model.probes.ablation import SAMPLE_STATS_FILE, Sample, file_sha256, load_sample
from model.terms import BOS_PIECE, EOS_PIECE, KINDS, WORD_MARKER

STATS = ("entropy", "spread", "confidence", "eos", "punctuation", "previous", "self", "next", "offset", "sharpness")
STAT_LABELS = {
    "entropy": "entropy (nats)",
    "spread": "spread: entropy ÷ log(visible keys)",
    "confidence": "confidence: largest weight",
    "eos": "weight on EOS (decoder self: on <s>)",
    "punctuation": "weight on punctuation",
    "previous": "weight on the previous token",
    "self": "weight on the token itself",
    "next": "weight on the next token",
    "offset": "mean offset of the attended key (j − i)",
    "sharpness": "largest weight on a non-EOS key",
}
SELF_ONLY = frozenset({"previous", "self", "offset"})  # need queries and keys from one sequence
SPECIAL_PIECES = frozenset({BOS_PIECE, EOS_PIECE})
Progress = Callable[[float, str], object]


def is_punctuation(piece: str) -> bool:
    """A piece whose every character (word marker aside) is Unicode punctuation: ".", ",", "▁(", "!?"."""
    text = piece.replace(WORD_MARKER, "")
    return bool(text) and piece not in SPECIAL_PIECES and all(unicodedata.category(c).startswith("P") for c in text)


def applies(kind: str, stat: str) -> bool:
    """Whether ``stat`` is defined for ``kind`` (see the module docstring)."""
    if stat in SELF_ONLY:
        return kind != "cross"
    if stat == "next":
        return kind == "encoder_self"
    return True


def _row_values(w: np.ndarray, kind: str, query_tokens: Sequence[str], key_tokens: Sequence[str]) -> dict:
    """stat -> (values (L, H, Q), valid rows (Q,) bool), for one kind's maps ``w`` (L, H, Q, K) float64."""
    n_q, n_k = w.shape[-2:]
    rows = np.arange(n_q)
    visible = np.tril(np.ones((n_q, n_k), bool)) if kind == "decoder_self" else np.ones((n_q, n_k), bool)
    n_visible = visible.sum(-1)  # (Q,)
    valid = n_visible >= 2  # a row that sees one key has no choice to measure
    special = np.array([t in SPECIAL_PIECES for t in key_tokens])  # (K,)
    punct = np.array([is_punctuation(t) for t in key_tokens])  # (K,)

    logs = np.log(np.where(w > 0, w, 1.0))  # (L, H, Q, K), 0 · log 0 = 0
    entropy = -(w * logs).sum(-1)  # (L, H, Q)
    values = {
        "entropy": (entropy, valid),
        "spread": (entropy / np.log(np.maximum(n_visible, 2)), valid),
        "confidence": (w.max(-1), valid),
        "eos": (w[..., special].sum(-1), valid),
        "punctuation": (w[..., punct].sum(-1), valid),
        "sharpness": (w[..., ~special].max(-1) if (~special).any() else np.zeros_like(entropy),
                      valid & (~special).any()),
    }
    if applies(kind, "self"):
        values["self"] = (w[..., rows, rows], valid)
        values["previous"] = (w[..., rows, rows - 1], valid & (rows >= 1))  # row 0's "previous" is masked out
        values["offset"] = ((w * (np.arange(n_k)[None, :] - rows[:, None])).sum(-1), valid)
    if applies(kind, "next"):
        nxt = np.minimum(rows + 1, n_k - 1)
        values["next"] = (w[..., rows, nxt], valid & (rows + 1 < n_k))
    return values


@dataclass
class HeadStats:
    """Per-head statistics pooled over the rows of one or more sentences.

    ``sums[kind][stat]`` (L, H) sums a statistic over the rows counted in ``counts[kind][stat]``; the mean
    (``mean``) is their ratio, NaN where the statistic does not apply or no row was counted.
    """

    n_layers: int
    n_heads: int
    sums: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    sentences: int = 0

    def __post_init__(self) -> None:
        for kind in KINDS:
            self.sums.setdefault(kind, {s: np.zeros((self.n_layers, self.n_heads)) for s in STATS})
            self.counts.setdefault(kind, {s: 0 for s in STATS})

    def add_maps(self, kind: str, weights, query_tokens: Sequence[str], key_tokens: Sequence[str]) -> None:
        """Pool the rows of one sentence's ``kind`` maps (L, H, Q, K) into the sums."""
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (self.n_layers, self.n_heads, len(query_tokens), len(key_tokens)):
            raise ValueError(
                f"{kind} maps have shape {w.shape}, expected (L, H, Q, K) = "
                f"({self.n_layers}, {self.n_heads}, {len(query_tokens)}, {len(key_tokens)})"
            )
        for stat, (values, valid) in _row_values(w, kind, query_tokens, key_tokens).items():
            self.sums[kind][stat] += values[..., valid].sum(-1)
            self.counts[kind][stat] += int(valid.sum())

    def add_result(self, result: AttentionResult) -> None:
        """Pool every kind of one sentence's maps."""
        for kind in KINDS:
            self.add_maps(kind, result.maps(kind), *result.tokens(kind))
        self.sentences += 1

    def mean(self, kind: str, stat: str) -> np.ndarray:
        """(L, H) float64 mean over the pooled rows; NaN where nothing was counted."""
        if kind not in KINDS or stat not in STATS:
            raise ValueError(f"unknown kind or statistic {kind!r}/{stat!r}; kinds {KINDS}, statistics {STATS}")
        count = self.counts[kind][stat]
        if count == 0:
            return np.full((self.n_layers, self.n_heads), np.nan)
        return self.sums[kind][stat] / count

    def roles(self, thresholds: RoleThresholds | None = None) -> dict[str, list[list[str]]]:
        """kind -> L × H role labels (``role_of``)."""
        th = thresholds or ROLE_THRESHOLDS
        means = {kind: {stat: self.mean(kind, stat) for stat in STATS} for kind in KINDS}
        return {
            kind: [
                [role_of(kind, {s: float(m[layer, head]) for s, m in means[kind].items()}, th)
                 for head in range(self.n_heads)]
                for layer in range(self.n_layers)
            ]
            for kind in KINDS
        }

    def to_json_dict(self, digits: int = 4) -> dict:
        """Per kind, an L × H array per statistic (null where it does not apply) and the role labels."""
        return {
            "sentences": self.sentences,
            "layers": self.n_layers,
            "heads": self.n_heads,
            "stats": {kind: {stat: _rounded(self.mean(kind, stat), digits) for stat in STATS} for kind in KINDS},
            "roles": self.roles(),
            "thresholds": asdict(ROLE_THRESHOLDS),
        }


def _rounded(arr: np.ndarray, digits: int) -> list:
    """float64 first (float32 rounds to 0.01686999946832657), NaN -> None."""
    out = np.round(np.asarray(arr, dtype=np.float64), digits)
    return [[None if np.isnan(v) else float(v) for v in row] for row in out]


def sentence_stats(result: AttentionResult) -> HeadStats:
    """Per-head statistics of one sentence's maps."""
    n_layers, n_heads = result.encoder_self.shape[:2]
    stats = HeadStats(n_layers, n_heads)
    stats.add_result(result)
    return stats


# ---------------------------------------------------------------------------------------------------- roles
@dataclass(frozen=True)
class RoleThresholds:
    """The role rule's thresholds, in one place (the page's rule text is written from these numbers)."""

    # A Multi30k row sees ~16 keys, so chance puts ~6% on any one of them: 40% on one relative position is
    # a clear specialisation, though below the "majority" of the literature's pruned 512-wide models.
    eos_sink: float = 0.4  # eos >= this: EOS-sink (decoder self-attention: start-sink)
    previous: float = 0.4  # previous >= this: previous-token
    next: float = 0.4  # next >= this: next-token
    self: float = 0.4  # self >= this: self
    punctuation: float = 0.3  # punctuation >= this: punctuation
    alignment: float = 0.5  # cross-attention sharpness >= this: alignment
    broad: float = 0.75  # spread >= this: broad


ROLE_THRESHOLDS = RoleThresholds()
EOS_SINK, START_SINK = "EOS-sink", "start-sink"  # most weight on </s>; in decoder self-attention, on <s>
ROLES = (EOS_SINK, START_SINK, "previous-token", "next-token", "self", "punctuation", "alignment", "broad", "mixed")
NO_DATA = "no data"


def role_of(kind: str, means: dict[str, float], th: RoleThresholds = ROLE_THRESHOLDS) -> str:
    """The first rule of ``role_rule_markdown`` that a head's mean statistics meet."""

    def at_least(stat: str, threshold: float) -> bool:
        value = means.get(stat, float("nan"))
        return not np.isnan(value) and value >= threshold

    if np.isnan(means.get("eos", float("nan"))):
        return NO_DATA
    rules = (
        (START_SINK if kind == "decoder_self" else EOS_SINK, at_least("eos", th.eos_sink)),
        ("previous-token", at_least("previous", th.previous)),
        ("next-token", at_least("next", th.next)),
        ("self", at_least("self", th.self)),
        ("punctuation", at_least("punctuation", th.punctuation)),
        ("alignment", kind == "cross" and at_least("sharpness", th.alignment)),
        ("broad", at_least("spread", th.broad)),
    )
    return next((role for role, met in rules if met), "mixed")


def role_name(kind: str, role: str) -> str:
    """A role as ``role_of`` names it now: records written before the start-sink had its name (the lab's
    time-lapse) call a decoder self-attention head on ``<s>`` an EOS-sink."""
    return START_SINK if kind == "decoder_self" and role == EOS_SINK else role


def role_rule_markdown(th: RoleThresholds = ROLE_THRESHOLDS) -> str:
    """The rule ``role_of`` applies, as Markdown for the page (numbers from ``th``)."""
    return "\n".join([
        "A head gets the **first** role whose condition its mean statistics meet (means over the rows of the "
        "sentence, or of all the sample's sentences):",
        "",
        f"1. **EOS-sink**: at least {th.eos_sink:.0%} of its weight on EOS `</s>`; in decoder self-attention, "
        "whose keys hold no EOS, on the start token `<s>`, the one special key every row sees: a **start-sink**. "
        "A no-op head parks its attention there (Clark et al. 2019).",
        f"2. **previous-token**: at least {th.previous:.0%} on the token just before the query (self-attention).",
        f"3. **next-token**: at least {th.next:.0%} on the token just after it (encoder self-attention).",
        f"4. **self**: at least {th.self:.0%} on the query token itself (self-attention).",
        f"5. **punctuation**: at least {th.punctuation:.0%} on punctuation tokens.",
        f"6. **alignment**: cross-attention whose largest weight on a real (non-EOS) source token is at least "
        f"{th.alignment:.0%} on average: each output position looks at one source token.",
        f"7. **broad**: spread (entropy ÷ log of the keys a row sees; 1 = uniform) at least {th.broad:.2f}.",
        "8. **mixed**: none of these.",
    ])


# --------------------------------------------------------------------------------------- the shipped sample
def sample_stats(
    translator: Translator, sources: Sequence[str], batch_size: int = 50, progress: Progress | None = None
) -> HeadStats:
    """Per-head statistics pooled over the greedy translations of ``sources`` (batched, shortest first)."""
    ids = sorted((translator.token_ids(s) for s in sources), key=len)
    stats = HeadStats(translator.cfg.n_layers, translator.cfg.n_heads)
    for start in range(0, len(ids), batch_size):
        if progress is not None:
            progress(start / len(ids), f"head statistics: sentence {start + 1} of {len(ids)}")
        for result in translator.attention_batch([Encoded(row) for row in ids[start : start + batch_size]]):
            stats.add_result(result)
    return stats


def stats_file_record(stats: HeadStats, weights_sha256: str, sample: Sample) -> dict:
    """What ``python -m model.rank_heads`` writes to ``SAMPLE_STATS_FILE``: the statistics and what they are of."""
    return {"model_weights_sha256": weights_sha256, "sample": sample.name, **stats.to_json_dict()}


def stats_from_record(record: dict) -> HeadStats:
    """A ``HeadStats`` holding the means of a ``stats_file_record`` (rounded as stored)."""
    stats = HeadStats(record["layers"], record["heads"], sentences=record["sentences"])
    for kind in KINDS:
        for stat in STATS:
            mean = np.array(record["stats"][kind][stat], dtype=np.float64)  # None -> NaN
            if not np.isnan(mean).all():
                stats.sums[kind][stat], stats.counts[kind][stat] = mean, 1
    return stats


_SAMPLE_STATS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> {Sample: HeadStats}
_SAMPLE_LOCK = threading.Lock()


def sample_head_stats(
    translator: Translator, sample: Sample | None = None, progress: Progress | None = None,
    path: str | Path = SAMPLE_STATS_FILE,
) -> HeadStats:
    """The sample's statistics: from ``path`` when it was written for these weights and this sample, else
    computed once per model and sample (~8 s on 2 busy cores; concurrent first callers wait for the one run)."""
    sample = sample or load_sample()
    with _SAMPLE_LOCK:
        per_model = _SAMPLE_STATS.setdefault(translator.model, {})
        if sample not in per_model:
            per_model[sample] = _stats_from_file(path, translator, sample) or sample_stats(
                translator, sample.sources, progress=progress)
        return per_model[sample]


def _stats_from_file(path: str | Path, translator: Translator, sample: Sample) -> HeadStats | None:
    path = Path(path)
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    weights = Path(translator.folder) / WEIGHTS_FILE
    if record.get("sample") != sample.name or record.get("model_weights_sha256") != file_sha256(weights):
        return None
    return stats_from_record(record)


# -------------------------------------------------------------------------------------------------- rollout
def rollout(encoder_self) -> np.ndarray:
    """Attention rollout of the encoder (Abnar & Zuidema 2020): (L, H, S, S) -> (L, S, S).

    Per layer the heads' mean A_l plus the residual connection, Â_l = 0.5·A_l + 0.5·I with rows renormalised;
    rollout to layer l is R_l = Â_l · Â_(l-1) ··· Â_1. Row i of R_l: how much each input token flows into
    position i's output of layer l.
    """
    a = np.asarray(encoder_self, dtype=np.float64)
    if a.ndim != 4 or a.shape[2] != a.shape[3]:
        raise ValueError(f"encoder self-attention must have shape (L, H, S, S), got {a.shape}")
    eye = np.eye(a.shape[2])
    a_hat = 0.5 * a.mean(axis=1) + 0.5 * eye  # (L, S, S)
    a_hat /= a_hat.sum(-1, keepdims=True)
    out = np.empty_like(a_hat)
    joint = eye
    for layer in range(a_hat.shape[0]):
        joint = a_hat[layer] @ joint
        out[layer] = joint
    return out


def source_relevance(cross, encoder_rollout) -> np.ndarray:
    """Cross-attention composed with the encoder's rollout: (L, H, T, S), (L_enc, S, S) -> (L, T, S).

    Decoder layer l's mean cross-attention over heads (T, S) times the top encoder layer's rollout (S, S):
    how much each *input* token (not encoder output position) reaches each decoder position through layer l.
    Rows still sum to 1. (The decoder's own self-attention mixing is not rolled out here.)
    """
    c = np.asarray(cross, dtype=np.float64)
    r = np.asarray(encoder_rollout, dtype=np.float64)
    if c.ndim != 4 or r.ndim != 3 or c.shape[3] != r.shape[2]:
        raise ValueError(f"cross (L, H, T, S) and rollout (L, S, S) do not fit: {c.shape}, {r.shape}")
    return c.mean(axis=1) @ r[-1]  # (L, T, S)


def head_stats_payload(result: AttentionResult, sample: HeadStats) -> dict:
    """The ``/head_stats`` payload: the sentence's translation, its per-head statistics and roles (L × H arrays
    per kind and statistic), and the sample's (``sample``)."""
    return {
        "source_text": result.source_text,
        "translation": result.translation,
        "source_tokens": result.source_tokens,
        "target_tokens": result.target_tokens,
        "sentence": sentence_stats(result).to_json_dict(),
        "sample": sample.to_json_dict(),
    }

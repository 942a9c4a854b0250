"""Greedy decoding one step at a time: what the decoder saw, what it predicted, where it looked.

Step t (0-based) is decoder position t: it is fed ``target_tokens[t]`` (BOS at step 0), sees the
prefix ``target_tokens[: t + 1]`` through masked self-attention (§3.1) and the whole source through
cross-attention, and writes ``chosen_tokens[t]`` (EOS at the last step of a finished sentence).

- The attention rows are row t of the maps ``Translator.attention(text)`` returns: ``decode_steps`` calls
  it (the greedy run) and keeps its maps (``tests/test_decode_steps.py`` checks them equal, exactly).
- The top-k probabilities come from ONE teacher-forced pass over BOS + the greedy output (softmax of
  the generator's logits at every position at once), which costs about one decoding step instead of T.
  Its argmax is the greedy token at every step (a full pass and the cached steps agree to ~1e-6; the
  tests check the top-1 token is the greedy one). Should a near tie ever flip them, the step keeps the
  greedy token as ``chosen`` and says so in ``warnings``.

Shapes: L layers, H heads, S source tokens (EOS last), T steps (= decoder positions), K = ``TOP_K``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import torch

from model.network.inference import Translator
from model.terms import BOS_PIECE, EOS_PIECE

TOP_K = 5
DECIMALS = 5  # as in AttentionResult.to_json_dict, so the rows match /attention's JSON number for number


@dataclass
class DecodeSteps:
    """One sentence's greedy translation, step by step (see the module docstring)."""

    source_text: str
    translation: str
    source_tokens: list[str]  # S pieces, EOS last
    target_tokens: list[str]  # T pieces, BOS first: the decoder's input at each step
    chosen_ids: list[int]  # T ids: the greedy token each step wrote
    chosen_tokens: list[str]  # T pieces
    top_ids: np.ndarray  # (T, K) int64, most likely first
    top_tokens: list[list[str]]  # T lists of K pieces
    top_probs: np.ndarray  # (T, K) float32, most likely first
    decoder_self: np.ndarray  # (L, H, T, T) float32, zero above the diagonal
    cross: np.ndarray  # (L, H, T, S) float32
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        t, s = len(self.target_tokens), len(self.source_tokens)
        if len(self.chosen_ids) != t or len(self.chosen_tokens) != t or len(self.top_tokens) != t:
            raise ValueError(f"{t} steps need {t} chosen ids, chosen tokens and top-token lists")
        if self.top_ids.shape != self.top_probs.shape or self.top_probs.shape[0] != t:
            raise ValueError(f"top_ids {self.top_ids.shape} and top_probs {self.top_probs.shape} must be (T={t}, K)")
        for name, (q, k) in (("decoder_self", (t, t)), ("cross", (t, s))):
            arr = getattr(self, name)
            if arr.ndim != 4 or arr.shape[2:] != (q, k):
                raise ValueError(f"{name} has shape {arr.shape}, expected (L, H, {q}, {k})")

    @property
    def n_steps(self) -> int:
        return len(self.target_tokens)

    def check_step(self, t: int) -> int:
        """``t`` as a valid 0-based step index, else a ValueError naming the range."""
        if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or not 0 <= t < self.n_steps:
            raise ValueError(f"step must be an integer from 0 to {self.n_steps - 1}, got {t!r}")
        return int(t)

    def prefix_tokens(self, t: int) -> list[str]:
        """What the decoder has at step t: BOS and the t tokens written before it."""
        return self.target_tokens[: self.check_step(t) + 1]

    def cross_rows(self, t: int) -> np.ndarray:
        return self.cross[:, :, self.check_step(t), :]  # (L, H, S)

    def self_rows(self, t: int) -> np.ndarray:
        t = self.check_step(t)
        return self.decoder_self[:, :, t, : t + 1]  # (L, H, t+1): the keys step t may see

    def step_json(self, t: int) -> dict:
        return {
            "prefix_tokens": self.prefix_tokens(t),
            "top_tokens": self.top_tokens[t],
            "top_probs": _rounded(self.top_probs[t]),
            "chosen_token": self.chosen_tokens[t],
            "cross": _rounded(self.cross_rows(t)),
            "decoder_self": _rounded(self.self_rows(t)),
        }

    def to_json_dict(self) -> dict:
        return {
            "source_text": self.source_text,
            "translation": self.translation,
            "source_tokens": self.source_tokens,
            "target_tokens": self.target_tokens,
            "warnings": self.warnings,
            "steps": [self.step_json(t) for t in range(self.n_steps)],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_json_dict(), ensure_ascii=False, separators=(",", ":"))


def _rounded(arr: np.ndarray) -> list:
    """float32 -> float64 first: rounding float32 itself prints 0.01686999946832657 instead of 0.01687."""
    return np.round(np.asarray(arr, dtype=np.float64), DECIMALS).tolist()


@torch.inference_mode()
def decode_steps(translator: Translator, text: str) -> DecodeSteps:
    """Translate ``text`` greedily and return every step. Bad input raises Translator's ValueErrors."""
    model, cfg, tok = translator.model, translator.cfg, translator.tokenizer
    result = translator.attention(text)  # the greedy run and its maps: (L, H, T, T) and (L, H, T, S)
    warnings = list(result.warnings)
    t = result.decoder_self.shape[2]
    # Step i wrote out_ids[i]; a finished run's last step wrote EOS, a cut-off run (T = len(out_ids)) none.
    chosen = (result.target_ids + [cfg.eos_id])[:t]
    src = torch.tensor([translator.token_ids(result.source_text)], device=translator.device)  # (1, S): the same ids
    tgt_in = torch.tensor([[cfg.bos_id] + chosen[:-1]], device=translator.device)  # (1, T): what each step was fed
    logits = model(src, tgt_in)  # (1, T, V), teacher-forced: every step at once
    probs = torch.softmax(logits[0].float(), dim=-1)  # (T, V)
    top_probs, top_ids = probs.topk(min(TOP_K, probs.size(-1)), dim=-1)  # (T, K) each
    top_ids_list = top_ids.tolist()
    for i, (ids, want) in enumerate(zip(top_ids_list, chosen)):
        if ids[0] != want:
            warnings.append(f"Step {i + 1}: a near tie; greedy decoding wrote another token than the top-1 shown.")
    pieces = tok.pieces(chosen)  # one call: byte-fallback runs are labelled as in the prefix
    target_tokens = [BOS_PIECE] + pieces[:-1]
    chosen_tokens = [EOS_PIECE if i == cfg.eos_id else p for i, p in zip(chosen, pieces)]
    # A top token that is the chosen one is labelled exactly as the chosen one.
    top_tokens = [
        [chosen_tokens[i] if j == chosen[i] else p for j, p in zip(ids, tok.pieces(ids))]
        for i, ids in enumerate(top_ids_list)
    ]
    return DecodeSteps(
        source_text=result.source_text,
        translation=result.translation,
        source_tokens=result.source_tokens,
        target_tokens=target_tokens,
        chosen_ids=chosen,
        chosen_tokens=chosen_tokens,
        top_ids=top_ids.cpu().numpy(),
        top_tokens=top_tokens,
        top_probs=top_probs.cpu().numpy().astype(np.float32),
        decoder_self=result.decoder_self,
        cross=result.cross,
        warnings=warnings,
    )

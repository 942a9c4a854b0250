"""Teacher forcing, token by token: how likely the model finds each token of a translation someone gave.

Decoder row i is fed token i of BOS + the given translation and predicts token i+1 (§3.1); the last row
predicts EOS. One teacher-forced pass (the same ids, scale and head mask as the ``AttentionResult`` it
explains) gives, per row, the softmax probability of the given next token and the model's own first choice
there. Where the two differ, the model disagrees with the translation it was given.

Shapes: T rows = len(result.target_tokens) = len(result.target_ids) + 1 (BOS + the given tokens).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from model.network.inference import AttentionResult, Translator
from model.terms import EOS_PIECE


@dataclass
class TokenProbs:
    """Per decoder row (T of them) of a teacher-forced run."""

    tokens: list[str]  # T pieces: the given next token (the given translation's tokens, then EOS)
    probs: np.ndarray  # (T,) float32: the model's probability of ``tokens[i]`` at row i
    top_tokens: list[str]  # T pieces: the model's most likely token at row i
    top_probs: np.ndarray  # (T,) float32: its probability

    def __post_init__(self) -> None:
        t = len(self.tokens)
        if self.probs.shape != (t,) or self.top_probs.shape != (t,) or len(self.top_tokens) != t:
            raise ValueError(f"{t} tokens need {t} probabilities, top tokens and top probabilities")


@torch.inference_mode()
def token_probs(translator: Translator, result: AttentionResult) -> TokenProbs:
    """The model's probability of every token of ``result``'s given translation (``result.teacher_forced``)."""
    if not result.teacher_forced:
        raise ValueError("Token probabilities need a translation you gave (teacher forcing).")
    model, cfg, tok, device = translator.model, translator.cfg, translator.tokenizer, translator.device
    wanted = list(result.target_ids) + [cfg.eos_id]  # (T,): what each row is asked to predict
    src = torch.tensor([translator.token_ids(result.source_text)], device=device)  # (1, S): the result's ids
    tgt_in = torch.tensor([[cfg.bos_id] + wanted[:-1]], device=device)  # (1, T): BOS + the given tokens
    head_mask = None if result.head_mask is None else torch.as_tensor(result.head_mask)
    logits = model(src, tgt_in, scale=result.scale, head_mask=head_mask)  # (1, T, V)
    probs = torch.softmax(logits[0].float(), dim=-1)  # (T, V)
    given = probs.gather(-1, torch.tensor(wanted, device=device)[:, None])[:, 0]  # (T,)
    top_probs, top_ids = probs.max(dim=-1)  # (T,) each

    def label(i: int, piece: str) -> str:
        return EOS_PIECE if i == cfg.eos_id else piece

    top = top_ids.tolist()
    return TokenProbs(
        tokens=[label(i, p) for i, p in zip(wanted, tok.pieces(wanted))],  # labelled as the rows' input tokens
        probs=given.cpu().numpy().astype(np.float32),
        top_tokens=[label(i, tok.pieces([i])[0]) for i in top],  # one by one: unrelated ids, no byte runs
        top_probs=top_probs.cpu().numpy().astype(np.float32),
    )

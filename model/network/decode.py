"""Greedy and beam search (§6.1: beam 4, length penalty alpha 0.6) with incremental, cached decoding, and the one
way a batch of sentences becomes a padded tensor (``padded``)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from model.network.heads import check_head_mask
from model.network.transformer import AttentionMaps, EncoderDecoder
from model.terms import MAX_TOKENS


def max_output_length(src_len: int, model: EncoderDecoder) -> int:
    """Longest output we generate for a source of ``src_len`` tokens (EOS included): 1.5 × the source + 10, and
    never more than ``MAX_TOKENS``, the limit of a given translation (no Multi30k sentence comes near it: the
    longest, 52 tokens, may produce 89). It bounds every answer's maps at 100 × 100 tokens a kind."""
    return min(int(1.5 * src_len) + 10, MAX_TOKENS, model.cfg.max_len - 1)


def padded(rows: Sequence[Sequence[int]], pad_id: int, device: torch.device | str | None = None) -> Tensor:
    """Token-id lists -> (B, longest) long tensor, padded on the right with ``pad_id`` (on ``device`` if given).

    Every batch is built here: serving, the probes, evaluation and training. Padded keys get weight 0 through the
    padding mask, so each sentence's outputs and maps are its own."""
    out = torch.full((len(rows), max(map(len, rows))), pad_id, dtype=torch.long)
    for i, ids in enumerate(rows):
        out[i, : len(ids)] = torch.tensor(ids, dtype=torch.long)
    return out if device is None else out.to(device)


def strip_special(ids: list[int], model: EncoderDecoder) -> list[int]:
    """Cut a generated sequence at its first EOS (what follows is padding of a finished row)."""
    eos = model.cfg.eos_id
    return ids[: ids.index(eos)] if eos in ids else ids


@torch.inference_mode()
def greedy_decode(
    model: EncoderDecoder,
    src: Tensor,
    max_len: int | None = None,
    scale: float | None = None,
    maps: AttentionMaps | None = None,
    head_mask=None,
) -> list[list[int]]:
    """(B, S) source ids -> B token lists (without BOS/EOS). Each step feeds one token through the cache.

    With ``maps``, the attention of every step is captured as it is computed (no second pass):
    decoder_self (B, H, T, T) zero above the diagonal, cross (B, H, T, S), T = steps taken.
    ``scale`` and ``head_mask`` act on this call only (see ``model.network.heads.check_head_mask``).
    """
    cfg = model.cfg
    b = src.size(0)
    max_len = max_len or max_output_length(src.size(1), model)
    memory, src_mask = model.encode(src, scale, maps, head_mask)
    head_mask = check_head_mask(head_mask, cfg, memory)  # converted once, not at every step
    if bool(src_mask.all()):  # no padding (one sentence): skip the cross-attention masking at every step
        src_mask = None
    state = model.new_state()
    token = torch.full((b, 1), cfg.bos_id, dtype=torch.long, device=src.device)
    finished = torch.zeros(b, dtype=torch.bool, device=src.device)
    out = []
    steps: list[AttentionMaps] = []
    for step in range(max_len):
        step_maps = AttentionMaps() if maps is not None else None
        logits = model.decode(token, memory, src_mask, scale, state, step_maps, head_mask)  # (B, 1, V)
        if step_maps is not None:
            steps.append(step_maps)
        token = first_step_without_eos(logits[:, -1], step, cfg.eos_id).argmax(-1, keepdim=True)  # (B, 1)
        token = token.masked_fill(finished[:, None], cfg.pad_id)
        out.append(token)
        finished |= token[:, 0] == cfg.eos_id
        if finished.all():
            break
    if maps is not None:
        t = len(steps)
        for layer in range(cfg.n_layers):
            # step i's self-attention row covers keys 0..i: pad each to T keys, stack the rows.
            rows = [F.pad(st.decoder_self[layer], (0, t - i - 1)) for i, st in enumerate(steps)]  # (B, H, 1, T)
            maps.decoder_self.append(torch.cat(rows, dim=2))  # (B, H, T, T)
            maps.cross.append(torch.cat([st.cross[layer] for st in steps], dim=2))  # (B, H, T, S)
    ids = torch.cat(out, dim=1).tolist()
    return [strip_special(row, model) for row in ids]


@torch.inference_mode()
def greedy_rows(
    model: EncoderDecoder, memory: Tensor, src_mask: Tensor, limits: list[int], scale: float | Tensor | None = None
) -> tuple[list[list[int]], list[int], AttentionMaps]:
    """Greedy decoding as ``greedy_decode`` does it, from an encoded padded batch, but row i stops at its own EOS or
    after ``limits[i]`` steps, and a finished row leaves the batch (its later steps would be thrown away); ``scale``
    may be one per row (``row_scales``), which leaves with its row.
    -> (output ids per row, steps per row, maps (B, H, T, T) / (B, H, T, S), zero after a row's last step)."""
    cfg, b, dev = model.cfg, memory.size(0), memory.device
    limit = torch.tensor(limits, device=dev)
    state = model.new_state()
    rows = torch.arange(b, device=dev)  # the batch rows still decoding
    token = torch.full((b, 1), cfg.bos_id, dtype=torch.long, device=dev)
    out = torch.full((b, max(limits)), cfg.pad_id, dtype=torch.long, device=dev)  # (B, T)
    n_steps = torch.zeros(b, dtype=torch.long, device=dev)
    steps = []
    for step in range(max(limits)):
        step_maps = AttentionMaps()
        logits = model.decode(token, memory, src_mask, scale, state, step_maps)  # (b, 1, V), b = rows left
        steps.append((rows, step_maps))
        token = first_step_without_eos(logits[:, -1], step, cfg.eos_id).argmax(-1, keepdim=True)  # (b, 1)
        out[rows, step] = token[:, 0]
        n_steps[rows] = step + 1
        going = (token[:, 0] != cfg.eos_id) & (step + 1 < limit[rows])
        if not going.any():
            break
        if not going.all():
            keep = going.nonzero()[:, 0]
            rows, token = rows[keep], token[keep]
            memory, src_mask = memory[keep], src_mask[keep]
            if isinstance(scale, Tensor):  # a scale per row (model.network.transformer.row_scales)
                scale = scale[keep]
            state.reorder(keep)
    t = len(steps)
    maps = AttentionMaps()
    for layer in range(cfg.n_layers):
        self_w = memory.new_zeros((b, cfg.n_heads, t, t))
        cross = memory.new_zeros((b, cfg.n_heads, t, memory.size(1)))
        for i, (at, st) in enumerate(steps):
            self_w[at, :, i, : i + 1] = st.decoder_self[layer][:, :, 0]  # (b, H, i + 1)
            cross[at, :, i] = st.cross[layer][:, :, 0]  # (b, H, S)
        maps.decoder_self.append(self_w)
        maps.cross.append(cross)
    ids, lengths = out.tolist(), n_steps.tolist()
    return [strip_special(row[:n], model) for row, n in zip(ids, lengths)], lengths, maps


def first_step_without_eos(logits: Tensor, step: int, eos_id: int) -> Tensor:
    """(rows, V) next-token scores; at the first step EOS is barred: a translation has at least one token.

    Without it, beam search returns the empty translation whenever EOS is among the first step's K best tokens and
    its log-probability beats every finished hypothesis's length-normalised score (lp(1) = 1 leaves the empty one
    unpenalised): a weak model's hard sentences (the h = 1 sibling's beam 4 gave 21 empty test translations). The
    same rule for greedy keeps beam 1 equal to greedy (fairseq bars EOS at step 0 the same way, min_len = 1)."""
    return logits.index_fill(-1, torch.tensor([eos_id], device=logits.device), float("-inf")) if step == 0 else logits


def length_penalty(length: int, alpha: float) -> float:
    """GNMT's lp(Y) = ((5 + |Y|) / 6)^alpha, as used with alpha = 0.6 in §6.1."""
    return ((5.0 + length) / 6.0) ** alpha


@torch.inference_mode()
def beam_search(
    model: EncoderDecoder,
    src: Tensor,
    beam: int = 4,
    alpha: float = 0.6,
    max_len: int | None = None,
    scale: float | None = None,
    head_mask=None,
) -> list[list[int]]:
    """Batched beam search over (B, S) sources; returns the best hypothesis of each (without BOS/EOS).

    A sentence is done once it has ``beam`` finished hypotheses; these are ranked by
    log-probability / lp(length). With beam=1 this is exactly greedy decoding. ``scale`` and
    ``head_mask`` act on this call only.
    """
    cfg = model.cfg
    b, k = src.size(0), beam
    max_len = max_len or max_output_length(src.size(1), model)
    memory, src_mask = model.encode(src, scale, head_mask=head_mask)
    head_mask = check_head_mask(head_mask, cfg, memory)  # converted once, not at every step
    memory = memory.repeat_interleave(k, dim=0)  # (B*K, S, d_model)
    src_mask = src_mask.repeat_interleave(k, dim=0)
    state = model.new_state()
    dev = src.device
    tokens = torch.full((b * k, 1), cfg.bos_id, dtype=torch.long, device=dev)
    scores = torch.zeros(b, k, device=dev)
    scores[:, 1:] = float("-inf")  # all beams start identical: keep only the first
    finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(b)]
    done = torch.zeros(b, dtype=torch.bool)
    row_base = (torch.arange(b, device=dev) * k)[:, None]  # (B, 1)
    for step in range(max_len):
        logits = model.decode(tokens[:, -1:], memory, src_mask, scale, state, head_mask=head_mask)  # (B*K, 1, V)
        logp = first_step_without_eos(torch.log_softmax(logits[:, -1].float(), dim=-1), step, cfg.eos_id)  # (B*K, V)
        vocab = logp.size(-1)
        cand = (scores[:, :, None] + logp.view(b, k, vocab)).view(b, k * vocab)  # (B, K*V)
        top_scores, top_idx = cand.topk(2 * k, dim=-1)  # (B, 2K)
        top_beam, top_tok = top_idx // vocab, top_idx % vocab
        is_eos = top_tok == cfg.eos_id
        last = step == max_len - 1
        # Hypotheses ending in EOS among the best K are finished (few: a Python loop is fine); at the
        # length limit every one of the best K is finished as it stands.
        take = torch.ones_like(is_eos[:, :k]) if last else is_eos[:, :k]
        for bi, ci in take.nonzero().tolist():
            if done[bi] or top_scores[bi, ci].item() == float("-inf"):
                continue
            hyp = tokens[bi * k + top_beam[bi, ci].item(), 1:].tolist() + [top_tok[bi, ci].item()]
            finished[bi].append((top_scores[bi, ci].item() / length_penalty(len(hyp), alpha), hyp))
        for bi in range(b):
            if not done[bi] and len(finished[bi]) >= k:
                done[bi] = True
        if done.all() or last:
            break
        # Continue with the K best candidates that did not end in EOS (each beam yields at most one EOS,
        # so at least K of the 2K are left).
        order = (is_eos.float() * 2 * k + torch.arange(2 * k, device=dev)).argsort(dim=-1)[:, :k]  # (B, K)
        scores = top_scores.gather(1, order)
        src_rows = (row_base + top_beam.gather(1, order)).view(-1)  # (B*K,)
        new_tok = top_tok.gather(1, order).view(-1, 1)
        tokens = torch.cat([tokens.index_select(0, src_rows), new_tok], dim=1)
        state.reorder(src_rows)
    best = []
    for hyps in finished:
        hyp = max(hyps, key=lambda h: h[0])[1] if hyps else []
        best.append(strip_special(hyp, model))
    return best

"""What a lab run records while it trains: curves every few steps, and the attention time-lapse.

Curves (every ``every`` steps, into the trainer state, so they survive a resume): the training loss of the
steps since the last record, the gradient norm of W^Q and W^K per kind and layer (mean over those steps),
and, on the probe — the shipped sample's sentence pairs, teacher-forced with their reference, dropout off —
the loss per token and per kind and layer the mean softmax entropy, mean largest weight and mean size of the
softmax's own gradient ‖diag(p) − p pᵀ‖_F (footnote 4: it shrinks as the softmax saturates).

The time-lapse (``snapshot_steps``: 0, 25, 50, 75, 100, 150, 200, 300, 400, 600, 800, 1200, …, and the last
step): the maps of the time-lapse sentences, teacher-forced with their reference (a fixed target, so the
maps of two steps are comparable; greedy output of an untrained model is noise), as float16, and the
per-head statistics of ``model.probes.analysis`` over the probe.

L - layers, H - heads, B - sentences, S - source tokens, T - decoder positions.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from model.network.checkpoint import atomic_write_text
from model.network.tokenizer import Tokenizer
from model.network.transformer import AttentionMaps, EncoderDecoder
from model.terms import BOS_PIECE, EOS_PIECE, KINDS
from model.training.data import collate

Pair = tuple[str, str]

# The time-lapse sentences and their references: the examples that teach, and two more plain captions.
TIMELAPSE: tuple[Pair, ...] = (
    ("Two dogs are running through the snow.", "Zwei Hunde rennen durch den Schnee."),
    ("A man is smiling while a woman takes a picture.", "Ein Mann lächelt, während eine Frau ein Foto macht."),
    ("A woman is putting on a coat.", "Eine Frau zieht einen Mantel an."),
    ("A man is picking up a red ball.", "Ein Mann hebt einen roten Ball auf."),
    ("A little girl in a pink dress is climbing a wooden fence.",
     "Ein kleines Mädchen in einem rosa Kleid klettert einen Holzzaun hoch."),
    ("A woman who is holding a baby walks down the street.", "Eine Frau, die ein Baby hält, geht die Straße entlang."),
    ("A black dog is jumping into the water.", "Ein schwarzer Hund springt ins Wasser."),
    ("Three people are sitting on a bench.", "Drei Personen sitzen auf einer Bank."),
)


def snapshot_steps(last: int) -> list[int]:
    """0, 25, 50, 75, then 100 · (1, 1.5, 2, 3, 4, 6, …) — log-spaced, two per doubling — below ``last``;
    then ``last``."""
    steps, x = [0, 25, 50, 75], 100
    while x < last:
        steps += [x, x * 3 // 2]
        x *= 2
    return sorted(s for s in set(steps) if s < last) + [last]


def attention_blocks(model: EncoderDecoder) -> dict[str, list[torch.nn.Module]]:
    """kind -> the MultiHeadAttention of each layer."""
    return {
        "encoder_self": [layer.self_attn for layer in model.encoder.layers],
        "decoder_self": [layer.self_attn for layer in model.decoder.layers],
        "cross": [layer.src_attn for layer in model.decoder.layers],
    }


def softmax_jacobian_norm(w: Tensor) -> Tensor:
    """‖diag(p) − p pᵀ‖_F of each row p of ``w`` (..., K): the size of the softmax's own gradient with respect to
    its scores (footnote 4's quantity). ‖J‖² = Σp² − 2Σp³ + (Σp²)²; √(n−1)/n for a uniform row, 0 for one-hot."""
    p2 = (w * w).sum(-1)
    return (p2 - 2 * (w * w * w).sum(-1) + p2 * p2).clamp_min(0).sqrt()


def _entropy(w: Tensor) -> Tensor:
    """Softmax entropy in nats of each row of ``w`` (..., K); masked keys hold 0 and add 0."""
    return -(w * w.clamp_min(1e-30).log()).sum(-1)


class Probe:
    """Sentence pairs encoded once, forwarded teacher-forced with the maps kept."""

    def __init__(self, tok: Tokenizer, pairs: list[Pair], pad_id: int, bos_id: int):
        eos = tok.sp.eos_id()
        self.ids = [(tok.encode(en) + [eos], tok.encode(de) + [eos]) for en, de in pairs]
        self.tokens = [(tok.pieces(s[:-1]) + [EOS_PIECE], [BOS_PIECE] + tok.pieces(t[:-1])) for s, t in self.ids]
        self.batch = collate(self.ids, pad_id, bos_id)
        self.pad_id = pad_id

    @torch.no_grad()
    def run(self, model: EncoderDecoder, device: torch.device) -> tuple[float, AttentionMaps]:
        """-> (loss per target token, no smoothing; maps, each (B, H, Q, K) per layer)."""
        was_training = model.training
        model.eval()
        src, tgt_in, tgt_out = (t.to(device) for t in self.batch)
        maps = AttentionMaps()
        logits = model(src, tgt_in, maps=maps)  # (B, T, vocab)
        loss = torch.nn.functional.cross_entropy(
            logits.float().flatten(0, 1), tgt_out.flatten(), ignore_index=self.pad_id, reduction="mean")
        model.train(was_training)
        return float(loss), maps

    def rows(self, kind: str) -> Tensor:
        """(B, Q) bool: the query rows that exist and see more than one key."""
        src, tgt_in, _ = self.batch
        if kind == "encoder_self":
            return src != self.pad_id
        valid = tgt_in != self.pad_id
        if kind == "decoder_self":
            valid[:, 0] = False  # <s> sees only itself: no choice to measure
        return valid


class Recorder:
    """Hooks ``model.train`` calls: ``after_backward`` each step, ``on_step`` after it."""

    def __init__(self, model: EncoderDecoder, tok: Tokenizer, device: torch.device, every: int,
                 probe_pairs: list[Pair], snapshots: Path | None, last_step: int):
        cfg = model.cfg
        self.model, self.device, self.every = model, device, every
        self.probe = Probe(tok, probe_pairs, cfg.pad_id, cfg.bos_id)
        self.timelapse = Probe(tok, list(TIMELAPSE), cfg.pad_id, cfg.bos_id) if snapshots else None
        self.snapshots = snapshots
        self.snapshot_at = set(snapshot_steps(last_step)) if snapshots else set()
        self.blocks = attention_blocks(model)
        self._reset()

    def _reset(self) -> None:
        self.n_steps, self.loss_sum, self.tokens = 0, 0.0, 0
        self.grad_sums = {f"{w}.{kind}": np.zeros(len(blocks)) for kind, blocks in self.blocks.items()
                          for w in ("grad_wq", "grad_wk")}

    def after_backward(self) -> None:
        """Add this step's ‖∇W^Q‖ and ‖∇W^K‖ (Frobenius) per kind and layer."""
        for kind, blocks in self.blocks.items():
            for i, block in enumerate(blocks):
                self.grad_sums[f"grad_wq.{kind}"][i] += float(block.w_q.weight.grad.norm())
                self.grad_sums[f"grad_wk.{kind}"][i] += float(block.w_k.weight.grad.norm())

    def on_step(self, step: int, loss_sum: float, n_tokens: int, trainer: dict) -> None:
        self.n_steps, self.loss_sum, self.tokens = self.n_steps + 1, self.loss_sum + loss_sum, self.tokens + n_tokens
        if step % self.every == 0:
            trainer.setdefault("curves", []).append(self.record(step))
        if step in self.snapshot_at:
            self.snapshot(step)

    def probe_record(self) -> tuple[dict, AttentionMaps]:
        """The probe's loss and, per kind, per layer, mean entropy and mean largest weight."""
        loss, maps = self.probe.run(self.model, self.device)
        record = {"probe_loss": round(loss, 5)}
        for kind in KINDS:
            rows = self.probe.rows(kind).to(self.device)  # (B, Q)
            ent, top, jac = [], [], []
            for w in getattr(maps, kind):  # (B, H, Q, K)
                keep = rows[:, None, :].expand(-1, w.size(1), -1)  # (B, H, Q)
                ent.append(round(float(_entropy(w)[keep].mean()), 5))
                top.append(round(float(w.amax(-1)[keep].mean()), 5))
                jac.append(round(float(softmax_jacobian_norm(w.float())[keep].mean()), 6))
            record[f"entropy.{kind}"], record[f"max_weight.{kind}"] = ent, top
            record[f"softmax_grad.{kind}"] = jac
        return record, maps

    def record(self, step: int) -> dict:
        record, _ = self.probe_record()
        record = {"step": step, "train_loss": round(self.loss_sum / max(self.tokens, 1), 5), **record}
        for key, sums in self.grad_sums.items():
            record[key] = [round(float(v) / max(self.n_steps, 1), 6) for v in sums]
        self._reset()
        return record

    def snapshot(self, step: int) -> None:
        """``snapshots/step_NNNNN.npz`` (the time-lapse sentences' maps, float16) and ``.json`` (head statistics)."""
        from model.probes.analysis import HeadStats  # heavy (the app's analysis); only snapshots need it

        loss, maps = self.probe.run(self.model, self.device)
        cfg = self.model.cfg
        stats = HeadStats(cfg.n_layers, cfg.n_heads)
        for b, (src_tokens, tgt_tokens) in enumerate(self.probe.tokens):
            s, t = len(src_tokens), len(tgt_tokens)
            for kind, (q, k) in {"encoder_self": (s, s), "decoder_self": (t, t), "cross": (t, s)}.items():
                w = torch.stack([m[b, :, :q, :k] for m in getattr(maps, kind)]).double().cpu().numpy()
                q_tok = src_tokens if kind == "encoder_self" else tgt_tokens
                k_tok = tgt_tokens if kind == "decoder_self" else src_tokens
                stats.add_maps(kind, w, q_tok, k_tok)
        _, tl_maps = self.timelapse.run(self.model, self.device)
        arrays = {}
        for b, (src_tokens, tgt_tokens) in enumerate(self.timelapse.tokens):
            s, t = len(src_tokens), len(tgt_tokens)
            for kind, (q, k) in {"encoder_self": (s, s), "decoder_self": (t, t), "cross": (t, s)}.items():
                w = torch.stack([m[b, :, :q, :k] for m in getattr(tl_maps, kind)])  # (L, H, Q, K)
                arrays[f"{b}.{kind}"] = w.to(torch.float16).cpu().numpy()
        self.snapshots.mkdir(parents=True, exist_ok=True)
        tmp = self.snapshots / f"step_{step:05d}.tmp.npz"
        np.savez_compressed(tmp, **arrays)
        tmp.replace(self.snapshots / f"step_{step:05d}.npz")
        stats.sentences = len(self.probe.tokens)
        record = {"step": step, "probe_loss": round(loss, 5), **stats.to_json_dict()}
        atomic_write_text(self.snapshots / f"step_{step:05d}.json", json.dumps(record) + "\n")


def timelapse_tokens(tok: Tokenizer) -> list[dict]:
    """The time-lapse sentences as the snapshots hold them: source and decoder-input tokens."""
    probe = Probe(tok, list(TIMELAPSE), 0, 1)
    return [{"source": en, "reference": de, "source_tokens": s, "target_tokens": t}
            for (en, de), (s, t) in zip(TIMELAPSE, probe.tokens)]

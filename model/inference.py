"""The one loader the CLIs and the app share: text in, translation and attention maps out.

Limits (documented in the README): a source or given target is cut to ``MAX_TOKENS`` SentencePiece
tokens (EOS included) with a warning; control characters (NUL included) become spaces; blank input
raises ``ValueError``. Weights load from safetensors only.
"""

from __future__ import annotations

import io
import json
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from model.checkpoint import load_model, load_tokenizer, transpose_matrices
from model.decode import beam_search, greedy_decode
from model.heads import KINDS, check_head_mask
from model.transformer import AttentionMaps

ASSETS = Path(__file__).resolve().parent.parent / "assets" / "model"
MAX_TOKENS = 100  # per side, EOS included; Multi30k sentences average ~16 tokens
BOS_PIECE, EOS_PIECE = "<s>", "</s>"
JSON_DECIMALS = 5  # attention weights in the JSON export and /attention: 5 decimals


def clean_text(text: str | None) -> str:
    """Control and format characters (NUL, bidi marks, zero-width) -> space; whitespace collapsed."""
    if text is None:
        return ""
    chars = (" " if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co") else c for c in str(text))
    return " ".join("".join(chars).split())


def pick_device(device: str | torch.device | None = None) -> torch.device:
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class AttentionResult:
    """One sentence's translation and every attention map, as float32 numpy arrays.

    Rows of the decoder maps are decoder positions, labelled by the token fed in at that position
    (``target_tokens`` = BOS + translation; the §3.1 shift), so row i is the step predicting token i+1.
    """

    source_text: str
    translation: str
    source_tokens: list[str]  # S pieces, EOS last
    target_tokens: list[str]  # T pieces, BOS first
    encoder_self: np.ndarray  # (L, H, S, S)
    decoder_self: np.ndarray  # (L, H, T, T)
    cross: np.ndarray  # (L, H, T, S)
    teacher_forced: bool = False
    scale: float = 0.0
    warnings: list[str] = field(default_factory=list)
    head_mask: np.ndarray | None = None  # (3, L, H) float32 in KINDS order as used (0 = head off), None = all on
    target_ids: list[int] = field(default_factory=list)  # the translation's token ids (greedy or given), no BOS/EOS

    def __post_init__(self) -> None:
        s, t = len(self.source_tokens), len(self.target_tokens)
        expected = {"encoder_self": (s, s), "decoder_self": (t, t), "cross": (t, s)}
        for kind, (q, k) in expected.items():
            arr = getattr(self, kind)
            if arr.ndim != 4 or arr.shape[2:] != (q, k):
                raise ValueError(f"{kind} has shape {arr.shape}, expected (L, H, {q}, {k})")

    def maps(self, kind: str) -> np.ndarray:
        if kind not in KINDS:
            raise ValueError(f"unknown attention kind {kind!r}; expected one of {', '.join(KINDS)}")
        return getattr(self, kind)

    def tokens(self, kind: str) -> tuple[list[str], list[str]]:
        """(query tokens, key tokens) of one kind of attention."""
        self.maps(kind)  # validates the name
        return {
            "encoder_self": (self.source_tokens, self.source_tokens),
            "decoder_self": (self.target_tokens, self.target_tokens),
            "cross": (self.target_tokens, self.source_tokens),
        }[kind]

    def to_npz_bytes(self) -> bytes:
        buf = io.BytesIO()
        np.savez_compressed(
            buf,
            source_tokens=np.array(self.source_tokens, dtype=str),
            target_tokens=np.array(self.target_tokens, dtype=str),
            encoder_self=self.encoder_self,
            decoder_self=self.decoder_self,
            cross=self.cross,
            translation=np.array(self.translation),
            scale=np.float32(self.scale),
        )
        return buf.getvalue()

    def to_json_dict(self) -> dict:
        return {
            "source_text": self.source_text,
            "translation": self.translation,
            "source_tokens": self.source_tokens,
            "target_tokens": self.target_tokens,
            "teacher_forced": self.teacher_forced,
            "scale": self.scale,
            "shapes": {k: list(getattr(self, k).shape) for k in KINDS},
            # float64 first: rounding float32 itself gives back 0.01686999946832657 instead of 0.01687
            **{k: np.round(getattr(self, k).astype(np.float64), JSON_DECIMALS).tolist() for k in KINDS},
        }

    def to_json(self) -> str:
        return json.dumps(self.to_json_dict(), ensure_ascii=False, separators=(",", ":"))


def _stack(layers: list[torch.Tensor]) -> np.ndarray:
    """Per-layer (1, H, Q, K) -> (L, H, Q, K) float32."""
    return torch.cat(layers, dim=0).float().cpu().numpy()


class Translator:
    """A loaded model + tokenizer. Thread-safe: forward passes keep no state on the modules.

    A missing or corrupt model folder raises ``model.checkpoint.CheckpointError`` with a one-line message
    (the file, the fault, what to do) before any weights are allocated.
    """

    def __init__(self, folder: str | Path = ASSETS, device: str | torch.device | None = None):
        folder = Path(folder)
        self.device = pick_device(device)
        # Half precision on a GPU, float32 on the CPU.
        self.dtype = torch.float16 if self.device.type == "cuda" else torch.float32
        self.model = load_model(folder, self.device, self.dtype)
        if self.device.type == "cpu":
            transpose_matrices(self.model)  # faster one-row products (model.checkpoint.transpose_matrices)
        self.cfg = self.model.cfg
        self.tokenizer = load_tokenizer(folder, self.cfg)
        self.folder = folder
        self.max_tokens = min(MAX_TOKENS, self.cfg.max_len)

    @property
    def device_label(self) -> str:
        if self.device.type == "cuda":
            return f"GPU ({torch.cuda.get_device_name(self.device)}, float16)"
        return "CPU (float32)"

    def _ids(self, text: str, what: str, warnings: list[str]) -> tuple[str, list[int]]:
        text = clean_text(text)
        if not text:
            raise ValueError(f"The {what} is empty: please type a sentence.")
        ids = self.tokenizer.encode(text)
        if not ids:
            raise ValueError(f"The {what} has no characters the tokenizer can read.")
        if len(ids) + 1 > self.max_tokens:
            warnings.append(f"The {what} was cut to its first {self.max_tokens - 1} tokens (of {len(ids)}).")
            ids = ids[: self.max_tokens - 1]
        return text, ids + [self.cfg.eos_id]

    def encode_input(self, text: str, what: str = "source sentence") -> tuple[str, list[int], list[str]]:
        """A sentence as ``attention`` reads it: (cleaned text, ids with EOS last, warnings such as a cut to
        ``max_tokens``). A blank one raises ValueError ("The {what} is empty: ...")."""
        warnings: list[str] = []
        text, ids = self._ids(text, what, warnings)
        return text, ids, warnings

    def token_ids(self, text: str) -> list[int]:
        """Lenient batch encoding (evaluation, diagnostics): cleaned, cut to ``max_tokens``, EOS appended;
        a blank line gives just EOS instead of an error."""
        return self.tokenizer.encode(clean_text(text))[: self.max_tokens - 1] + [self.cfg.eos_id]

    def _src_tensor(self, ids: list[int]) -> torch.Tensor:
        return torch.tensor([ids], dtype=torch.long, device=self.device)

    def translate(self, text: str, beam: int = 4, scale: float | None = None, head_mask=None) -> str:
        _, ids = self._ids(text, "source sentence", [])
        return self.translate_batch([ids], beam=beam, scale=scale, head_mask=head_mask)[0]

    @torch.inference_mode()
    def translate_batch(
        self, batch_ids: list[list[int]], beam: int = 4, scale: float | None = None, head_mask=None
    ) -> list[str]:
        """Token-id lists (EOS included) -> translations; one padded batch.

        ``scale`` and ``head_mask`` (see ``model.heads.check_head_mask``) act on this call only.
        """
        width = max(len(ids) for ids in batch_ids)
        src = torch.full((len(batch_ids), width), self.cfg.pad_id, dtype=torch.long)
        for i, ids in enumerate(batch_ids):
            src[i, : len(ids)] = torch.tensor(ids)
        src = src.to(self.device)
        if beam > 1:
            outs = beam_search(self.model, src, beam=beam, scale=scale, head_mask=head_mask)
        else:
            outs = greedy_decode(self.model, src, scale=scale, head_mask=head_mask)
        return [self.tokenizer.decode(ids) for ids in outs]

    @torch.inference_mode()
    def attention(
        self, text: str, target: str | None = None, scale: float | None = None, head_mask=None
    ) -> AttentionResult:
        """Translate ``text`` greedily (or force ``target``) and return every attention map.

        For this call only: ``scale`` replaces the model's 1/sqrt(d_k) (None = the paper's); ``head_mask``
        (3, L, H) in ``KINDS`` order switches heads off, 1 = keep, 0 = that head's output zeroed before W^O
        (see ``model.heads.check_head_mask``). An ablated head's returned weights are still its
        softmax's: they show where it would have looked.
        """
        warnings: list[str] = []
        text, src_ids = self._ids(text, "source sentence", warnings)
        src = self._src_tensor(src_ids)
        head_mask = check_head_mask(head_mask, self.cfg, self.model.embed.weight)
        maps = AttentionMaps()
        target = clean_text(target)
        if target:
            _, tgt_ids = self._ids(target, "given translation", warnings)
            tgt_in = self._src_tensor([self.cfg.bos_id] + tgt_ids[:-1])  # (1, T): BOS + target
            self.model(src, tgt_in, scale=scale, maps=maps, head_mask=head_mask)
            out_ids = tgt_ids[:-1]
            translation = self.tokenizer.decode(out_ids)
        else:
            out_ids = greedy_decode(self.model, src, scale=scale, maps=maps, head_mask=head_mask)[0]
            translation = self.tokenizer.decode(out_ids)
        t = maps.decoder_self[0].size(-1)
        # Decoder position i holds BOS (i = 0) or output token i; a cut-off greedy run has no EOS step.
        target_tokens = ([BOS_PIECE] + self.tokenizer.pieces(out_ids))[:t]
        return AttentionResult(
            source_text=text,
            translation=translation,
            source_tokens=self.tokenizer.pieces(src_ids[:-1]) + [EOS_PIECE],
            target_tokens=target_tokens,
            encoder_self=_stack(maps.encoder_self),
            decoder_self=_stack(maps.decoder_self),
            cross=_stack(maps.cross),
            teacher_forced=bool(target),
            scale=float(self.cfg.scale if scale is None else scale),
            warnings=warnings,
            head_mask=None if head_mask is None else head_mask.float().cpu().numpy(),
            target_ids=list(out_ids),
        )

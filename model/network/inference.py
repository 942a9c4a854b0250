"""The one loader the CLIs and the app share: text in, translation and attention maps out, one sentence or a
padded batch of them (``Translator.attention_batch``, ``Translator.translate_batch``: what the app's batcher and
the probes run).

Limits (documented in the README): a source or given target is cut to ``MAX_TOKENS`` SentencePiece
tokens (EOS included) with a warning; control characters (NUL included) become spaces; blank input
raises ``ValueError``. Weights load from safetensors only.
"""

from __future__ import annotations

import io
import json
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson
import torch

from model.network.checkpoint import check_servable, load_config, load_model, load_tokenizer, transpose_matrices
from model.network.decode import beam_search, greedy_decode, greedy_rows, max_output_length, padded
from model.network.heads import check_head_mask
from model.network.transformer import AttentionMaps, row_scales
from model.terms import BOS_PIECE, EOS_PIECE, KINDS, MAX_TOKENS

ASSETS = Path(__file__).resolve().parents[2] / "assets" / "model"
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
        return {**self._json_fields(), **{k: v.tolist() for k, v in self._json_maps().items()}}

    def to_json_bytes(self, **extra) -> bytes:
        """``to_json_dict()`` (and ``extra``'s keys after it) as compact JSON, written straight from the arrays:
        ~0.2 s and 10.5 MB at 100 tokens a side, where the dict's 1.44 million Python floats took ~80 MB and seconds
        to write (what /attention sends: ``model.serving.runs.Runs.attention_json``). All ASCII (text as \\u
        escapes): the server's copies of it as a Python str take a byte a character, not two."""
        def ascii(fields: dict) -> dict:
            return {k: orjson.Fragment(json.dumps(v).encode()) if isinstance(v, str | list) else v
                    for k, v in fields.items()}

        return orjson.dumps({**ascii(self._json_fields()), **self._json_maps(), **ascii(extra)},
                            option=orjson.OPT_SERIALIZE_NUMPY)

    def to_json(self) -> str:
        return self.to_json_bytes().decode("utf-8")

    def _json_fields(self) -> dict:
        return {
            "source_text": self.source_text,
            "translation": self.translation,
            "source_tokens": self.source_tokens,
            "target_tokens": self.target_tokens,
            "teacher_forced": self.teacher_forced,
            "scale": self.scale,
            "shapes": {k: list(getattr(self, k).shape) for k in KINDS},
        }

    def _json_maps(self) -> dict[str, np.ndarray]:
        # float64 first: rounding float32 itself gives back 0.01686999946832657 instead of 0.01687
        return {k: np.round(getattr(self, k).astype(np.float64), JSON_DECIMALS) for k in KINDS}


def _stack(layers: list[torch.Tensor]) -> np.ndarray:
    """Per-layer (1, H, Q, K) -> (L, H, Q, K) float32."""
    return torch.cat(layers, dim=0).float().cpu().numpy()


def _per_row(layers: list[torch.Tensor]) -> np.ndarray:
    """Per-layer (B, H, Q, K) -> (B, L, H, Q, K) float32."""
    return torch.stack(layers, dim=1).float().cpu().numpy()


@dataclass
class Encoded:
    """One sentence (and, maybe, a given translation) as the model reads it: ``attention_batch``'s rows."""

    src_ids: list[int]  # EOS last
    tgt_ids: list[int] | None = None  # EOS last; None = the model's own (greedy) translation
    text: str = ""  # the cleaned source sentence
    warnings: list[str] = field(default_factory=list)


class Translator:
    """A loaded model + tokenizer. Thread-safe: forward passes keep no state on the modules.

    A missing or corrupt model folder raises ``model.network.checkpoint.CheckpointError`` with a one-line message
    (the file, the fault, what to do) before any weights are allocated.
    """

    def __init__(self, folder: str | Path = ASSETS, device: str | torch.device | None = None):
        folder = Path(folder)
        self.device = pick_device(device)
        # Half precision on a GPU, float32 on the CPU.
        self.dtype = torch.float16 if self.device.type == "cuda" else torch.float32
        check_servable(load_config(folder), folder)  # max_len at least the input limit, before any weights load
        self.model = load_model(folder, self.device, self.dtype)
        if self.device.type == "cpu":
            transpose_matrices(self.model)  # faster one-row products (model.network.checkpoint.transpose_matrices)
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

    def encode_request(self, text: str, target: str | None = None) -> Encoded:
        """``text`` and a given ``target`` (None or blank: the model's own translation) as ``attention`` reads
        them, warnings included; a blank source raises its ValueError."""
        text, src_ids, warnings = self.encode_input(text)
        target = clean_text(target)
        if not target:
            return Encoded(src_ids, None, text, warnings)
        _, tgt_ids, more = self.encode_input(target, "given translation")
        return Encoded(src_ids, tgt_ids, text, warnings + more)

    def token_ids(self, text: str) -> list[int]:
        """Lenient batch encoding (evaluation, diagnostics): cleaned, cut to ``max_tokens``, EOS appended;
        a blank line gives just EOS instead of an error."""
        return self.tokenizer.encode(clean_text(text))[: self.max_tokens - 1] + [self.cfg.eos_id]

    def translate(self, text: str, beam: int = 4, scale: float | None = None, head_mask=None) -> str:
        _, ids = self._ids(text, "source sentence", [])
        return self.translate_batch([ids], beam=beam, scale=scale, head_mask=head_mask)[0]

    @torch.inference_mode()
    def translate_batch(
        self, batch_ids: list[list[int]], beam: int = 4, scale: float | None = None, head_mask=None,
        as_alone: bool = False,
    ) -> list[str]:
        """Token-id lists (EOS included) -> translations; one padded batch.

        ``scale`` and ``head_mask`` (see ``model.network.heads.check_head_mask``) act on this call only. Alone, a
        sentence's search stops at ``max_output_length`` of its own length; in a padded batch the limit is the
        longest sentence's. With ``as_alone``, a sentence whose output reaches its own limit (a model that never
        says EOS) is searched again alone, so that it gets exactly its unbatched answer (the app's batches).
        """
        outs = self._search(batch_ids, beam, scale, head_mask)
        if as_alone and len(batch_ids) > 1:
            outs = [self._search([ids], beam, scale, head_mask)[0]  # it ran into its own length limit: as alone
                    if len(out) + 1 >= max_output_length(len(ids), self.model) else out
                    for ids, out in zip(batch_ids, outs)]
        return [self.tokenizer.decode(ids) for ids in outs]

    def _search(self, batch_ids: list[list[int]], beam: int, scale: float | None, head_mask) -> list[list[int]]:
        src = padded(batch_ids, self.cfg.pad_id, self.device)  # (B, S)
        if beam > 1:
            return beam_search(self.model, src, beam=beam, scale=scale, head_mask=head_mask)
        return greedy_decode(self.model, src, scale=scale, head_mask=head_mask)

    @torch.inference_mode()
    def attention(
        self, text: str, target: str | None = None, scale: float | None = None, head_mask=None
    ) -> AttentionResult:
        """Translate ``text`` greedily (or force ``target``) and return every attention map.

        For this call only: ``scale`` replaces the model's 1/sqrt(d_k) (None = the paper's); ``head_mask``
        (3, L, H) in ``KINDS`` order switches heads off, 1 = keep, 0 = that head's output zeroed before W^O
        (see ``model.network.heads.check_head_mask``). An ablated head's returned weights are still its
        softmax's: they show where it would have looked.
        """
        warnings: list[str] = []
        text, src_ids = self._ids(text, "source sentence", warnings)
        src = padded([src_ids], self.cfg.pad_id, self.device)  # (1, S)
        head_mask = check_head_mask(head_mask, self.cfg, self.model.embed.weight)
        maps = AttentionMaps()
        target = clean_text(target)
        if target:
            _, tgt_ids = self._ids(target, "given translation", warnings)
            tgt_in = padded([[self.cfg.bos_id] + tgt_ids[:-1]], self.cfg.pad_id, self.device)  # (1, T): BOS + target
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

    @torch.inference_mode()
    def source_attention(self, text: str, scales: Sequence[float | None] = (None,)) -> list[AttentionResult]:
        """The encoder's self-attention of ``text`` alone, no decode (a few ms, where a greedy decode takes tens), at
        each of ``scales`` (None = the model's 1/sqrt(d_k)), one batch row each: ``encoder_self`` as
        ``attention(text, scale=scale)`` gives it (within float rounding); no translation yet (``translation``
        empty, no target tokens, decoder maps of 0 rows). What a view of encoder self-attention can draw before the
        translation is known (the Why tab's run)."""
        warnings: list[str] = []
        text, src_ids = self._ids(text, "source sentence", warnings)
        maps = AttentionMaps()
        scale = row_scales(scales, self.cfg, self.model.embed.weight) if len(scales) > 1 else scales[0]
        self.model.encode(padded([src_ids] * len(scales), self.cfg.pad_id, self.device), scale, maps)
        tokens = self.tokenizer.pieces(src_ids[:-1]) + [EOS_PIECE]
        results = []
        for row, encoder in zip(scales, _per_row(maps.encoder_self), strict=True):  # (L, H, S, S) each
            layers, heads, s, _ = encoder.shape
            results.append(AttentionResult(
                source_text=text, translation="", source_tokens=tokens, target_tokens=[], encoder_self=encoder,
                decoder_self=np.zeros((layers, heads, 0, 0), np.float32), cross=np.zeros((layers, heads, 0, s),
                                                                                            np.float32),
                scale=float(self.cfg.scale if row is None else row), warnings=list(warnings)))
        return results

    @torch.inference_mode()
    def attention_batch(self, rows: Sequence[Encoded], scale: float | Sequence[float | None] | None = None
                        ) -> list[AttentionResult]:
        """``attention`` for many sentences at once: one ``AttentionResult`` per row, the same as each alone gives
        (maps within float rounding, ~1e-6; ``tests/test_batching.py``). Shapes: B rows, L layers, H heads.
        ``scale``: one for every row, or a list of one per row (the Why tab's run: the model as trained and with its
        scale replaced, decoded together; ``row_scales``).

        The sources are encoded as one padded batch (padded keys get weight 0 through the padding mask); rows with
        a given target are decoded in one teacher-forced pass, the others greedily step by step, each row stopping
        at its own EOS or at its own length limit (``max_output_length`` of its own source, as alone). Each row's
        maps are cut to its own lengths.
        """
        if not rows:
            return []
        model, cfg, dev = self.model, self.cfg, self.device
        scales = list(scale) if isinstance(scale, Sequence) else [scale] * len(rows)  # per row; None = 1/sqrt(d_k)
        if len(scales) != len(rows):
            raise ValueError(f"{len(scales)} scales for {len(rows)} rows")
        if len(set(scales)) > 1:
            scale = row_scales(scales, cfg, model.embed.weight)  # (B, 1, 1, 1)
        else:
            scale = scales[0]
        src = padded([r.src_ids for r in rows], cfg.pad_id, dev)  # (B, S)
        maps = AttentionMaps()
        memory, src_mask = model.encode(src, scale, maps)  # (B, S, d_model), (B, 1, 1, S)
        encoder = _per_row(maps.encoder_self)  # (B, L, H, S, S)
        forced = [i for i, r in enumerate(rows) if r.tgt_ids is not None]
        greedy = [i for i, r in enumerate(rows) if r.tgt_ids is None]
        decoded: dict[int, tuple[list[int], np.ndarray, np.ndarray]] = {}  # row -> (out ids, self, cross)

        def subset(idx: list[int]) -> tuple[torch.Tensor, torch.Tensor, float | torch.Tensor | None]:
            s = max(len(rows[i].src_ids) for i in idx)  # padding beyond the subset's longest source is dropped
            pick = torch.tensor(idx, device=dev)
            picked = scale.index_select(0, pick) if isinstance(scale, torch.Tensor) else scale
            # (n, s, d), (n, 1, 1, s), the scale (one, or (n, 1, 1, 1))
            return memory.index_select(0, pick)[:, :s], src_mask.index_select(0, pick)[..., :s], picked

        if forced:
            mem, mask, row_scale = subset(forced)
            tgt_in = padded([[cfg.bos_id] + rows[i].tgt_ids[:-1] for i in forced], cfg.pad_id, dev)  # (F, T)
            fmaps = AttentionMaps()
            model.decode(tgt_in, mem, mask, row_scale, maps=fmaps)  # causal: a row never sees the padding after it
            self_w, cross_w = _per_row(fmaps.decoder_self), _per_row(fmaps.cross)
            for j, i in enumerate(forced):
                t = len(rows[i].tgt_ids)
                decoded[i] = (rows[i].tgt_ids[:-1], self_w[j, :, :, :t, :t], cross_w[j, :, :, :t])
        if greedy:
            mem, mask, row_scale = subset(greedy)
            limits = [max_output_length(len(rows[i].src_ids), model) for i in greedy]
            outs, n_steps, gmaps = greedy_rows(model, mem, mask, limits, row_scale)
            self_w, cross_w = _per_row(gmaps.decoder_self), _per_row(gmaps.cross)
            for j, i in enumerate(greedy):
                t = n_steps[j]
                decoded[i] = (outs[j], self_w[j, :, :, :t, :t], cross_w[j, :, :, :t])
        results = []
        for i, row in enumerate(rows):
            out_ids, self_w, cross_w = decoded[i]
            s, t = len(row.src_ids), self_w.shape[-1]
            results.append(AttentionResult(
                source_text=row.text,
                translation=self.tokenizer.decode(out_ids),
                source_tokens=self.tokenizer.pieces(row.src_ids[:-1]) + [EOS_PIECE],
                target_tokens=([BOS_PIECE] + self.tokenizer.pieces(out_ids))[:t],
                encoder_self=encoder[i, :, :, :s, :s].copy(),  # copies: a view would keep the whole batch alive
                decoder_self=self_w.copy(),
                cross=cross_w[..., :s].copy(),
                teacher_forced=row.tgt_ids is not None,
                scale=float(cfg.scale if scales[i] is None else scales[i]),
                warnings=row.warnings,
                target_ids=list(out_ids),
            ))
        return results

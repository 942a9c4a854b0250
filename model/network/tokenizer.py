"""One joint English+German SentencePiece vocabulary (§3.4 shares it between encoder and decoder)."""

from __future__ import annotations

import io
from pathlib import Path

import sentencepiece as spm

from model.network.config import TransformerConfig


class Tokenizer:
    """Thin wrapper: ids are plain lists, special ids match TransformerConfig."""

    def __init__(self, path: str | Path):
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: SentencePiece model not found")
        self.sp = spm.SentencePieceProcessor()
        try:
            self.sp.Load(str(path))
        except (OSError, RuntimeError) as exc:
            raise ValueError(f"{path}: not a valid SentencePiece model ({exc})") from None
        self.path = path

    @property
    def vocab_size(self) -> int:
        return self.sp.GetPieceSize()

    @property
    def byte_fallback(self) -> bool:
        """Whether unseen characters become byte pieces (<0x00>..<0xFF>) rather than <unk>."""
        return any(self.sp.IsByte(i) for i in range(self.vocab_size))

    def check_matches(self, cfg: TransformerConfig) -> None:
        specials = (self.sp.pad_id(), self.sp.bos_id(), self.sp.eos_id(), self.sp.unk_id())
        if self.vocab_size != cfg.vocab_size or specials != (cfg.pad_id, cfg.bos_id, cfg.eos_id, cfg.unk_id):
            raise ValueError(
                f"{self.path}: tokenizer (vocab {self.vocab_size}, pad/bos/eos/unk {specials}) does not match the "
                f"model config (vocab {cfg.vocab_size}, {(cfg.pad_id, cfg.bos_id, cfg.eos_id, cfg.unk_id)})"
            )

    def encode(self, text: str) -> list[int]:
        return self.sp.EncodeAsIds(text)

    def decode(self, ids: list[int]) -> str:
        return self.sp.DecodeIds([int(i) for i in ids])

    def pieces(self, ids: list[int]) -> list[str]:
        """One display piece per id: SentencePiece's own, except byte-fallback pieces (see `readable_bytes`)."""
        ids = [int(i) for i in ids]
        return readable_bytes([self.sp.IdToPiece(i) for i in ids], [self.sp.IsByte(i) for i in ids])


_SUBSCRIPTS = str.maketrans("0123456789", "\u2080\u2081\u2082\u2083\u2084\u2085\u2086\u2087\u2088\u2089")


def readable_bytes(pieces: list[str], is_byte: list[bool]) -> list[str]:
    """Byte-fallback pieces ("<0x3C>") shown as the characters they spell, one label per piece.

    A one-byte character is shown as itself ("<0x3C>" -> "<"). The k pieces of a multi-byte character are
    grouped by repeating the character with its byte number, "🙂₁" … "🙂₄", so the rows and columns of a
    heatmap still match the model's positions one to one. Bytes that spell no valid UTF-8 keep their
    "<0x..>" name. Not byte pieces are returned unchanged.
    """
    out = list(pieces)
    i = 0
    while i < len(out):
        if not is_byte[i]:
            i += 1
            continue
        j = i
        while j < len(out) and is_byte[j]:
            j += 1
        run = bytes(int(p[3:-1], 16) for p in pieces[i:j])  # "<0xF0>" -> 0xF0
        pos = 0
        while pos < len(run):
            for width in (1, 2, 3, 4):
                try:
                    char = run[pos : pos + width].decode("utf-8")
                    break
                except UnicodeDecodeError:
                    char = None
            if char is None:  # not valid UTF-8 here: keep the byte's own name
                pos += 1
                continue
            for k in range(width):
                out[i + pos + k] = char if width == 1 else char + str(k + 1).translate(_SUBSCRIPTS)
            pos += width
        i = j
    return out


# Byte fallback spends 256 pieces on the bytes <0x00>..<0xFF>: any character the training text lacks
# becomes its UTF-8 bytes instead of <unk>. Vocabularies too small to spare them (test configs) go without.
BYTE_FALLBACK_MIN_VOCAB = 1024


def train_tokenizer(texts: list[str], out_path: str | Path, vocab_size: int) -> Tokenizer:
    """Train a unigram SentencePiece model in memory on ``texts`` (the training split only).

    At most ``vocab_size`` pieces; fewer if the text is too small to fill them. With byte fallback
    from ``BYTE_FALLBACK_MIN_VOCAB`` pieces up.
    """
    model = io.BytesIO()
    spm.SentencePieceTrainer.Train(
        sentence_iterator=iter(texts),
        model_writer=model,
        vocab_size=vocab_size,
        model_type="unigram",
        character_coverage=1.0,
        pad_id=0,
        bos_id=1,
        eos_id=2,
        unk_id=3,
        input_sentence_size=len(texts),
        shuffle_input_sentence=False,
        hard_vocab_limit=False,  # a tiny corpus yields fewer pieces; the caller adopts the real size
        byte_fallback=vocab_size >= BYTE_FALLBACK_MIN_VOCAB,
        minloglevel=2,
    )
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_bytes(model.getvalue())
    return Tokenizer(out_path)

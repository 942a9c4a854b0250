"""One joint English+German SentencePiece vocabulary (§3.4 shares it between encoder and decoder)."""

from __future__ import annotations

import io
from pathlib import Path

import sentencepiece as spm

from model.config import TransformerConfig

PIECE_SPACE = "\u2581"  # SentencePiece's word-start marker


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
        return [self.sp.IdToPiece(int(i)) for i in ids]


def train_tokenizer(texts: list[str], out_path: str | Path, vocab_size: int) -> Tokenizer:
    """Train a unigram SentencePiece model in memory on ``texts`` (the training split only).

    At most ``vocab_size`` pieces; fewer if the text is too small to fill them.
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
        minloglevel=2,
    )
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_bytes(model.getvalue())
    return Tokenizer(out_path)

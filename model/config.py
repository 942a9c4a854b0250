"""The one configuration dataclass of the model, with the paper's presets.

Saved inside every checkpoint folder as ``config.json``. Only architecture lives here;
optimisation settings are command-line flags of ``model.train`` (recorded in its log).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path


@dataclass(frozen=True)
class TransformerConfig:
    vocab_size: int = 8000  # one joint En+De SentencePiece vocabulary (§3.4 shares it)
    d_model: int = 512
    n_heads: int = 8  # h
    d_ff: int = 2048
    n_layers: int = 6  # N, each side
    dropout: float = 0.1  # §5.4 P_drop
    # Not in the paper (tensor2tensor has both): dropout on the attention weights and on the FFN's ReLU
    # output, while training. 0 = the paper's model. The maps the app shows are never dropped.
    attn_dropout: float = 0.0
    relu_dropout: float = 0.0
    max_len: int = 256  # longest sequence the positional table covers
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    unk_id: int = 3
    # §3.2.1: softmax(QK^T * scale). None means the paper's 1/sqrt(d_k). A forward pass can
    # override it (the app's scaling demo) without touching the shared model.
    attn_scale: float | None = None

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        for name in ("vocab_size", "d_model", "n_heads", "d_ff", "n_layers", "max_len"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        for name in ("dropout", "attn_dropout", "relu_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {getattr(self, name)}")

    @property
    def d_k(self) -> int:  # §3.2.2: d_k = d_v = d_model / h
        return self.d_model // self.n_heads

    @property
    def scale(self) -> float:
        return self.attn_scale if self.attn_scale is not None else 1.0 / math.sqrt(self.d_k)

    def with_(self, **changes) -> TransformerConfig:
        return replace(self, **changes)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict) -> TransformerConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown config keys: {', '.join(unknown)}")
        return cls(**data)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json() + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> TransformerConfig:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


# Table 3 of the paper.
PAPER_BASE = TransformerConfig(vocab_size=37000, d_model=512, n_heads=8, d_ff=2048, n_layers=6, dropout=0.1)
PAPER_BIG = TransformerConfig(vocab_size=37000, d_model=1024, n_heads=16, d_ff=4096, n_layers=6, dropout=0.3)
# What we ship: N=6, h=8 like the paper, narrow enough to train on two CPU cores. d_model=192 rather
# than 128: with bf16 autocast (AMX) a step costs what a d_model=128 step costs in fp32 (see model card).
MULTI30K_SMALL = TransformerConfig(vocab_size=8000, d_model=192, n_heads=8, d_ff=768, n_layers=6, dropout=0.1)
# For tests: seconds on a CPU.
TINY = TransformerConfig(vocab_size=64, d_model=32, n_heads=4, d_ff=64, n_layers=2, dropout=0.0, max_len=64)

PRESETS: dict[str, TransformerConfig] = {
    "paper_base": PAPER_BASE,
    "paper_big": PAPER_BIG,
    "multi30k_small": MULTI30K_SMALL,
    "tiny": TINY,
}

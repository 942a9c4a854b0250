"""The one configuration dataclass of the model, with the paper's presets.

Saved inside every checkpoint folder as ``config.json``. Only architecture lives here;
optimisation settings are command-line flags of ``model.train`` (recorded in its log).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path

ATTENTIONS = ("dot", "additive")


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
    # The lab's siblings change the score function: "dot" is §3.2.1's scaled dot product; scaled=False drops
    # its 1/sqrt(d_k) (footnote 4's unscaled model); "additive" is Bahdanau's v^T tanh(q W + k W) per head.
    attention: str = "dot"
    scaled: bool = True
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    unk_id: int = 3

    def __post_init__(self) -> None:
        sizes = ("vocab_size", "d_model", "n_heads", "d_ff", "n_layers", "max_len")
        for name in (*sizes, "pad_id", "bos_id", "eos_id", "unk_id"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"{name} must be an integer, got {value!r}")
        for name in sizes:
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        if not 0 <= self.pad_id < self.vocab_size:  # the embedding's padding row
            raise ValueError(f"pad_id={self.pad_id} is not a token id of a {self.vocab_size}-piece vocabulary")
        if self.attention not in ATTENTIONS:
            raise ValueError(f"attention must be one of {', '.join(ATTENTIONS)}, got {self.attention!r}")
        if not isinstance(self.scaled, bool):
            raise ValueError(f"scaled must be true or false, got {self.scaled!r}")
        for name in ("dropout", "attn_dropout", "relu_dropout"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or isinstance(value, bool) or not 0.0 <= value < 1.0:
                raise ValueError(f"{name} must be a number in [0, 1), got {value!r}")

    @property
    def d_k(self) -> int:  # §3.2.2: d_k = d_v = d_model / h
        return self.d_model // self.n_heads

    @property
    def scale(self) -> float:
        """The factor the model was trained with: §3.2.1's 1/sqrt(d_k), or 1 for an unscaled or additive model.
        A forward pass can use another (``scale=``) without touching the shared model."""
        return 1.0 / math.sqrt(self.d_k) if self.scaled and self.attention == "dot" else 1.0

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict) -> TransformerConfig:
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object of config values, got {type(data).__name__}")
        data = dict(data)
        # Configs written before the scale became a per-call value (e.g. runs/v2) hold "attn_scale": null,
        # which meant the paper's 1/sqrt(d_k): drop it. Any other value would now be silently ignored: refuse.
        if "attn_scale" in data and data.pop("attn_scale") is not None:
            raise ValueError("attn_scale is no longer a config value (the scale is 1/sqrt(d_k); pass scale= per call)")
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
# What we ship: N=6, h=8 like the paper, narrow enough to train on two CPU cores.
MULTI30K_SMALL = TransformerConfig(vocab_size=8000, d_model=192, n_heads=8, d_ff=768, n_layers=6, dropout=0.1)
# For tests: seconds on a CPU.
# max_len: the app's input limit (MAX_TOKENS) needs that many positions (model.network.checkpoint.check_servable)
TINY = TransformerConfig(vocab_size=64, d_model=32, n_heads=4, d_ff=64, n_layers=2, dropout=0.0, max_len=128)

PRESETS: dict[str, TransformerConfig] = {
    "paper_base": PAPER_BASE,
    "paper_big": PAPER_BIG,
    "multi30k_small": MULTI30K_SMALL,
    "tiny": TINY,
}

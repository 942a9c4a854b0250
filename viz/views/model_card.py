"""The Model card tab: the card shipped beside the weights, and where the model runs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from model.training.export import CARD  # the file name model.export writes the card to

if TYPE_CHECKING:
    from model.network.config import TransformerConfig


def header(cfg: TransformerConfig) -> str:
    """The app's title and what it shows, above every tab."""
    return ("# Attention Is All You Need — see how a Transformer attends\n"
            f"A {cfg.n_layers}-layer, {cfg.n_heads}-head Transformer (d_model = {cfg.d_model}) written from scratch "
            "and trained on Multi30k English→German. Type a sentence and look at every head of every layer.")


def model_card(folder: str | Path, device_label: str) -> str:
    path = Path(folder) / CARD
    card = path.read_text(encoding="utf-8") if path.is_file() else "No model card was shipped."
    return f"Model running on **{device_label}**.\n\n" + card

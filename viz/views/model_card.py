"""The Model card tab: the card shipped beside the weights, and where the model runs."""

from __future__ import annotations

from pathlib import Path

from model.export import CARD  # the file name model.export writes the card to


def model_card(folder: str | Path, device_label: str) -> str:
    path = Path(folder) / CARD
    card = path.read_text(encoding="utf-8") if path.is_file() else "No model card was shipped."
    return f"Model running on **{device_label}**.\n\n" + card

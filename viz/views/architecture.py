"""The Architecture tab: Figures 1 and 2 from the running model's config, and clicks on attention blocks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from viz.architecture import figure1_svg
from viz.vocab import KINDS

if TYPE_CHECKING:
    from model.config import TransformerConfig
    from model.inference import AttentionResult


def figure1_for(cfg: TransformerConfig, result: AttentionResult | None) -> str:
    """Figure 1, with the tensor shapes of the session's sentence once it has one."""
    if result is None:
        return figure1_svg(cfg)
    return figure1_svg(cfg, len(result.source_tokens), len(result.target_tokens))


def kind_from_click(message: str) -> str | None:
    """'kind|nonce' (the page script's message for a click on an attention block) -> the kind, or None."""
    kind = (message or "").split("|")[0]
    return kind if kind in KINDS else None

"""The Architecture tab: Figures 1 and 2 from the running model's config, and clicks on attention blocks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from model.terms import KINDS
from viz.architecture import figure1_svg
from viz.views.attention.maps import check_view
from viz.views.attention.share import View, opens
from viz.views.outputs import SKIP, Update, open_tab

if TYPE_CHECKING:
    from model.network.config import TransformerConfig
    from model.network.inference import AttentionResult

INTRO = ("Figure 1 and Figure 2 of the paper, drawn from the running model's configuration. Hover a block for its "
         "size; click an attention block to see its heatmaps.")


def figure1_for(cfg: TransformerConfig, result: AttentionResult | None) -> str:
    """Figure 1, with the tensor shapes of the session's sentence once it has one."""
    if result is None:
        return figure1_svg(cfg)
    return figure1_svg(cfg, len(result.source_tokens), len(result.target_tokens))


def kind_from_click(message: str) -> str | None:
    """'kind|nonce' (the page script's message for a click on an attention block) -> the kind, or None."""
    kind = (message or "").split("|")[0]
    return kind if kind in KINDS else None


def open_block(message: str) -> tuple[str, Update] | tuple[Update, Update]:
    """A click on an attention block of Figure 1: (its kind, the Attention tab opened), or no change."""
    kind = kind_from_click(message)
    return (kind, open_tab("attention")) if kind else (SKIP, SKIP)


def show(cfg: TransformerConfig, kind: str, layer) -> tuple[str, int, Update]:
    """The tab's "Show these heatmaps": (kind, layer) on the Attention tab, opened."""
    kind, layer, _ = check_view(cfg, kind, layer)
    return kind, layer, open_tab("attention")


def open_link(link: View | None, kind, layer) -> tuple:
    """A link that names this tab (viz.views.attention.share): the Attention tab's kind and layer, opened from the
    same link, in this tab's selectors, and the tab opened; any other link changes nothing."""
    return (kind, layer, open_tab("architecture")) if opens(link, "architecture") else (SKIP, SKIP, SKIP)

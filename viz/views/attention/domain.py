"""Out-of-domain honesty: a short notice beside the model's translation when the sentence is far from the 29,000 image
captions the model learnt from (the rule: ``model.probes.domain``; the numbers are the model's and its tokenizer's).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from viz.text import md_escape, plain_token
from viz.views.outputs import Update

if TYPE_CHECKING:
    from model.network.inference import AttentionResult
    from model.probes.domain import Calibration, DomainCheck

SHOWN_RARE = 4  # rare pieces named in the notice


def notice_text(check: DomainCheck, cal: Calibration) -> str:
    """"⚠️ Far from the 29,000 image captions the model learnt from: …": the signs that fired, each with its number
    against the captions' own (short: it sits beside the translation)."""
    parts = []
    if "long" in check.signs:
        parts.append(f"long ({check.pieces} pieces; 99% of the captions ≤ {cal.long_pieces})")
    if "rare" in check.signs:
        named = ", ".join(f"“{md_escape(plain_token(p))}”" for p in check.rare_pieces[:SHOWN_RARE])
        more = len(check.rare_pieces) - SHOWN_RARE
        parts.append(f"{len(check.rare_pieces)} pieces the captions hardly had ({named}"
                     + (f" and {more} more" if more > 0 else "") + ")")
    if "unsure" in check.signs:
        parts.append(f"the model is unsure of its words (mean probability {check.mean_probability:.2f} a token; "
                     f"99% of the captions ≥ {math.exp(cal.low_confidence):.2f})")
    return (f"⚠️ **Far from the {cal.train_sentences:,} image captions the model learnt from:** " + "; ".join(parts)
            + ". Expect mistakes (Model card: “What the model is bad at”).")


def domain_notice(check: Callable[[str], DomainCheck | None], cal: Calibration | None,
                  result: AttentionResult | None) -> Update:
    """The notice beside the translation for ``result``'s sentence (the model's own translation of it, whatever was
    shown), visible only where the rule says the sentence is far from the captions."""
    if result is None or cal is None:
        return Update(value="", visible=False)
    found = check(result.source_text)
    if found is None or not found.far:
        return Update(value="", visible=False)
    return Update(value=notice_text(found, cal), visible=True)

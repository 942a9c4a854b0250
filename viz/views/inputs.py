"""Every value a listener takes from the page or the raw HTTP API, checked before it is used.

The app's events that check their values here skip Gradio's own preprocessing (``preprocess=False``): Gradio
answers a value its component cannot read ("abc" for a slider, NaN for a whole number) with an error that carries
no message. So a value here may be anything JSON holds: null, true, a string, a list, NaN or ±Infinity (Python's
JSON reader accepts them). Each check returns the value as the view uses it, or raises ValueError whose
message names the input, says what it got and what to send instead (the app shows it as text, escaped). Before
any of this, every event's number of values and its checkboxes (true or false, nothing else), and every value of
an event that does use Gradio's preprocessing, are checked against the page's controls (``viz.ui.values``).

Rules: a whole number (layer, head, beam, log₂ d_k, keys, seed) is a JSON number with no fractional part
(2.0 is 2, 2.5 is an error, never silently 2) or a string of digits ("3", as a query string carries it);
a real number (scale, factor) must be a JSON number. Booleans are not numbers. A sentence is a string
(null = empty) of at most ``MAX_CHARS`` characters.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from model.terms import KINDS, MAX_BEAM, MAX_SCALE
from viz.vocab import MAX_CHARS, MEAN

if TYPE_CHECKING:
    from model.network.config import TransformerConfig

LOG2_DK_RANGE = (0, 10)  # d_k = 1 … 1024 in the footnote-4 demo
N_KEYS_RANGE = (2, 64)
SEED_RANGE = (0, 2**31 - 1)
_DIGITS = re.compile(r"\s*[+-]?\d{1,18}\s*", re.ASCII)  # a whole number sent as a string: "3"


def shown(value) -> str:
    """A value as the message quotes it: JSON spelling (null, true, NaN, "text"), at most 40 characters."""
    if isinstance(value, float) and not math.isfinite(value):
        text = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    else:
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            text = type(value).__name__
    return text if len(text) <= 40 else text[:39] + "…"


def _number(value, what: str) -> float:
    """``value`` as a finite float, or a ValueError that says ``what`` is wanted."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what}; got {shown(value)}, send a number.")
    if not math.isfinite(value):
        raise ValueError(f"{what}; got {shown(value)}.")
    return float(value)


def whole_number(value, name: str, lo: int, hi: int, note: str = "") -> int:
    """``value`` as an int in [lo, hi]; a string of digits counts, a fractional number does not."""
    what = f"{name} must be between {lo} and {hi} (a whole number{note})"
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        value = int(value)
    number = _number(value, what)
    if number != int(number) or not lo <= number <= hi:
        raise ValueError(f"{what}; got {shown(value)}.")
    return int(number)


def real_number(value, what: str, lo: float, hi: float, lo_open: bool = False) -> float:
    """``value`` as a float in [lo, hi] (or (lo, hi] with ``lo_open``); ``what`` says which numbers are wanted."""
    number = _number(value, what)
    if number < lo or number > hi or (lo_open and number == lo):
        raise ValueError(f"{what}; got {shown(value)}.")
    return number


# ------------------------------------------------------------------------------------ the app's inputs
def check_text(value, what: str = "sentence") -> str:
    """A sentence as typed: a string (null = "", which the model answers with "please type a sentence")."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"The {what} must be text (a string); got {shown(value)}.")
    if len(value) > MAX_CHARS:
        raise ValueError(f"The {what} has {len(value):,} characters: shorten it to {MAX_CHARS:,} "
                         "(the model reads its first 100 tokens).")
    return value


def check_kind(value) -> str:
    if not isinstance(value, str) or value not in KINDS:
        quoted = repr(value[:40]) if isinstance(value, str) else shown(value)
        raise ValueError(f"Unknown attention kind {quoted}: choose one of {', '.join(KINDS)}.")
    return value


def _view_range(cfg: TransformerConfig) -> str:
    return f"Layer must be 1–{cfg.n_layers} and head 0–{cfg.n_heads} (0 = mean over heads)"


def check_layer(cfg: TransformerConfig, value) -> int:
    """A layer number, 1 … N."""
    try:
        return whole_number(value, "layer", 1, cfg.n_layers)
    except ValueError:
        raise ValueError(f"{_view_range(cfg)}, whole numbers; got layer {shown(value)}.") from None


def check_head(cfg: TransformerConfig, value) -> int:
    """A head number, 1 … h, or 0 = ``MEAN`` (null means the mean too)."""
    if value is None:
        return MEAN
    try:
        return whole_number(value, "head", 0, cfg.n_heads)
    except ValueError:
        raise ValueError(f"{_view_range(cfg)}, whole numbers; got head {shown(value)}.") from None


def check_beam(value) -> int:
    """The beam size of /translate, 1 (greedy) … ``MAX_BEAM``."""
    return whole_number(value, "Beam size", 1, MAX_BEAM, "; 1 = greedy, 4 = the paper's")


def check_scale(value) -> float | None:
    """null (the model's own 1/√d_k) or a factor in (0, ``MAX_SCALE``]."""
    if value is None:
        return None
    what = f"scale must be a positive number up to {MAX_SCALE:g} (null = the model's own 1/sqrt(d_k))"
    return real_number(value, what, 0.0, MAX_SCALE, lo_open=True)


def check_tab_factor(value) -> float:
    """The "Why 1/√d_k" tab's slider: the factor on every q·k of that tab, 0 … 1 (1 = no scaling)."""
    what = "The scale factor must be between 0 and 1 (it multiplies every q·k; 1 = no scaling)"
    return real_number(value, what, 0.0, 1.0)


def check_log2_dk(value) -> int:
    return whole_number(value, "log₂ d_k", *LOG2_DK_RANGE, f"; d_k = 1 … {2 ** LOG2_DK_RANGE[1]}")


def check_n_keys(value) -> int:
    return whole_number(value, "The number of keys", *N_KEYS_RANGE)


def check_seed(value) -> int:
    return whole_number(value, "The seed", *SEED_RANGE)


def checked(present: Callable, **checks: Callable) -> Callable:
    """``present`` with some of its arguments, by name, passed through a check first (``checks``: parameter
    name -> check). For presenters that do not check their own inputs; its signature stays ``present``'s."""
    signature = inspect.signature(present)
    unknown = set(checks) - set(signature.parameters)
    if unknown:
        raise TypeError(f"{present.__name__} has no parameter {', '.join(sorted(unknown))}")

    @functools.wraps(present)
    def run(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        for name, check in checks.items():
            if name in bound.arguments:
                bound.arguments[name] = check(bound.arguments[name])
        return present(*bound.args, **bound.kwargs)

    return run

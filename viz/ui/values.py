"""Every value an event takes, checked against what the page can send, before Gradio reads it
(``viz.ui.patches.answer_every_value`` runs this for every event, page-only ones included).

Two checks, each a ValueError whose message names the inputs (the app turns it into the error's message):

- ``check_count``: an event takes exactly its inputs' values, in order. Through ``/gradio_api/call/<name>`` a
  value a session holds (a ``gr.State``: the session's sentence) may be left out, or sent as null in its place.
  Gradio 6.31.0 answers too few with an error that carries no message, and too many silently.
- ``check_value``: a value as its component would send it. For an event that reads its inputs through
  Gradio's components (``preprocess=True``), every value: a Checkbox true or false; a Radio, Dropdown or
  CheckboxGroup one of its choices (the session's: an event may have changed them); a Slider or Number a finite
  number in its range (a whole one where its step is 1); a Textbox a string no longer than its
  ``max_length``. Gradio 6.31.0 would answer these with Python's words ("(type: <class 'str'>)") or with no
  message at all. An event that checks its own inputs (``preprocess=False``, ``viz.views.inputs``) gets only its
  checkboxes checked here: no presenter takes anything but true or false for one.

Null is a value only where the component holds none itself (a Radio before it has choices, a Textbox).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import gradio as gr

from viz.views.inputs import shown

SHOWN_CHOICES = 8  # a message lists at most this many choices
MAX_LABEL = 40  # a longer label is left out of a message (its input's name stays)


def input_names(block_fn) -> list[str]:
    """The names of an event's inputs, as the API page gives them (its function's parameters, a trailing "_"
    dropped), else the component's label."""
    params = list(getattr(block_fn, "input_parameter_names", None) or [])
    names = []
    for i, block in enumerate(block_fn.inputs):
        name = params[i] if i < len(params) else None
        names.append((name or "").rstrip("_") or getattr(block, "label", None) or f"value {i + 1}")
    return names


def event_name(block_fn) -> str:
    return f"/{block_fn.api_name}" if block_fn.api_visibility != "private" else f"This event ({block_fn.api_name})"


def check_count(block_fn, values: Sequence) -> None:
    """``values`` are as many as ``block_fn``'s inputs (Gradio has already put null in the session's places when
    a raw call left them out); else a ValueError naming what to send."""
    n = len(block_fn.inputs)
    if len(values) == n:
        return
    names = input_names(block_fn)
    held = [name for name, block in zip(names, block_fn.inputs, strict=True) if isinstance(block, gr.State)]
    sent = [name for name, block in zip(names, block_fn.inputs, strict=True) if not isinstance(block, gr.State)]
    wanted = f"{len(sent)} value{'s' * (len(sent) != 1)}" + (f" ({', '.join(sent)})" if sent else "")
    if held:
        wanted += f", or {n} with null for what the session holds ({', '.join(held)}) in its place"
    raise ValueError(f"{event_name(block_fn)} takes {wanted}; got {len(values)}.")


def check_values(block_fn, values: Sequence, blocks: dict) -> None:
    """Each value against its component (``blocks``: the session's copy of each, by id: an event may have changed
    its choices or range); only checkboxes for an event that checks its own inputs."""
    for name, block, value in zip(input_names(block_fn), block_fn.inputs, values, strict=True):
        if isinstance(block, gr.State) or (not block_fn.preprocess and not isinstance(block, gr.Checkbox)):
            continue
        check_value(blocks.get(block._id, block), value, name, empty=getattr(block, "value", None) is None)


def check_value(block, value, name: str, empty: bool = False) -> None:
    """``value`` as ``block`` (a component, as the session has it) would send it, else a ValueError that names the
    input (``name``), quotes the value and says what to send. ``empty``: the component starts with no value, so
    null is one (Gradio 6.31.0 keeps no value in the session's copy of a component an event updated)."""
    label = getattr(block, "label", None)
    what = f"{label} ({name})" if label and label != name and len(label) <= MAX_LABEL else name
    problem = None if value is None and (empty or isinstance(block, gr.Textbox)) else _problem(block, value)
    if problem:
        raise ValueError(f"{what} {problem}; got {shown(value)}.")


def _problem(block, value) -> str | None:
    """What ``value`` should have been for ``block``, or None if it is one the page can send."""
    if value is None:
        return _wanted(block)
    if isinstance(block, gr.Checkbox):
        return None if isinstance(value, bool) else _wanted(block)
    if isinstance(block, (gr.Radio, gr.Dropdown, gr.CheckboxGroup)):
        values = [choice[1] if isinstance(choice, (tuple, list)) else choice for choice in block.choices or []]
        if isinstance(block, gr.CheckboxGroup) or getattr(block, "multiselect", False):
            if isinstance(value, list) and all(_is_one_of(v, values) for v in value):
                return None
        elif _is_one_of(value, values) or (getattr(block, "allow_custom_value", False) and isinstance(value, str)):
            return None
        return _wanted(block)
    if isinstance(block, (gr.Slider, gr.Number)):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        lo, hi = getattr(block, "minimum", None), getattr(block, "maximum", None)
        ok = ok and (lo is None or value >= lo) and (hi is None or value <= hi)
        return None if ok and not (_whole(block) and value != int(value)) else _wanted(block)
    if isinstance(block, gr.Textbox):
        limit = getattr(block, "max_length", None)
        if not isinstance(value, str):
            return "must be text (a string)"
        return f"must be at most {limit:,} characters" if limit and len(value) > limit else None
    return None


def _whole(block) -> bool:
    step, lo = getattr(block, "step", None), getattr(block, "minimum", None)
    if isinstance(block, gr.Number):
        return getattr(block, "precision", None) == 0
    return step is not None and float(step).is_integer() and (lo is None or float(lo).is_integer())


def _wanted(block) -> str:
    if isinstance(block, gr.Checkbox):
        return "must be true or false"
    if isinstance(block, (gr.Radio, gr.Dropdown, gr.CheckboxGroup)):
        values = [choice[1] if isinstance(choice, (tuple, list)) else choice for choice in block.choices or []]
        listed = ", ".join(shown(v) for v in values[:SHOWN_CHOICES])
        listed += f", … ({len(values)} in all)" if len(values) > SHOWN_CHOICES else ""
        several = isinstance(block, gr.CheckboxGroup) or getattr(block, "multiselect", False)
        return f"must be a list of {listed}" if several else f"must be one of {listed}"
    lo, hi = getattr(block, "minimum", None), getattr(block, "maximum", None)
    kind = "a whole number" if _whole(block) else "a number"
    if lo is not None and hi is not None:
        return f"must be {kind} from {lo:g} to {hi:g}"
    return f"must be {kind}"


def _is_one_of(value, values: Sequence) -> bool:
    """``value`` is one of ``values``, the JSON way: true is not 1, 1.0 is 1, NaN is nothing."""
    for choice in values:
        if isinstance(value, bool) or isinstance(choice, bool):
            if value is choice:
                return True
        elif isinstance(value, (int, float)) and isinstance(choice, (int, float)):
            if value == choice:
                return True
        elif type(value) is type(choice) and value == choice:
            return True
    return False

"""One batch of the app's calls, as the batcher runs it (in the server's process or in the model process):
``run_batch``. Each call is one request; a bad sentence becomes its own ValueError and fails its own call only.

The padded batch itself is the network's (``Translator.attention_batch``, ``Translator.translate_batch``), the same
path the probes use; here the requests are read (a ValueError in place of a bad one) and the results put back in
their order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from model.network.inference import AttentionResult, Translator


def run_batch(translator: Translator, group: tuple, items: list) -> list:
    """One batch of ``BatchedTranslator``: ``group`` = ("attention", scale) with (text, target) items,
    ("attention_rows",) with (text, target, scale) items (a scale per row: ``attention_rows``), or
    ("translate", beam, scale) with texts; one result or ValueError per item. A batch of one takes
    ``Translator``'s own path (exactly the unbatched call). ("translate_ids", beam, mask_key(head_mask)): each item
    a probe's own padded batch of token-id lists (the ablation's sample), translated as it is."""
    kind, *args = group
    if kind == "translate_ids":
        return [translator.translate_batch(ids, beam=args[0], head_mask=head_mask(args[1])) for ids in items]
    if kind == "attention_rows":
        return attention_rows(translator, items)
    if len(items) == 1:
        try:
            if kind == "attention":
                return [translator.attention(*items[0], scale=args[0])]
            return [translator.translate(items[0], beam=args[0], scale=args[1])]
        except ValueError as exc:
            return [exc]
    if kind == "attention":
        return attention_requests(translator, items, scale=args[0])
    return translate_requests(translator, items, beam=args[0], scale=args[1])


def mask_key(mask) -> tuple | None:
    """A head mask (an array, or None) as a batch's group can hold it (hashable, compared by value, picklable)."""
    if mask is None:
        return None
    mask = np.asarray(mask)
    return mask.shape, str(mask.dtype), mask.tobytes()


def head_mask(key: tuple | None):
    """The head mask ``mask_key`` made ``key`` from."""
    if key is None:
        return None
    shape, dtype, raw = key
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def attention_requests(
    translator: Translator, requests: Sequence[tuple[str, str | None]],
    scale: float | Sequence[float | None] | None = None,
) -> list[AttentionResult | ValueError]:
    """``Translator.attention(text, target, scale)`` for every (text, target) at once, in one padded batch (``scale``:
    one for all, or a list of one per request); a request whose sentence is bad gets its ValueError in its place
    instead of a result."""
    results, good = _read(lambda request: translator.encode_request(*request), requests)
    scales = [scale[i] for i in good] if isinstance(scale, Sequence) else scale
    if good:
        for i, result in zip(good, translator.attention_batch([results[i] for i in good], scales)):
            results[i] = result
    return results


def attention_rows(
    translator: Translator, requests: Sequence[tuple[str, str | None, float | None]]
) -> list[AttentionResult | ValueError]:
    """``Translator.attention(text, target, scale)`` for every (text, target, scale), each with its own scale, in one
    padded batch (the Why tab's run: the model as trained and with its scale replaced, decoded together: the same
    tokens as each alone, maps within float rounding); one request alone takes ``Translator``'s own path."""
    if len(requests) == 1:
        try:
            return [translator.attention(*requests[0])]
        except ValueError as exc:
            return [exc]
    return attention_requests(translator, [(text, target) for text, target, _ in requests],
                              [scale for _, _, scale in requests])


def translate_requests(
    translator: Translator, texts: Sequence[str], beam: int = 4, scale: float | None = None
) -> list[str | ValueError]:
    """``Translator.translate(text, beam, scale)`` for every text at once, each exactly its unbatched answer; a bad
    one gets its ValueError."""
    results, good = _read(lambda text: translator.encode_input(text)[1], texts)
    if good:
        outs = translator.translate_batch([results[i] for i in good], beam=beam, scale=scale, as_alone=True)
        for i, out in zip(good, outs):
            results[i] = out
    return results


def _read(encode: Callable[[Any], Any], items: Sequence) -> tuple[list, list[int]]:
    """(``encode(item)`` or its ValueError, per item; the positions of the items that were read)."""
    results: list = []
    for item in items:
        try:
            results.append(encode(item))
        except ValueError as exc:
            results.append(exc)
    return results, [i for i, r in enumerate(results) if not isinstance(r, ValueError)]

"""Requests that arrive together, decoded as one padded batch (a classroom clicking within a second).

One decoding step of one sentence costs about what a step of sixteen does (the model is small; the time
goes to Python and dispatch), so the server decodes concurrent requests together:

- ``attention_batch(translator, requests, scale)``: many (text, target) pairs -> one ``AttentionResult``
  each, the same as ``Translator.attention`` gives for each alone (maps within float rounding, ~1e-6;
  ``tests/test_batching.py``). Sources are encoded as one padded batch (padded keys get weight 0 through
  the padding mask); sentences with a given target are decoded in one teacher-forced pass, the others
  greedily step by step, each row stopping at its own EOS or at its own length limit
  (``max_output_length`` of its own source, as alone). Each row's maps are cut to its own lengths.
- ``translate_batch(translator, texts, beam, scale)``: beam search (§6.1) over the padded batch.
- ``MicroBatcher``: a worker thread that takes the calls waiting (up to ``max_batch_size``, after at most
  ``max_wait_s`` for more to arrive) and runs them as one batch; ``BatchedTranslator`` puts the two above
  behind it with ``Translator``'s own signatures. A bad sentence fails its own call only.

Switches (read by ``BatchSettings.from_env``): ``ATTN_BATCH=0`` turns batching off (the bench compares
both), ``ATTN_MAX_BATCH`` (default 32), ``ATTN_BATCH_WAIT_MS`` (default 0: the calls that queued up while
the previous batch ran make the next one; a fixed wait measured +10 ms on a lone request, for nothing) and
``ATTN_BATCH_PROCESS=0`` (the batches run in the server's process instead of a model process of their own,
``model.worker``; the bench compares all three).

Shapes: B sentences, L layers, H heads, S/T the longest source/decoder length in the batch.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from model.decode import beam_search, greedy_decode, max_output_length, strip_special
from model.inference import BOS_PIECE, EOS_PIECE, AttentionResult, Translator, clean_text
from model.transformer import AttentionMaps, EncoderDecoder
from model.worker import ModelProcess, WorkerGone


# ------------------------------------------------------------------------------------- padded batches
def _padded(rows: Sequence[Sequence[int]], pad_id: int, device: torch.device) -> torch.Tensor:
    """Token-id lists -> (B, longest) padded on the right."""
    out = torch.full((len(rows), max(map(len, rows))), pad_id, dtype=torch.long)
    for i, ids in enumerate(rows):
        out[i, : len(ids)] = torch.tensor(ids, dtype=torch.long)
    return out.to(device)


def _per_row(layers: list[torch.Tensor]) -> np.ndarray:
    """Per-layer (B, H, Q, K) -> (B, L, H, Q, K) float32 numpy."""
    return torch.stack(layers, dim=1).float().cpu().numpy()


def _greedy_steps(
    model: EncoderDecoder, memory: torch.Tensor, src_mask: torch.Tensor, limits: list[int], scale: float | None
) -> tuple[list[list[int]], list[int], AttentionMaps]:
    """Greedy decoding as ``model.decode.greedy_decode`` does it, but row i stops at its own EOS or after
    ``limits[i]`` steps, and a finished row leaves the batch (its later steps would be thrown away).
    -> (output ids per row, steps per row, maps (B, H, T, T) / (B, H, T, S), zero after a row's last step)."""
    cfg, b, dev = model.cfg, memory.size(0), memory.device
    limit = torch.tensor(limits, device=dev)
    state = model.new_state()
    rows = torch.arange(b, device=dev)  # the batch rows still decoding
    token = torch.full((b, 1), cfg.bos_id, dtype=torch.long, device=dev)
    out = torch.full((b, max(limits)), cfg.pad_id, dtype=torch.long, device=dev)  # (B, T)
    n_steps = torch.zeros(b, dtype=torch.long, device=dev)
    steps = []
    for step in range(max(limits)):
        step_maps = AttentionMaps()
        logits = model.decode(token, memory, src_mask, scale, state, step_maps)  # (b, 1, V), b = rows left
        steps.append((rows, step_maps))
        token = logits[:, -1].argmax(-1, keepdim=True)  # (b, 1)
        out[rows, step] = token[:, 0]
        n_steps[rows] = step + 1
        going = (token[:, 0] != cfg.eos_id) & (step + 1 < limit[rows])
        if not going.any():
            break
        if not going.all():
            keep = going.nonzero()[:, 0]
            rows, token = rows[keep], token[keep]
            memory, src_mask = memory[keep], src_mask[keep]
            state.reorder(keep)
    t = len(steps)
    maps = AttentionMaps()
    for layer in range(cfg.n_layers):
        self_w = memory.new_zeros((b, cfg.n_heads, t, t))
        cross = memory.new_zeros((b, cfg.n_heads, t, memory.size(1)))
        for i, (at, st) in enumerate(steps):
            self_w[at, :, i, : i + 1] = st.decoder_self[layer][:, :, 0]  # (b, H, i + 1)
            cross[at, :, i] = st.cross[layer][:, :, 0]  # (b, H, S)
        maps.decoder_self.append(self_w)
        maps.cross.append(cross)
    ids, lengths = out.tolist(), n_steps.tolist()
    return [strip_special(row[:n], model) for row, n in zip(ids, lengths)], lengths, maps


@dataclass
class _Prepared:
    index: int  # position in the request list
    text: str
    src_ids: list[int]  # EOS last
    tgt_ids: list[int] | None  # EOS last; None = greedy
    warnings: list[str]


def _prepare(translator: Translator, requests: Sequence[tuple[str, str | None]]) -> tuple[list, list[_Prepared]]:
    """Encode each (text, target) as ``Translator.attention`` does; a bad one becomes its ValueError."""
    results: list = [None] * len(requests)
    prepared = []
    for i, (text, target) in enumerate(requests):
        try:
            text, src_ids, warnings = translator.encode_input(text)
            target = clean_text(target)
            if target:
                _, tgt_ids, more = translator.encode_input(target, "given translation")
                warnings += more
            else:
                tgt_ids = None
        except ValueError as exc:
            results[i] = exc
            continue
        prepared.append(_Prepared(i, text, src_ids, tgt_ids, warnings))
    return results, prepared


@torch.inference_mode()
def attention_batch(
    translator: Translator, requests: Sequence[tuple[str, str | None]], scale: float | None = None
) -> list[AttentionResult | ValueError]:
    """``Translator.attention(text, target, scale)`` for every (text, target) at once (see the module
    docstring); a request whose sentence is bad gets its ValueError in its place instead of a result."""
    results, rows = _prepare(translator, requests)
    if not rows:
        return results
    model, cfg, dev = translator.model, translator.cfg, translator.device
    src = _padded([r.src_ids for r in rows], cfg.pad_id, dev)  # (B, S)
    maps = AttentionMaps()
    memory, src_mask = model.encode(src, scale, maps)  # (B, S, d_model), (B, 1, 1, S)
    encoder = _per_row(maps.encoder_self)  # (B, L, H, S, S)
    forced = [i for i, r in enumerate(rows) if r.tgt_ids is not None]
    greedy = [i for i, r in enumerate(rows) if r.tgt_ids is None]
    decoded: dict[int, tuple[list[int], np.ndarray, np.ndarray]] = {}  # row -> (out ids, self, cross)

    def subset(idx: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        s = max(len(rows[i].src_ids) for i in idx)  # padding beyond the subset's longest source is dropped
        pick = torch.tensor(idx, device=dev)
        return memory.index_select(0, pick)[:, :s], src_mask.index_select(0, pick)[..., :s]  # (n, s, d), (n, 1, 1, s)

    if forced:
        mem, mask = subset(forced)
        tgt_in = _padded([[cfg.bos_id] + rows[i].tgt_ids[:-1] for i in forced], cfg.pad_id, dev)  # (F, T)
        fmaps = AttentionMaps()
        model.decode(tgt_in, mem, mask, scale, maps=fmaps)  # causal: a row never sees the padding after it
        self_w, cross_w = _per_row(fmaps.decoder_self), _per_row(fmaps.cross)
        for j, i in enumerate(forced):
            t = len(rows[i].tgt_ids)
            decoded[i] = (rows[i].tgt_ids[:-1], self_w[j, :, :, :t, :t], cross_w[j, :, :, :t])
    if greedy:
        mem, mask = subset(greedy)
        limits = [max_output_length(len(rows[i].src_ids), model) for i in greedy]
        outs, n_steps, gmaps = _greedy_steps(model, mem, mask, limits, scale)
        self_w, cross_w = _per_row(gmaps.decoder_self), _per_row(gmaps.cross)
        for j, i in enumerate(greedy):
            t = n_steps[j]
            decoded[i] = (outs[j], self_w[j, :, :, :t, :t], cross_w[j, :, :, :t])
    for i, row in enumerate(rows):
        out_ids, self_w, cross_w = decoded[i]
        s, t = len(row.src_ids), self_w.shape[-1]
        results[row.index] = AttentionResult(
            source_text=row.text,
            translation=translator.tokenizer.decode(out_ids),
            source_tokens=translator.tokenizer.pieces(row.src_ids[:-1]) + [EOS_PIECE],
            target_tokens=([BOS_PIECE] + translator.tokenizer.pieces(out_ids))[:t],
            encoder_self=encoder[i, :, :, :s, :s].copy(),  # copies: a view would keep the whole batch alive
            decoder_self=self_w.copy(),
            cross=cross_w[..., :s].copy(),
            teacher_forced=row.tgt_ids is not None,
            scale=float(cfg.scale if scale is None else scale),
            warnings=row.warnings,
            target_ids=list(out_ids),
        )
    return results


@torch.inference_mode()
def translate_batch(
    translator: Translator, texts: Sequence[str], beam: int = 4, scale: float | None = None
) -> list[str | ValueError]:
    """``Translator.translate(text, beam, scale)`` for every text at once; a bad one gets its ValueError.

    Alone, a sentence's search stops at ``max_output_length`` of its own length; in a padded batch the
    limit is the longest sentence's. A sentence whose output reaches its own limit (a model that never says
    EOS) is therefore searched again alone, so that it gets exactly its unbatched answer.
    """
    results: list = [None] * len(texts)
    batch: list[tuple[int, list[int]]] = []
    for i, text in enumerate(texts):
        try:
            batch.append((i, translator.encode_input(text)[1]))
        except ValueError as exc:
            results[i] = exc
    if not batch:
        return results
    model = translator.model

    def search(rows: list[list[int]]) -> list[list[int]]:
        src = _padded(rows, translator.cfg.pad_id, translator.device)
        if beam > 1:
            return beam_search(model, src, beam=beam, scale=scale)
        return greedy_decode(model, src, scale=scale)

    outs = search([ids for _, ids in batch])
    for (i, ids), out in zip(batch, outs):
        if len(batch) > 1 and len(out) + 1 >= max_output_length(len(ids), model):
            out = search([ids])[0]  # it ran into its own length limit: as alone
        results[i] = translator.tokenizer.decode(out)
    return results


# ------------------------------------------------------------------------------------------ the batcher
@dataclass(frozen=True)
class BatchSettings:
    enabled: bool = True
    max_batch_size: int = 32
    max_wait_s: float = 0.0
    process: bool = True  # the batches run in a model process of their own (model.worker)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> BatchSettings:
        """``ATTN_BATCH`` (0/false/off = off), ``ATTN_MAX_BATCH``, ``ATTN_BATCH_WAIT_MS``, ``ATTN_BATCH_PROCESS``
        (0 = the batches run in the server's own process); a bad value is a ValueError naming the variable."""
        def on(name: str) -> bool:
            return environ.get(name, "1").strip().lower() not in ("0", "false", "off", "no")

        enabled = on("ATTN_BATCH")
        try:
            size = int(environ.get("ATTN_MAX_BATCH", cls.max_batch_size))
            wait_ms = float(environ.get("ATTN_BATCH_WAIT_MS", cls.max_wait_s * 1000))
        except ValueError as exc:
            raise ValueError(f"ATTN_MAX_BATCH must be a whole number and ATTN_BATCH_WAIT_MS a number: {exc}") from None
        if not 1 <= size <= 256 or not 0 <= wait_ms <= 1000:
            raise ValueError(f"ATTN_MAX_BATCH must be 1..256 and ATTN_BATCH_WAIT_MS 0..1000, got {size}, {wait_ms}")
        return cls(enabled, size, wait_ms / 1000, on("ATTN_BATCH_PROCESS"))


class MicroBatcher:
    """Calls from many threads, run in batches by one worker thread.

    ``run(group, items) -> results`` gets up to ``max_batch_size`` items submitted with the same ``group``
    (items of different groups are never mixed), oldest first, and returns one result per item; a result
    that is an exception is raised in its caller only. The worker takes what is waiting, then waits at most
    ``max_wait_s`` for more of the same group (0: never waits).
    """

    def __init__(self, run: Callable[[Hashable, list], list], max_batch_size: int = 16, max_wait_s: float = 0.0):
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be 1 or more, got {max_batch_size}")
        self._run, self.max_batch_size, self.max_wait_s = run, max_batch_size, max_wait_s
        self._queue: deque[tuple[Hashable, Any, Future]] = deque()
        self._cond = threading.Condition()
        self._worker: threading.Thread | None = None
        self.batch_sizes: Counter[int] = Counter()  # batch size -> how many batches of that size ran

    def submit(self, group: Hashable, item: Any) -> Any:
        """Run ``item`` in a batch of its ``group``; blocks until its result (or raises its exception)."""
        future: Future = Future()
        with self._cond:
            if self._worker is None:
                self._worker = threading.Thread(target=self._loop, name="micro-batcher", daemon=True)
                self._worker.start()
            self._queue.append((group, item, future))
            self._cond.notify_all()
        return future.result()

    def _take(self) -> tuple[Hashable, list[tuple[Any, Future]]]:
        with self._cond:
            while not self._queue:
                self._cond.wait()
            group = self._queue[0][0]
            deadline = time.monotonic() + self.max_wait_s
            while True:
                mine = [entry for entry in self._queue if entry[0] == group][: self.max_batch_size]
                left = deadline - time.monotonic()
                if len(mine) >= self.max_batch_size or left <= 0:
                    break
                self._cond.wait(left)
            taken = {id(entry) for entry in mine}
            self._queue = deque(entry for entry in self._queue if id(entry) not in taken)
        return group, [(item, future) for _, item, future in mine]

    def _loop(self) -> None:
        while True:
            group, batch = self._take()
            self.batch_sizes[len(batch)] += 1
            try:
                results = self._run(group, [item for item, _ in batch])
                if len(results) != len(batch):
                    raise RuntimeError(f"the batch function returned {len(results)} results for {len(batch)} items")
            except BaseException as exc:  # a bug in the batch: every caller hears of it, the worker lives on
                results = [exc] * len(batch)
            for (_, future), result in zip(batch, results):
                if isinstance(result, BaseException):
                    future.set_exception(result)
                else:
                    future.set_result(result)


class BatchedTranslator:
    """``Translator.attention`` and ``.translate`` (same arguments), with concurrent calls decoded together.

    A call with a ``head_mask`` (ablation) runs alone; a batch of one takes ``Translator``'s own path. With
    ``process``, the batches run in a child process (``model.worker``: the decoding loop then never waits for
    the server's Python) once it has loaded the model (before, here: a cold start does not wait for it); if that
    process fails, the batch runs here and the next one starts a new process.
    """

    def __init__(self, translator: Translator, max_batch_size: int = 32, max_wait_s: float = 0.0,
                 process: bool = False):
        self.translator = translator
        self.batcher = MicroBatcher(self._run, max_batch_size, max_wait_s)
        # process: the batches run in a child process with its own copy of the model (model.worker). It lives as
        # long as the server (its pipe closes when the server's process ends), or until close().
        self.process = ModelProcess(translator.folder, str(translator.device)) if process else None
        self.batches_here = 0  # batches run in this process (all of them without a model process)

    def attention(self, text: str, target: str | None = None, scale: float | None = None,
                  head_mask=None) -> AttentionResult:
        if head_mask is not None:
            return self.translator.attention(text, target, scale, head_mask)
        return self.batcher.submit(("attention", scale), (text, target))

    def translate(self, text: str, beam: int = 4, scale: float | None = None, head_mask=None) -> str:
        if head_mask is not None:
            return self.translator.translate(text, beam, scale, head_mask)
        return self.batcher.submit(("translate", beam, scale), text)

    def start(self) -> None:
        """Start the model process now (the app does at launch: it loads while Gradio starts), if there is one."""
        if self.process is not None:
            self.process.start()

    def close(self) -> None:
        """End the model process for good (later batches run here)."""
        if self.process is not None:
            self.process.close()

    def _run(self, group: tuple, items: list) -> list:
        if self.process is not None and not self.process.closed:
            try:
                if self.process.ready():  # while it loads the model (the app's first seconds), batches run here
                    results = self.process.run(group, items)
                    failed = [r for r in results if isinstance(r, BaseException) and not isinstance(r, ValueError)]
                    if not failed:
                        return results
                    raise WorkerGone(f"the model process failed on a batch of {len(items)}: {failed[0]}")
            except Exception as exc:  # noqa: BLE001 - WorkerGone or not: the batch runs here, as without a process
                print(f"warning: {exc}; this batch runs in the server's own process", file=sys.stderr, flush=True)
        self.batches_here += 1
        return run_batch(self.translator, group, items)


def run_batch(translator: Translator, group: tuple, items: list) -> list:
    """One batch of ``BatchedTranslator``: ``group`` = ("attention", scale) with (text, target) items, or
    ("translate", beam, scale) with texts; one result or ValueError per item. A batch of one takes
    ``Translator``'s own path (exactly the unbatched call)."""
    kind, *args = group
    if len(items) == 1:
        try:
            if kind == "attention":
                return [translator.attention(*items[0], scale=args[0])]
            return [translator.translate(items[0], beam=args[0], scale=args[1])]
        except ValueError as exc:
            return [exc]
    if kind == "attention":
        return attention_batch(translator, items, scale=args[0])
    return translate_batch(translator, items, beam=args[0], scale=args[1])

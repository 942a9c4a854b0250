"""The model runs the presenters ask for, over the one shared model (its forward passes keep no state on it).

``gpu``: ZeroGPU's ``spaces.GPU`` on a ZeroGPU Space, where a GPU exists only inside a call of a function it
decorates: then the head ablation's sample is scored in such a call (``model.serving.zerogpu.LentGPU``: only that work
is batch-sized), on the CPU where ZeroGPU refuses it; every other run is the same as anywhere.

Memory: every result (attention maps, translations, decoding steps) lives in ONE cache bounded in bytes,
``self.cache`` (``model.serving.cache.ByteLRU``: ``ATTN_CACHE_MB`` megabytes, default 256), shared by all sessions.
A session's gr.State keeps only a ``SessionResult`` (the key of its result, a few hundred bytes); the
app's listener hands the presenters ``SessionResult.get()``, which finds the maps in the cache or computes
them again if they were evicted (the model is deterministic). Cached values are shared: read-only.

Throughput: calls that arrive together are decoded as one padded batch (``model.serving.batching``;
``ATTN_BATCH=0`` turns it off), on a ZeroGPU Space too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

import numpy as np

from model.network.inference import AttentionResult, Translator, clean_text
from model.probes.ablation import AblationResult, Sample, ablate, head_name, parse_heads
from model.probes.analysis import HeadStats, sample_head_stats
from model.probes.domain import Calibration, DomainCheck
from model.probes.domain import check as domain_check
from model.probes.forcing import TokenProbs, token_probs
from model.probes.inside import HeadInside, contribution_maps, inside_head
from model.probes.matrices import Footnote4Pick, HeadMatrices, footnote4_pick, head_matrices
from model.probes.replay import LayerInputs, Sentence, layer_inputs, sentence_of
from model.probes.steps import DecodeSteps, decode_steps
from model.serving.batches import attention_rows
from model.serving.batching import BatchedTranslator, BatchSettings
from model.serving.cache import ByteLRU, budget_from_env
from model.serving.lab import SHIPPED, Lab
from model.serving.zerogpu import LentGPU


class AttentionKey(NamedTuple):
    """One ``Translator.attention`` call as the cache knows it: the cleaned sentence, the given target
    ("" = the model's own translation) and the scale (None = the model's 1/sqrt(d_k))."""

    text: str
    target: str = ""
    scale: float | None = None

    @classmethod
    def of(cls, text: str | None, target: str | None = None, scale: float | None = None) -> AttentionKey:
        return cls(clean_text(text), clean_text(target), None if scale is None else float(scale))


@dataclasses.dataclass(frozen=True, eq=False)
class SessionResult:
    """What a session's gr.State keeps of its last run: the key of its ``AttentionResult`` and the shared
    ``Runs`` that hold it (a reference, never a copy). ``get()`` -> the result, recomputed if evicted."""

    key: AttentionKey
    runs: Runs = dataclasses.field(repr=False)

    def get(self) -> AttentionResult:
        return self.runs.result(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SessionResult) and other.key == self.key and other.runs is self.runs

    def __hash__(self) -> int:
        return hash(self.key)

    def __deepcopy__(self, memo: dict) -> SessionResult:
        return self  # immutable; copying it must not copy the model and its cache


def read_only(value: Any) -> Any:
    """``value`` with the numpy arrays among its dataclass fields (and its items') made read-only (a cached value is
    shared by every session: a presenter that wrote into it would change what others see)."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            read_only(getattr(value, f.name))  # arrays, and the arrays of nested results
    elif isinstance(value, tuple | list):
        for item in value:
            read_only(item)
    return value


class Runs:
    """The model-run service: every model run the presenters ask for, over the one shared model, cached in one
    byte-bounded cache (see the module docstring). The public methods cache; the private ones below them run the
    model. ``sample``: the ablation's sample (default the shipped one)."""

    def __init__(self, translator: Translator, gpu: Callable | None = None, cache: ByteLRU | None = None,
                 batching: BatchSettings | None = None, lab: Lab | None = None, sample: Sample | None = None):
        self.translator, self.cfg = translator, translator.cfg
        self.lab = Lab(device=translator.device) if lab is None else lab  # siblings load on first use
        self.cache = ByteLRU(budget_from_env()) if cache is None else cache
        batching = BatchSettings.from_env() if batching is None else batching
        self.batched = (BatchedTranslator(translator, batching.max_batch_size, batching.max_wait_s, batching.process)
                        if batching.enabled else None)
        self._model = self.batched or translator  # the same attention() and translate()
        self.toy_device = translator.device
        self.sample = sample
        self.lent = None if gpu is None else LentGPU(translator, gpu, sample)  # ZeroGPU: the sample's work
        self.calibration = Calibration.load(translator.folder)  # the "far from the captions" rule, if calibrated

    def cached(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """``compute()``'s value, computed once per ``key`` while it stays in the shared byte-bounded cache
        (concurrent callers of one key share one computation); its arrays are read-only."""
        return self.cache.get_or_compute(key, lambda: read_only(compute()))

    def result(self, key: AttentionKey | None) -> AttentionResult | None:
        """The attention run ``key`` names (None for None: a session before its first run)."""
        if key is None:
            return None
        return self.cached(("attention", *key), lambda: self._attention(key.text, key.target, key.scale))

    def attention(self, text: str, target: str | None = None, scale: float | None = None) -> AttentionResult:
        """``Translator.attention(text, target, scale)``, cached."""
        return self.result(AttentionKey.of(text, target, scale))

    def attention_json(self, text: str, target: str | None = None, scale: float | None = None) -> bytes:
        """``attention(text, target, scale)`` as its JSON text (``AttentionResult.to_json_bytes``): serialised once
        per result, then shared by every request for it from the same cache (~10.5 MB at 100 tokens a side)."""
        key = AttentionKey.of(text, target, scale)
        return self.cached(("attention_json", *key), lambda: self.result(key).to_json_bytes())

    def session(self, text: str, target: str | None = None,
                scale: float | None = None) -> tuple[SessionResult, AttentionResult]:
        """This run's result, and what a session's gr.State keeps of it (the key)."""
        key = AttentionKey.of(text, target, scale)
        return SessionResult(key, self), self.result(key)

    def trained(self, text: str) -> AttentionResult:
        """The model as trained (the paper's scale, its own translation), cached per sentence."""
        return self.attention(text)

    def trained_and_scaled(self, text: str, scale: float | None) -> tuple[AttentionResult, AttentionResult]:
        """(``trained(text)``, ``attention(text, scale=scale)``), each cached as those are. Where neither is cached
        yet (the Why tab's run of a new sentence), the two greedy decodes run as one batch of two rows, each with its
        own scale (``model.serving.batches.attention_rows``: the same tokens as each alone; ~one decode's time, not
        two); else only what is missing runs (moving the slider re-runs only the changed model)."""
        trained, scaled = AttentionKey.of(text), AttentionKey.of(text, None, scale)
        both: list[AttentionResult] = []

        def decode_both() -> AttentionResult:
            both.extend(self._attention_rows([(trained.text, None, None), (scaled.text, None, scaled.scale)]))
            return both[0]

        normal = self.cached(("attention", *trained), decode_both if ("attention", *scaled) not in self.cache
                             else lambda: self._attention(trained.text, None, None))
        changed = self.cached(("attention", *scaled), lambda: both[1] if both else self._attention(
            scaled.text, None, scaled.scale))
        return normal, changed

    def source_attention(self, text: str, scale: float | None = None) -> tuple[AttentionResult, AttentionResult]:
        """``Translator.source_attention`` as trained and at ``scale``: the encoder's self-attention alone, no
        decode, both in one batch; cached."""
        key = AttentionKey.of(text, None, scale)
        return self.cached(("source", key.text, key.scale),
                           lambda: tuple(self.translator.source_attention(key.text, (None, key.scale))))

    def has_attention(self, text: str, scale: float | None = None) -> bool:
        """Whether ``attention(text, scale=scale)`` is in the cache (its answer would need no model run)."""
        return ("attention", *AttentionKey.of(text, None, scale)) in self.cache

    def lab_attention(self, text: str, run: str) -> AttentionResult:
        """A lab sibling's attention for ``text`` (greedy, as ``attention``), or the shipped model's for
        ``run`` = ``SHIPPED``; cached beside every other result."""
        text = clean_text(text)
        if run == SHIPPED:
            return self.attention(text)
        self.lab.check_live(run)
        return self.cached(("lab", run, text), lambda: self._lab_attention(text, run))

    def lab_attention_json(self, text: str, run: str) -> bytes:
        """``lab_attention(text, run)`` as its JSON text, with "run" last; serialised once, as ``attention_json``."""
        if run != SHIPPED:
            self.lab.check_live(run)  # a bad name: its message, before anything runs
        text = clean_text(text)
        return self.cached(("lab_json", run, text), lambda: self.lab_attention(text, run).to_json_bytes(run=run))

    def domain(self, text: str) -> DomainCheck | None:
        """The model's own translation of ``text`` against the "far from the captions" rule
        (``model.probes.domain``), cached per sentence; None where the model folder has no calibration."""
        if self.calibration is None:
            return None
        text = clean_text(text)
        return self.cached(("domain", text), lambda: self._domain(self.trained(text)))

    def translate(self, text: str, beam: int) -> str:
        return self.cached(("translate", clean_text(text), beam), lambda: self._translate(text, beam))

    def steps(self, text: str) -> DecodeSteps:
        """The Decoding tab's steps for ``text``, cached by the cleaned text, as the model reads it."""
        text = clean_text(text)
        return self.cached(("steps", text), lambda: self._steps(text))

    def token_probs(self, result: AttentionResult) -> TokenProbs:
        """``model.probes.forcing.token_probs`` of a teacher-forced ``result``, cached by its ids and scale."""
        key = ("token_probs", result.source_text, tuple(result.target_ids), result.scale)
        return self.cached(key, lambda: self._probs(result))

    # ---------------------------------------- Inside a head: on demand, never during /visualise
    def inside_head(self, result: AttentionResult, kind: str, layer, head, query, factor=None) -> HeadInside:
        """One head for one query on ``result``'s sentence (``model.probes.inside.inside_head``; ValueErrors for bad
        choices). No decode: the ids come from the result. The layers run once per sentence and kind (what their
        attention sub-layers read stays in the cache: ``layer_inputs``); then a head or a query costs only its
        own projections."""
        sentence = sentence_of(self.translator, result)
        inputs = self.layer_inputs(sentence, kind)
        return self._inside(sentence, kind, layer, head, query, factor, inputs)

    def inside_matrices(self, result: AttentionResult, kind: str, layer, head, factor=None) -> HeadMatrices:
        """One head's whole matrices, every query at once (``model.probes.matrices.head_matrices``), from the cached
        layer inputs as ``inside_head``."""
        sentence = sentence_of(self.translator, result)
        return self._matrices(sentence, kind, layer, head, factor, self.layer_inputs(sentence, kind))

    def footnote4_pick(self, result: AttentionResult, kind: str) -> Footnote4Pick:
        """The head and query where footnote 4 shows best on ``result``'s sentence (``model.probes.matrices``),
        cached per sentence and kind."""
        sentence = sentence_of(self.translator, result)
        return self.cached(("footnote4_pick", sentence, kind),
                           lambda: self._footnote4_pick(sentence, kind, self.layer_inputs(sentence, kind)))

    def layer_inputs(self, sentence: Sentence, kind: str) -> LayerInputs:
        """``model.probes.replay.layer_inputs`` for all layers, cached: ~(Q + n) · d_model · 4 bytes a layer."""
        return self.cached(("layer_inputs", sentence, kind), lambda: self._layer_inputs(sentence, kind))

    def contributions(self, result: AttentionResult, kind: str) -> np.ndarray:
        """(L, H, Q, K) ‖α_j v_j W^O_h‖ normalised per row (the Attention tab's "contributions"), cached per
        sentence and kind in the shared cache: as many bytes as the weights they stand in for. Read-only."""
        sentence = sentence_of(self.translator, result)

        def compute() -> np.ndarray:
            maps = self._contributions(sentence, kind)
            maps.flags.writeable = False
            return maps

        return self.cached(("contributions", sentence, kind), compute)

    # ---------------------------------------- Head analysis: the sample's statistics, ablation
    def sample_stats(self) -> HeadStats:
        """The shipped sample's per-head statistics (``model.probes.analysis.sample_head_stats``: read from its file
        when it was written for these weights, else computed once per model, ~10 s)."""
        return self._sample_stats()

    def ablate(self, text: str, heads, progress=None) -> AblationResult:
        """``text`` (greedy) and the shipped sample's BLEU/chrF with ``heads`` ("kind:layer:head") switched off
        for this call only (``model.probes.ablation.ablate``: a per-call head mask; the shared model never changes).
        Bad names are ValueErrors before any model run. Cached per sentence and set of heads (~as many bytes as
        the sentence's maps), so drawing another kind of its maps runs nothing; ``progress(fraction, message)``
        follows the sample's decoding."""
        names = tuple(head_name(*h) for h in parse_heads(heads, self.cfg.n_layers, self.cfg.n_heads))
        text = clean_text(text)
        return self.cached(("ablate", text, names),
                           lambda: self._ablate(text, list(names), progress))

    # ---------------------------------------- the model runs
    def _attention(self, text: str, target: str | None, scale: float | None) -> AttentionResult:
        return self._model.attention(text, target=target or None, scale=scale)

    def _attention_rows(self, requests: list[tuple[str, str | None, float | None]]) -> list[AttentionResult]:
        """``attention`` for each (text, target, scale), as one batch with a scale per row."""
        if self.batched is not None:
            return self.batched.attention_rows(requests)
        results = attention_rows(self.translator, requests)
        for result in results:
            if isinstance(result, ValueError):
                raise result
        return results

    def _translate(self, text: str, beam: int) -> str:
        return self._model.translate(text, beam=beam)

    def _lab_attention(self, text: str, run: str) -> AttentionResult:
        return self.lab.translator(run).attention(text)

    def _steps(self, text: str) -> DecodeSteps:
        """The Decoding tab's steps: one DecodeSteps per sentence, ~4 MB at 100 tokens a side."""
        return decode_steps(self.translator, text)

    def _probs(self, result: AttentionResult) -> TokenProbs:
        """A translation the user gave, token by token: one teacher-forced pass over the run's ids."""
        return token_probs(self.translator, result)

    def _inside(self, sentence: Sentence, kind: str, layer, head, query, factor, inputs: LayerInputs) -> HeadInside:
        return inside_head(self.translator, sentence, None, kind, layer, head, query, factor, inputs)

    def _matrices(self, sentence: Sentence, kind: str, layer, head, factor, inputs: LayerInputs) -> HeadMatrices:
        return head_matrices(self.translator, sentence, None, kind, layer, head, factor, inputs)

    def _footnote4_pick(self, sentence: Sentence, kind: str, inputs: LayerInputs) -> Footnote4Pick:
        return footnote4_pick(self.translator, sentence, None, kind, inputs)

    def _domain(self, result: AttentionResult) -> DomainCheck:
        return domain_check(self.translator, self.calibration, result)

    def _contributions(self, sentence: Sentence, kind: str) -> np.ndarray:
        return contribution_maps(self.translator, sentence, kind)

    def _layer_inputs(self, sentence: Sentence, kind: str) -> LayerInputs:
        return layer_inputs(self.translator, sentence, kind)

    def _ablate(self, text: str, names: list[str], progress) -> AblationResult:
        """The sentence here; the sample on a lent GPU (``LentGPU.scores``, on the CPU if refused), else in the model's
        crowd lane (``BatchedTranslator.translate_ids``: seconds of CPU at a low priority, not in the server's process),
        else here."""
        scores = None if self.lent is None else self.lent.scores
        decode = None if self.batched is None else self.batched.translate_ids
        return ablate(self.translator, text, names, self.sample, progress=progress, scores=scores, decode=decode)

    def _sample_stats(self) -> HeadStats:
        return sample_head_stats(self.translator)

"""The endpoints without a UI, for scripts: /translate, /attention, /decode_steps, /inside_head, /head_stats,
/ablate, and the Lab's /lab_runs, /lab_attention and /timelapse. Each takes the app's ``Runs`` first (the app
binds it: ``listener(fn, runs)``); the rest of its signature, its type hints and its docstring are the
endpoint's as Gradio describes it (``/gradio_api/info``, the API page). Every input is checked first
(``viz.views.inputs``): bad input is a ValueError with a message. /attention and /lab_attention answer their dict
as ``JSONText``, written once per result (their answer is up to ~10.5 MB).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from model.probes.analysis import head_stats_payload
from viz.views import inputs
from viz.views import inside_head as inside_view
from viz.views.outputs import JSONText

if TYPE_CHECKING:
    from model.serving.runs import Runs


def translate(runs: Runs, text: str, beam: float = 4) -> str:
    """Plain translation (beam search, §6.1)."""
    return runs.translate(inputs.check_text(text), inputs.check_beam(beam))


def attention_maps(runs: Runs, text: str, target: str = "", scale: float | None = None) -> dict:
    """Every attention map as JSON: the same content as `python -m model.translate --json`."""
    text, target = inputs.check_text(text), inputs.check_text(target, "given translation")
    return JSONText(runs.attention_json(text, target, inputs.check_scale(scale)))  # a dict, already as JSON


def decode_steps(runs: Runs, text: str) -> dict:
    """Greedy decoding step by step: {"steps": [...]}, per step the prefix, the 5 most likely next tokens and
    their probabilities, the chosen token, and the step's cross (layers × heads × source) and decoder_self
    (layers × heads × step+1) rows, the rows of /attention's maps (with the sentence's tokens beside)."""
    return runs.steps(inputs.check_text(text)).to_json_dict()


def inside_head(runs: Runs, text: str, target: str = "", kind: str = "encoder_self", layer: float = 1,
                head: float = 1, query: float = 0, factor: float | None = None) -> dict:
    """One head (layer, head from 1) for one query (0-based, on the query side), step by step: q, k, v, the raw
    scores, the scale (factor, null = the model's 1/√d_k), masked, weights, output, head_outputs, the sub-layer
    and layer outputs, contributions; the sentence is /attention's (the same tokens, the same weights)."""
    text, target = inputs.check_text(text), inputs.check_text(target, "given translation")
    return inside_view.inside_json(runs.inside_head, runs.attention, runs.cfg, text, target, kind, layer, head,
                                   query, factor)


def head_stats(runs: Runs, text: str) -> dict:
    """Per kind of attention, a layers × heads array per statistic (entropy, spread, confidence, eos,
    punctuation, previous, self, next, offset, sharpness; null where one does not apply) and the heads' role
    labels with their thresholds: for this sentence ("sentence") and for the shipped sample ("sample")."""
    return head_stats_payload(runs.attention(inputs.check_text(text)), runs.sample_stats())


def ablate(runs: Runs, text: str, heads: list[str] | None = None) -> dict:
    """The sentence (greedy) with ``heads`` ("kind:layer:head", 1-based, e.g. "cross:4:2") switched off for
    this request only: its translation before and after, its maps (as /attention's), and the shipped
    sample's cased sacreBLEU BLEU and chrF with every head ("before") and without these ("after")."""
    return runs.ablate(inputs.check_text(text), heads).to_json_dict()


def lab_runs(runs: Runs) -> dict:
    """Every shipped lab run, grouped by sibling: {"runs": [{name, label, tests, config, parameters, seeds, runs,
    curves, bleu, epochs}]}, per seed its curves (columns over the recorded steps), per-epoch log and BLEU
    (val and test_2016_flickr, greedy and beam 4)."""
    return runs.lab.runs_payload()


def lab_attention(runs: Runs, text: str, run: str = "h1") -> dict:
    """A lab sibling's attention on ``text`` (greedy): /attention's keys plus "run". ``run``: a sibling whose
    weights are shipped (/lab_runs), or "shipped" for the shipped model."""
    return JSONText(runs.lab_attention_json(inputs.check_text(text), str(run)))  # a dict, already as JSON


def timelapse(runs: Runs, example: str = "0", kind: str = "cross") -> dict:
    """The reference sibling's maps of one time-lapse sentence (``example``: its index or its English text) at
    each recorded training step: {"run", "example", "kind", "steps", "query_tokens", "key_tokens", "maps"}, maps
    steps × layers × heads × queries × keys."""
    return runs.lab.timelapse(example, str(kind))

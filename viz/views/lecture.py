"""The lecture: a guided path through §3.1–3.2 of the paper, one stop a screen, for a teacher to project.

    ?lecture=1&stop=3[&text=…]

Each ``Stop`` is a view of an existing tab (``view``: the link parameters of viz.views.attention.share, opened by the
link machinery as any shared link is) and a caption: what to look at (``look``), one question for the class
(``question``), and a pointer — the cell, row, key or block the caption talks about, named in words and MARKED on the
figure (``Mark``; the page script assets/web/lecture.js draws it). The pointer is computed from the model's own run of
the sentence shown (``point``), never written as positions: on the visitor's own sentence it is recomputed (a row
named by a token the sentence lacks falls back to the row the head is surest about). Its words on the lecture's own
sentence are written here too (``claim``): tests/test_lecture.py checks every one against the shipped model, so a
retrained model that no longer does this fails a test by the stop's name — rewrite the claim from the new model.

Moving between stops happens in place, like slides (assets/web/lecture.js): the page pushes the next stop's URL and
sends its query (``asked_query``); the link machinery opens its view as on a page load, and a stop on Inside a head
opens the query its pointer is about (``follow_mark``). The lecture turns presentation mode on.
This module imports neither torch nor gradio; the wiring is viz/ui/lecture.py.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl

import numpy as np

from model.terms import KINDS, WORD_MARKER
from viz.lab import curve_trace
from viz.views.attention.context import next_tokens
from viz.views.attention.examples import shown_token
from viz.views.attention.maps import DEFAULT_SOURCE
from viz.vocab import KIND_LABELS

if TYPE_CHECKING:
    from model.network.config import TransformerConfig
    from model.network.inference import AttentionResult
    from model.serving.runs import SessionResult
    from viz.views.attention.share import View

SENTENCE = DEFAULT_SOURCE  # the lecture's own sentence (every claim is about it): "Two dogs are running …"
ENTRY = "?lecture=1&stop=1"  # the "Lecture" entry's link


@dataclass(frozen=True)
class Mark:
    """What a caption points at, and where the page marks it. A figure (``plot``: a gr.Plot's element id): its
    heatmap cell (``row``, ``col``: z indices), a whole row (``col`` None), or a bar (``col`` alone) of trace ``trace``
    (index among the figure's traces; for a heatmap None = the first heatmap; ``kind``: the heatmap whose cells'
    customdata name that kind), or points of line traces framed together (``points``: (trace, point) index pairs).
    Or a block of an SVG (``selector`` inside element ``plot``), or the tile the page frames already (``tile``: the
    overview's chosen-tile frame, assets/web/classroom.js)."""

    plot: str
    words: str  # the pointer, as the caption says it
    row: int | None = None
    col: int | None = None
    trace: int | None = None
    kind: str = ""
    selector: str = ""
    tile: bool = False
    query: int | None = None  # Inside a head: the query the view must show (0-based; the page picks it)
    points: tuple[tuple[int, int], ...] = ()
    frame: str = ""  # what must be on screen with the mark (a CSS selector in the page: the union of what it finds);
    #                  the page scrolls it into view rather than the figure ``plot`` as a whole
    columns: int = 0  # a figure of bands one under another (Inside a head's, laid out for a phone) taller than the
    #                   screen: the page draws its bands this many a row, and shorter, its texts as large (lecture.js)

    def spec(self) -> dict:
        """The mark as the page script reads it (JSON)."""
        out = {"plot": self.plot, "row": self.row, "col": self.col, "trace": self.trace, "kind": self.kind,
               "selector": self.selector, "tile": self.tile, "query": self.query, "frame": self.frame,
               "points": [list(p) for p in self.points], "columns": self.columns or None}
        return {k: v for k, v in out.items() if v is not None and v is not False and v != "" and v != []}  # 0 stays


@dataclass(frozen=True)
class Context:
    """What a pointer is computed from: the model's configuration, the run of the sentence shown, the shipped head
    ranking (``model.probes.ablation.load_ranking``; None without one), the lab's shipped runs
    (``model.serving.lab.Lab.runs_payload()``; None or no runs: nothing shipped)."""

    cfg: TransformerConfig
    result: AttentionResult
    ranking: Mapping | None = None
    lab: Mapping | None = None


@dataclass(frozen=True)
class Stop:
    title: str  # the paper's section and the idea
    tab: str  # the tab shown
    view: dict[str, str]  # the link's parameters besides text, tab and present (viz.views.attention.share.PARAMS)
    look: str  # what to look at, in words that hold for any sentence (the pointer gives the model's numbers)
    question: str  # one question for the class
    point: Callable[[Context], Mark]
    claim: str  # the pointer's words on SENTENCE, as the shipped model runs it (tests/test_lecture.py checks it)
    action: str = ""  # what the page does once the view is open: "predict" (the Decoding tab's predict-then-reveal)


# ----------------------------------------------------------------------------------------------- pointers
def _row(tokens: list[str], word: str, weights: np.ndarray) -> int:
    """The row of token ``word`` when exactly one token is it; else the row whose largest weight is largest (the
    row the head is surest about) — the visitor's own sentence."""
    hits = [i for i, piece in enumerate(tokens) if shown_token(piece) == word]
    return hits[0] if len(hits) == 1 else int(weights.max(axis=-1).argmax())


def _weights(result: AttentionResult, kind: str, layer: int, head: int) -> np.ndarray:
    maps = result.maps(kind)[layer - 1]  # (H, Q, K)
    return maps.mean(axis=0) if head == 0 else maps[head - 1]


def _strongest(result: AttentionResult, kind: str, layer: int, head: int, word: str) -> tuple[np.ndarray, int, int]:
    """The head's weights (Q, K), the row of ``word`` (``_row``) and the key that row weighs most."""
    w = _weights(result, kind, layer, head)
    row = _row(result.tokens(kind)[0], word, w)
    return w, row, int(w[row].argmax())


def _alone(piece: str) -> bool:
    """A piece that is a word of its own: <s>, </s>, or punctuation ("." after "▁snow")."""
    text = shown_token(piece)
    return (piece.startswith("<") and piece.endswith(">")) or (bool(text) and not any(c.isalnum() for c in text))


def whole_word(tokens: list[str], i: int) -> str:
    """The word token ``i`` is a piece of (a piece that starts with "▁" starts a word; <s>, </s> and punctuation stand
    alone)."""
    if _alone(tokens[i]):
        return shown_token(tokens[i])

    def joined(k: int) -> bool:  # piece k continues the word of piece k - 1
        return k > 0 and not tokens[k].startswith(WORD_MARKER) and not _alone(tokens[k]) and not _alone(tokens[k - 1])

    start, end = i, i + 1
    while joined(start):
        start -= 1
    while end < len(tokens) and joined(end):
        end += 1
    return "".join(shown_token(p) for p in tokens[start:end])


def said(tokens: list[str], i: int) -> str:
    """Token ``i`` as the captions name it: its whole word, quoted, and the piece too where it is only a part of it."""
    word, piece = whole_word(tokens, i), shown_token(tokens[i])
    return f"“{word}”" if word == piece else f"“{word}” (its piece “{piece}”)"


def _fed(result: AttentionResult, kind: str, row: int) -> str:
    """A row as the captions name it: the encoder's token, or the decoder row's input and what it writes (§3.1)."""
    tokens = result.tokens(kind)[0]
    if kind == "encoder_self":
        return f"the row of {said(tokens, row)}"
    rows = result.target_tokens
    writes = said(rows, row + 1) if row + 1 < len(rows) else f"“{shown_token(next_tokens(result)[row])}”"
    return f"the row fed {said(tokens, row)} (it writes {writes})"


def _where(kind: str, layer: int, head: int) -> str:
    return f"Layer {layer}, {'the mean of the heads' if head == 0 else f'head {head}'}"


def cell_pointer(kind: str, layer: int, head: int, word: str, plot: str) -> Callable[[Context], Mark]:
    """The cell where the row of ``word`` (``_row``) puts its largest weight, in the heatmap ``plot``."""

    def point(ctx: Context) -> Mark:
        w, row, col = _strongest(ctx.result, kind, layer, head, word)
        key = said(ctx.result.tokens(kind)[1], col)
        words = f"{_where(kind, layer, head)}: {_fed(ctx.result, kind, row)} looks most at {key} ({w[row, col]:.2f})."
        return Mark(plot, words, row=row, col=col)

    return point


def softmax_row_pointer(kind: str, layer: int, head: int, word: str) -> Callable[[Context], Mark]:
    """Equation (1) as whole matrices: the row of ``word`` in softmax(QKᵀ/√d_k), which sums to 1."""

    def point(ctx: Context) -> Mark:
        w, row, col = _strongest(ctx.result, kind, layer, head, word)
        key = said(ctx.result.tokens(kind)[1], col)
        words = (f"{_where(kind, layer, head)}: in softmax(QKᵀ/√d_k) {_fed(ctx.result, kind, row)} sums to "
                 f"{float(w[row].sum()):.2f}; its largest weight, {w[row, col]:.2f}, is on {key}.")
        # on screen: the four maps ① → ④, a row (app.css draws them so in the lecture)
        return Mark("in-m-weights", words, row=row, col=col, query=row, frame="#in-m-stages")

    return point


def query_pointer(kind: str, layer: int, head: int, word: str) -> Callable[[Context], Mark]:
    """One query inside a head: panel (b)'s softmax bar (its 4th trace) of the key the query weighs most."""

    def point(ctx: Context) -> Mark:
        w, row, col = _strongest(ctx.result, kind, layer, head, word)
        n = int((w[row] > 0).sum()) if kind == "decoder_self" else w.shape[-1]
        key = said(ctx.result.tokens(kind)[1], col)
        words = (f"{_where(kind, layer, head)}, query {said(ctx.result.tokens(kind)[0], row)}: "
                 f"{n} scores q·k become {n} weights; the largest, {w[row, col]:.2f}, is on {key}.")
        # on screen whole: the figure's four bands two a row (its column the page's width in the lecture: app.css)
        return Mark("in-scores", words, col=col, trace=3, query=row, columns=2)

    return point


def unscaled(weights: np.ndarray, d_k: int) -> np.ndarray:
    """The same row's softmax without footnote 4's 1/√d_k: softmax(q·k) = softmax(√d_k · log softmax(q·k/√d_k))
    (the log of a softmax is its input less a constant; masked keys stay 0)."""
    with np.errstate(divide="ignore"):
        logits = math.sqrt(d_k) * np.log(weights.astype(np.float64))
    logits -= logits.max()
    e = np.exp(logits)
    return e / e.sum()


def footnote4_pointer(kind: str, layer: int, head: int, word: str) -> Callable[[Context], Mark]:
    """Footnote 4 on one query: its largest weight scaled as trained and without the scaling (× 1)."""

    def point(ctx: Context) -> Mark:
        w, row, col = _strongest(ctx.result, kind, layer, head, word)
        raw = unscaled(w[row], ctx.cfg.d_k)
        keys = ctx.result.tokens(kind)[1]
        words = (f"{_where(kind, layer, head)}, query {said(ctx.result.tokens(kind)[0], row)}: with "
                 f"1/√d_k = 1/√{ctx.cfg.d_k} its largest weight is {w[row, col]:.2f} (on {said(keys, col)}); "
                 f"without it, {raw.max():.2f} (on {said(keys, int(raw.argmax()))}).")
        return Mark("in-footnote4", words, col=col, trace=0, query=row, columns=1)  # on screen whole: shorter

    return point


def lab_pointer(scaled: str, unscaled: str) -> Callable[[Context], Mark]:
    """Footnote 4 in training: two lab siblings alike but for 1/√d_k (``scaled``, ``unscaled``: run names), from their
    shipped records — where the validation-loss curves end (the gap marked on the Lab tab's curves) and each run's best
    validation BLEU over its epochs. Whatever the records say, said as they say it."""

    def point(ctx: Context) -> Mark:
        runs = [r for r in (ctx.lab or {}).get("runs", []) if r["name"] in (scaled, unscaled)]
        if len(runs) < 2:
            return Mark("lab-curves", "The lab's runs with and without 1/√d_k are not shipped with this model.")
        a, b = (next(r for r in runs if r["name"] == name) for name in (scaled, unscaled))
        last = len(a["curves"][0]["step"]) - 1
        cfg = a["config"]

        ends = {r["name"]: r["curves"][0]["probe_loss"][-1] for r in (a, b)}

        def ended(entry: dict) -> str:
            best = max(e["val_bleu"] for e in entry["epochs"][0])
            upper = " (the upper line)" if ends[entry["name"]] == max(ends.values()) else ""
            return (f"validation loss on the sample {ends[entry['name']]:.2f}{upper}, best validation BLEU "
                    f"{best:.1f}")

        steps = a["epochs"][0][-1]["step"]
        words = (f"h = {cfg['n_heads']}, d_k = {cfg['d_model'] // cfg['n_heads']}, at the last record (step "
                 f"{a['curves'][0]['step'][-1]} of {steps}): with 1/√d_k {ended(a)}; without it {ended(b)}."
                 f"{_grad_words(a, b)}")
        # on screen: the figure from its label, its legend (on top) and the top panel (validation loss) with its title;
        # the figure's other panels are below it
        return Mark("lab-curves", words, points=tuple((curve_trace(runs, r["name"]), last) for r in (a, b)),
                    frame="#lab-curves [data-testid=block-label], #lab-curves .subplot.xy")

    return point


def _grad_words(scaled: dict, unscaled: dict, until: int = 200) -> str:
    """Footnote 4's quantity, the softmax's own gradient, over the first ``until`` steps (from the time-lapse maps),
    then ‖∇W^Q‖ at the first and last records, of two lab runs' encoder self-attention (the Lab's panels as it opens:
    the mean of the layers); nothing where the records lack them."""
    kind = "encoder_self"
    key = f"grad_wq.{kind}"
    curves = [run["curves"][0] for run in (scaled, unscaled)]
    if not all(key in c and len(c[key]) == len(c["step"]) and c["step"] for c in curves):
        return ""
    words = ""
    series = [(run.get("series") or [None])[0] for run in (scaled, unscaled)]
    if all(series):
        early = [float(np.mean([np.mean(v) for step, v in zip(s["step"], s["softmax_grad"][kind]) if step <= until]))
                 for s in series]
        words = (f" Over the first {until} steps the softmax's own gradient: {early[0]:.2f} with, {early[1]:.2f} "
                 "without.")
    at = [[float(np.mean(c[key][i])) for c in curves] for i in (0, -1)]
    steps = curves[0]["step"]
    return words + (f" ‖∇W^Q‖ at step {steps[0]}: {at[0][0]:.2g} with, {at[0][1]:.2g} without; at step {steps[-1]}: "
                    f"{at[1][0]:.2g} with, {at[1][1]:.2g} without.")


def heads_differ_pointer(kind: str, layer: int, word: str) -> Callable[[Context], Mark]:
    """§3.2.2: the layer's heads look at different tokens — for the row of ``word``, how many different keys its
    heads weigh most. Marked: the layer's tiles in the overview (the page frames the chosen layer, head = mean)."""

    def point(ctx: Context) -> Mark:
        maps = ctx.result.maps(kind)[layer - 1]  # (H, Q, K)
        row = _row(ctx.result.tokens(kind)[0], word, maps.mean(axis=0))
        keys = ctx.result.tokens(kind)[1]
        tops = [int(maps[h, row].argmax()) for h in range(maps.shape[0])]
        different = list(dict.fromkeys(tops))
        words = (f"Layer {layer}: for {_fed(ctx.result, kind, row)} the {len(tops)} heads weigh "
                 f"{len(different)} different tokens most: {', '.join(said(keys, t) for t in different)}.")
        return Mark("overview", words, tile=True)

    return point


def masked_row_pointer(layer: int, head: int, word: str) -> Callable[[Context], Mark]:
    """The masked decoder self-attention: the row fed ``word`` sees only the tokens up to itself (every weight right
    of the diagonal is 0), and what it writes is the next token (§3.1's shift). Marked: the whole row."""
    kind = "decoder_self"

    def point(ctx: Context) -> Mark:
        w = _weights(ctx.result, kind, layer, head)
        surest = w.copy()
        surest[0] = 0  # the row fed <s> sees only itself: the fallback is a later row
        row = _row(ctx.result.tokens(kind)[0], word, surest)
        future = float(w[row, row + 1:].sum())
        col = int(w[row].argmax())
        key = said(ctx.result.tokens(kind)[1], col)
        seen = f"{row + 1} token{'s' if row else ''}"
        words = (f"{_where(kind, layer, head)}: {_fed(ctx.result, kind, row)} sees {seen}; its weight on "
                 f"the later ones is {future:.2f}; it looks most at {key} ({w[row, col]:.2f}).")
        return Mark("detail", words, row=row)

    return point


def decoding_pointer(layer: int, step: int) -> Callable[[Context], Mark]:
    """Decoding step by step: at ``step`` (1-based) the decoder has written the tokens before it; its cross-attention
    (layer ``layer``, mean of the heads) looks most at one source token — the bar marked."""

    def point(ctx: Context) -> Mark:
        r = ctx.result
        t = min(step, len(r.target_tokens)) - 1  # the row fed the last token written so far
        w = r.maps("cross")[layer - 1].mean(axis=0)[t]
        col = int(w.argmax())
        written = "".join(r.target_tokens[1:t + 1]).replace(WORD_MARKER, " ").strip() or "nothing yet"
        words = (f"Step {t + 1}, layer {layer}, the mean of the heads: written so far “{written}”; the decoder looks "
                 f"most at {said(r.source_tokens, col)} ({w[col]:.2f}).")
        # on screen with it: the step's controls (Reveal) above the charts (app.css puts the charts right below them)
        return Mark("decode-cross", words, col=col, trace=0, frame="#step-prev, #reveal, #decode-cross")

    return point


def figure1_pointer(ctx: Context) -> Mark:
    c = ctx.cfg
    words = (f"This model: N = {c.n_layers} layers a side, h = {c.n_heads} heads, d_model = {c.d_model}, "
             f"d_k = d_model / h = {c.d_k}.")
    # Figure 1 is drawn at its full size (its texts 16 px): taller than the screen, so the screen shows its three
    # attention blocks (the stop's question is about them), not the embeddings' foot or the output's head.
    return Mark("figure1", words, selector='g[data-attention="encoder_self"]', frame="#figure1 g[data-attention]")


def figure2_pointer(ctx: Context) -> Mark:
    c = ctx.cfg
    words = (f"Concat: h · d_v = {c.n_heads} · {c.d_k} = {c.n_heads * c.d_k} = d_model; "
             f"W^O is {c.n_heads * c.d_k} × {c.d_model}.")
    return Mark("figure2", words, selector="g.tf-concat")


def ranking_pointer(ctx: Context) -> Mark:
    """What a head does: the shipped ranking's first head (switched off alone, it costs the sample most BLEU), its
    cell in the Head analysis grid."""
    heads = (ctx.ranking or {}).get("heads") or []
    if not heads:
        return Mark("heads-grid", "No head ranking was shipped with this model.")
    top = heads[0]
    kind, layer, head = top["head"].split(":")
    words = (f"Switched off alone, {KIND_LABELS[kind].lower()}'s layer {layer}, head {head} costs the shipped "
             f"sample the most: "
             f"{top['bleu_loss']:.2f} BLEU of {ctx.ranking['baseline']['bleu']:.2f}.")
    # on screen: the grid from its label to the end of the marked kind's panel (viz.stats_grid: one panel a kind the
    # statistic applies to, in KINDS's order; the spread applies to all three)
    panel = KINDS.index(kind) + 1
    axes = "xy" if panel == 1 else f"x{panel}y{panel}"
    return Mark("heads-grid", words, row=int(layer) - 1, col=int(head) - 1, kind=kind,
                frame=f"#heads-grid [data-testid=block-label], #heads-grid .subplot.{axes}")


# --------------------------------------------------------------------------------------------------- the path
ENC = ("encoder_self", 1, 5, "dogs")  # the encoder head the first stops follow: "dogs" → "running"
HEADS_STAT = "spread"  # the Head analysis grid's statistic at the last stop

STOPS: tuple[Stop, ...] = (
    Stop("Figure 1: the Transformer", "architecture", {"kind": "encoder_self", "layer": "1"},
         "Encoder left, decoder right; the marked block is the encoder's self-attention, run in every layer.",
         "Which of the three attention blocks may not look at later words, and why?",
         figure1_pointer, "This model: N = 6 layers a side, h = 8 heads, d_model = 192, d_k = d_model / h = 24."),
    Stop("§3.2.1 Encoder self-attention on one sentence", "attention",
         {"kind": ENC[0], "layer": str(ENC[1]), "head": str(ENC[2])},
         "Each row is one word asking: which words of this sentence do I take my meaning from? The marked cell is the "
         "row's largest weight.",
         "Is the word the marked row looks at most the one you would have guessed? What might it take from it?",
         cell_pointer(*ENC, plot="detail"),
         "Layer 1, head 5: the row of “dogs” looks most at “running” (0.88)."),
    Stop("§3.2.1 Equation (1), every query at once", "inside",
         {"kind": ENC[0], "layer": str(ENC[1]), "head": str(ENC[2]), "query": "1", "show": "matrix"},
         "Maps ① → ④ in reading order: QKᵀ, ÷ √d_k, + the mask, softmax, for every query at once. The outlined row "
         "is one query; the marked cell, its largest weight.",
         "Why must every row of the softmax sum to 1?",
         softmax_row_pointer(*ENC),
         "Layer 1, head 5: in softmax(QKᵀ/√d_k) the row of “dogs” sums to 1.00; its largest weight, 0.88, is on "
         "“running”."),
    Stop("§3.2.1 One query inside a head", "inside",
         {"kind": ENC[0], "layer": str(ENC[1]), "head": str(ENC[2]), "query": "1", "show": "query"},
         "Panel (b): the query's dot products with every key, scaled, masked, then softmax. The marked bar wins.",
         "What would change if two keys had the same dot product?",
         query_pointer(*ENC),
         "Layer 1, head 5, query “dogs”: 9 scores q·k become 9 weights; the largest, 0.88, is on “running”."),
    Stop("Footnote 4: why divide by √d_k", "inside",
         {"kind": ENC[0], "layer": str(ENC[1]), "head": str(ENC[2]), "query": "1", "show": "query"},
         "The same softmax, scaled three ways: as trained, × 1 and × the Why-tab factor. The marked key is the winner.",
         "Dot products of d_k random terms grow like √d_k: what does that do to a softmax?",
         footnote4_pointer(*ENC),
         "Layer 1, head 5, query “dogs”: with 1/√d_k = 1/√24 its largest weight is 0.88 (on “running”); without it, "
         "1.00 (on “running”)."),
    Stop("Footnote 4 in training: the lab's h = 1 siblings", "lab", {"runs": "h1,h1-unscaled"},
         "Two models alike but for 1/√d_k: top, validation loss (marked: where they ended); second, the softmax's "
         "own gradient ‖diag(p) − p pᵀ‖; third, the gradient reaching W^Q (log scale).",
         "Footnote 4 predicts that one gradient panel shrinks without 1/√d_k: which one, and why does the other "
         "start larger?",
         lab_pointer("h1", "h1-unscaled"),
         "h = 1, d_k = 192, at the last record (step 1575 of 1578): with 1/√d_k validation loss on the sample 1.82, "
         "best validation BLEU 34.4; without it validation loss on the sample 3.71 (the upper line), best validation "
         "BLEU 3.0. Over the first 200 steps the softmax's own gradient: 0.32 with, 0.11 without. ‖∇W^Q‖ at step "
         "25: 0.01 with, 1.7 without; at step 1575: 0.025 with, 0.00029 without."),
    Stop("§3.2.2 Eight heads, eight different views", "attention",
         {"kind": ENC[0], "layer": str(ENC[1]), "head": "0"},
         "The overview: every layer × head at once; the framed row of tiles is one layer's heads.",
         "Why several small heads rather than one big one?",
         heads_differ_pointer(ENC[0], ENC[1], ENC[3]),
         "Layer 1: for the row of “dogs” the 8 heads weigh 5 different tokens most: “dogs”, “through”, “running”, "
         "“are”, “</s>”."),
    Stop("§3.2.2 Concat, then W^O", "architecture", {"kind": "encoder_self", "layer": "1"},
         "Figure 2: the h heads' outputs are concatenated, then one linear map W^O mixes them.",
         "What would be lost without W^O?",
         figure2_pointer, "Concat: h · d_v = 8 · 24 = 192 = d_model; W^O is 192 × 192."),
    Stop("§3.1 The masked decoder self-attention and the shift", "attention",
         {"kind": "decoder_self", "layer": "6", "head": "3"},
         "Rows are fed the words written so far, one place late; nothing right of the diagonal can be seen.",
         "Why may the decoder not look at the word it is about to write?",
         masked_row_pointer(6, 3, "Hunde"),
         "Layer 6, head 3: the row fed “Hunde” (it writes “rennen”) sees 3 tokens; its weight on the later ones is "
         "0.00; it looks most at “Zwei” (0.98)."),
    Stop("§3.2.3 Encoder–decoder attention as alignment", "attention", {"kind": "cross", "layer": "5", "head": "4"},
         "Queries from the decoder, keys from the encoder: a German row often looks at the English word it is about "
         "to write.",
         "Does every German row look at one English word, or do some spread over several? Why might they?",
         cell_pointer("cross", 5, 4, "Zwei", plot="detail"),
         "Layer 5, head 4: the row fed “Zwei” (it writes “Hunde”) looks most at “dogs” (0.92)."),
    Stop("Decoding, step by step: predict, then reveal", "decoding", {"layer": "6", "head": "0", "step": "3"},
         "One step: the words written so far go in, one word comes out. Predict it before pressing Reveal.",
         "What will the model write next? Vote, then press Reveal.",
         decoding_pointer(6, 3),
         "Step 3, layer 6, the mean of the heads: written so far “Zwei Hunde”; the decoder looks most at “running” "
         "(0.71).", action="predict"),
    Stop("What does a head do?", "heads", {"kind": "cross", "scope": "sentence", "stat": HEADS_STAT},
         "Each cell is a head, named by its role; the marked head is the one the model misses most when it is "
         "switched off.",
         "How much does the model miss its most needed head, next to its BLEU? What does that say about how the "
         "heads share the work?",
         ranking_pointer,
         "Switched off alone, encoder self-attention's layer 4, head 5 costs the shipped sample the most: 1.70 BLEU "
         "of 37.90."),
)


# ------------------------------------------------------------------------------------------------- the link
def stop_number(query: Mapping[str, str]) -> int | None:
    """The 1-based stop a page's query asks for (``lecture=1&stop=N``), None outside the lecture. A stop out of range
    or malformed is the first."""
    if str(query.get("lecture", "")).strip() not in ("1", "true", "yes", "on"):
        return None
    raw = str(query.get("stop", "1")).strip()
    n = int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 3 else 1
    return n if 1 <= n <= len(STOPS) else 1


def link_query(query: Mapping[str, str]) -> dict[str, str]:
    """The page's query with the lecture's stop opened: the stop's tab and view (over the link's own), presentation
    mode on, the link's sentence kept (the lecture's own when it has none). Outside the lecture: ``query`` as it is."""
    n = stop_number(query)
    if n is None:
        return dict(query)
    stop = STOPS[n - 1]
    keep = {k: v for k, v in query.items() if k in ("text", "target", "colour", "__theme", "lecture", "stop")}
    return {"text": SENTENCE, **keep, **stop.view, "tab": stop.tab, "present": "1"}



def asked_query(asked: str) -> dict[str, str]:
    """A URL's query the page sends (``?lecture=1&stop=3&text=…``, its leading ``?`` optional) as its parameters."""
    return dict(parse_qsl(asked.strip().lstrip("?"), keep_blank_values=True, max_num_fields=32))


def follow_mark(query: Mapping[str, str], view: View | None, result: SessionResult | None,
                cfg: TransformerConfig) -> View | None:
    """The link's view (``view``, parsed from ``query``) of a stop that opens one query of a head (Inside a head) on the
    query its pointer is about, computed on the run shown (``result``): the outlined row, the marked row and the row
    the caption names are one, for any sentence. Any other view as it is."""
    n = stop_number(query)
    if n is None or view is None or "query" not in STOPS[n - 1].view or not hasattr(result, "get"):
        return view
    mark = point(n, cfg, result.get())
    return view if mark.query is None else replace(view, query=mark.query)


# -------------------------------------------------------------------------------------------------- the bar
def _sentence(title: str) -> str:
    """A title as a sentence: a full stop unless it ends with its own mark ("What does a head do?")."""
    return title if title.endswith(("?", "!", ".")) else f"{title}."


def point(n: int, cfg: TransformerConfig, result: AttentionResult, ranking: Mapping | None = None,
          lab: Mapping | None = None) -> Mark:
    """Stop ``n``'s mark on ``result`` (the run of the sentence shown)."""
    return STOPS[n - 1].point(Context(cfg, result, ranking, lab))


def caption_bar(query: Mapping[str, str], cfg: TransformerConfig, result: AttentionResult | None,
                ranking: Mapping | None = None, lab: Mapping | None = None) -> str:
    """The caption bar's HTML for the page's query: empty outside the lecture. The stop's title, what to look at,
    the pointer (the model's own words for the sentence shown), the question, Back / Next; the mark, the action and
    the sentence the pointer is about as data attributes (for assets/web/lecture.js)."""
    n = stop_number(query)
    if n is None:
        return ""
    stop = STOPS[n - 1]
    mark = point(n, cfg, result, ranking, lab) if result is not None else None
    text = result.source_text if result is not None else SENTENCE
    esc = html.escape
    pointer = esc(mark.words) if mark else "Translate a sentence first: the marks follow the model's run."
    data = {"stop": n, "stops": len(STOPS), "text": text, "action": stop.action, "mark": mark.spec() if mark else None}
    return (f'<div id="lecture-bar" role="region" aria-label="Lecture" data-lecture="{esc(json.dumps(data))}">'
            f'<div class="lecture-nav">'
            f'<button type="button" id="lecture-back"{" disabled" if n == 1 else ""}>◀ Back</button>'
            f'<span class="lecture-count">{n} / {len(STOPS)}</span>'
            f'<button type="button" id="lecture-next"{" disabled" if n == len(STOPS) else ""}>Next ▶</button>'
            f'<a id="lecture-exit" href="?">Exit</a></div>'
            f'<div class="lecture-text"><strong>{esc(_sentence(stop.title))}</strong> {esc(stop.look)} '
            f'<span class="lecture-pointer">{pointer}</span> '
            f'<span class="lecture-question">Ask: {esc(stop.question)}</span>'
            f'<span class="lecture-stale" hidden> These marks were for the sentence the stop opened with: Next, Back '
            f'or <a id="lecture-again" href="?">this stop again</a> recomputes them for yours.</span></div></div>')

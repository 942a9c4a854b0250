""""How to read this": a short, folded note on every tab, in the app's own words (``HOW_TO_READ[tab_id]``).

Written from the same vocabulary as the figures (``viz.vocab``), so the note and the axes say the same
thing. Markdown; no user text ever goes in.
"""

from __future__ import annotations

from viz.vocab import AXIS_LABELS, KIND_LABELS

TITLE = "How to read this"

_ROWS = (
    "**Rows attend to columns.** Each row is one query token; its colours show how it shares out its "
    "attention over the columns (the key tokens). Every row adds up to 1."
)
_SHIFT = (
    "**The decoder is one step ahead.** Decoder row *i* is fed token *i* (the first row is fed `<s>`) and "
    "predicts token *i + 1*: the row labelled *Zwei* is the step that writes *Hunde*. So in the "
    f"{KIND_LABELS['cross'].lower()} a row usually looks at the English word it is about to translate."
)
_PIECES = (
    "**Word pieces.** The model reads SentencePiece pieces, not words: a common word is one piece, a rarer one "
    "several. A piece that continues the word before it is shown with a leading “·”: *eine ·m* is the word "
    "*einem*, *perform ·s* is *performs*. Punctuation and `<s>` / `</s>` (start and end) are pieces of their own."
)
_COLOURS = (
    "**Colours.** Black is little weight, orange is much. *0 – 1* uses one scale for every map, so "
    "maps can be compared; *0 – largest* stretches the scale to this map's largest weight; *per row* "
    "stretches every row to its own largest weight (each row then shows where it looks most, however "
    "spread out it is). The hover always shows the weight itself."
)

HOW_TO_READ = {
    "attention": "\n\n".join([
        _ROWS,
        "**Three kinds of attention.** "
        + "; ".join(f"{KIND_LABELS[k]}: rows are the {q}, columns the {c}" for k, (q, c) in AXIS_LABELS.items())
        + ". The decoder's self-attention is masked: row *i* sees only columns up to *i*.",
        _SHIFT,
        "**The overview** shows every layer (rows of tiles, layer 1 on top) and head (columns of tiles) at "
        "once; click a tile, or use the Layer and Head controls, to see it up close. The chosen tile is "
        "framed. *mean* averages the layer's heads.",
        _COLOURS,
        _PIECES,
        "**Keyboard.** Tab to the close-up, then ←/→ change the head and ↑/↓ the layer.",
    ]),
    "scaling": "\n\n".join([
        "**The question.** Attention scores are dot products q·k. If q and k have d_k independent parts of "
        "variance 1, q·k has variance d_k: the larger d_k, the larger the scores.",
        "**1 · Dot products grow with d_k.** Left, the variance of q·k against d_k; right, the histogram of "
        "many random q·k at the chosen d_k. Move log₂ d_k and watch it widen; × 1/√d_k brings it back to 1.",
        "**2 · Large scores saturate the softmax.** Left, one query's weights over the keys at the chosen "
        "scale; right, against d_k, with and without 1/√d_k: unscaled, the weight piles onto one key and the "
        "gradients through the softmax shrink.",
        "**The factor** means the same in every part: every q·k is multiplied by it (a button sets the model's "
        "own 1/√d_k; 1 = no scaling); the line under the slider says what it is for each part's d_k.",
        "**3 · Inside the trained model.** The same factor replaces the model's own 1/√d_k; compare the maps "
        "as trained (left) with the chosen scale (right). " + _ROWS,
        _PIECES,
    ]),
    "architecture": "\n\n".join([
        "**Figure 1** is the whole model as the paper draws it: the encoder (left) reads the English "
        "sentence, the decoder (right) writes the German one, one token at a time. The sizes are this "
        "model's own; hover a block to see them.",
        "**The three attention blocks** are the three kinds of attention the Attention tab shows: the "
        "encoder's self-attention, the decoder's masked self-attention, and the encoder–decoder attention "
        "(queries from the decoder, keys and values from the encoder). Click one to see its heatmaps.",
        "**Figure 2**: scaled dot-product attention (left) and multi-head attention (right): h heads, each "
        "with its own projections, concatenated and projected again.",
    ]),
    "model-card": (
        "What was trained, on which data, for how long, and how well it translates (BLEU on the Multi30k "
        "test set). The numbers are this model's own, measured when it was trained."
    ),
    "inside": "\n\n".join([
        "**One query, one head, step by step**, on the Attention tab's sentence: (a) the token's vector x is "
        "projected to its query q and to the keys K and values V of all tokens; (b) each score q·k is scaled, "
        "masked where the decoder may not look ahead, and turned into weights by the softmax; (c) the head's "
        "output is the weighted sum of the values; (d) Figure 2 with these numbers. The tab opens on the head and "
        "query where footnote 4 shows most: beside (b), the same softmax as trained, unscaled and scaled twice.",
        "**Whole matrices**: Equation (1) for every query at once — X → Q, K, V, then Q Kᵀ, ÷ √d_k, + the mask "
        "(grey, hatched: −∞) and the softmax (each row sums to 1) as queries × keys maps, then A V, Concat and W^O. "
        "Hover a cell for its value; click a row to see that query step by step.",
        "**Weights vs contributions**: a large weight on a token whose value vector is small moves the output "
        "little; the contribution accounts for that.",
        _SHIFT,
        _PIECES,
    ]),
    "heads": "\n\n".join([
        "**The grids**: one cell per head (rows: layers, columns: heads), per kind of attention, coloured by the "
        "statistic you choose and labelled with the head's role (for example, looks at the previous token, or "
        "at the end of the sentence). Click a cell to see that head on the Attention tab.",
        "**Switch heads off**: their output is set to zero for your request only; the translation and the "
        "sample's BLEU and chrF before and after show what the model loses without them.",
        "**Rollout**: raw attention is one layer's view; the rollout follows the attention through all layers "
        "below (each layer mixed half with itself, for the residual connection), so it shows where a token's "
        "information comes from in the input. " + _ROWS,
        _PIECES,
    ]),
    "decoding": "\n\n".join([
        "**Step by step.** At step *t* the decoder has written the tokens so far and predicts the next one; "
        "the bars are its five most likely next tokens, the chosen one marked.",
        _SHIFT,
        "**Lines.** A line joins a query token to a key token; the stronger the weight, the darker the line. "
        "Hover or click a token to see only its lines.",
        _PIECES,
    ]),
    "lab": "\n\n".join([
        "**Siblings.** Each sibling is the shipped architecture trained again on the same data and vocabulary for "
        "the same shorter budget, with one thing changed: the number of heads (d_k = 192 / h, so the compute "
        "stays the same), no 1/√d_k, or additive attention. Every setting gets three seeds; a verdict compares "
        "two settings' mean test BLEU with a 95 % interval that holds both the seeds' chance and the test "
        "sentences' — an interval that holds 0 says \"inconclusive\", however large the difference looks.",
        "**Curves.** The x axis is the training step; a setting has one colour and marker, a seed one line style. "
        "Loss falls as the model learns. The softmax's own gradient ‖diag(p) − p pᵀ‖ is footnote 4's quantity: "
        "it shrinks as the softmax saturates (one weight near 1). ‖∇W^Q‖ is how strongly training moves the "
        "queries: without 1/√d_k it is larger, not smaller, since nothing divides the gradient by √d_k on its way "
        "back. The entropy is how spread out attention is (low: each row looks at few tokens).",
        "**Time-lapse.** The same sentence, teacher-forced with its reference, at log-spaced steps of one run: "
        "at step 0 a scaled model's attention is spread but not uniform, an unscaled one's already sharp (its "
        "scores are √d_k larger); watch when a head starts to align — or, in h1-unscaled's cross-attention, when "
        "every row turns uniform. ▶ Play steps through the snapshots. " + _ROWS,
        _PIECES,
    ]),
}

"""The paper's Figures 1 and 2, redrawn as plain SVG strings from the live model's config.

Layout: Figure 1 reads bottom to top like the paper, encoder on the left, decoder on the right, both
over one row of inputs, compact enough to be whole on a projector's first screen at a legible size.
The encoder stack is shorter, so that its output ("memory") leaves it below the decoder's
encoder–decoder attention: it rises, runs right between the stacks, down, and enters that block from
below as K and V, while the decoder's own stream enters it as Q: no line crosses another. Residual
connections leave each sub-layer's input at a dot, run up a lane beside the stack (left of the
encoder, right of the decoder, as in the paper) and enter the side of the Add & Norm above. The empty
top-left corner holds the configuration and the parameter table; sizes and tensor shapes (batch 1,
when lengths are given) sit beside the blocks and arrows.

Themes: text, arrows and outlines use ``currentColor``, so they take the page's text colour (dark on a
light theme, light on a dark one); boxes use the paper's hues as translucent fills (fill-opacity 0.22)
that read as pastel on white and as deep tints on a dark page. No fonts, images or scripts are loaded.

Interaction: every block is a ``<g class="tf-block tf-KIND">`` whose first child is a ``<title>`` (the
browser's native tooltip: what the block is and its parameter count) and which carries
``data-params`` (its exact count; ``data-repeat`` on a stack says how often its blocks occur). The
attention blocks of Figure 1 also carry ``data-attention`` = ``encoder_self`` | ``decoder_self`` |
``cross`` and ``tabindex="0"``: the app maps a click on them to its heatmap selector. Figure 2 shows
the mechanism shared by all three kinds, so it carries no ``data-attention``.
"""

from __future__ import annotations

import math
import re
from xml.sax.saxutils import escape

from model.network.config import TransformerConfig
from model.network.params import format_count, parameter_breakdown
from model.terms import KINDS

FONT = "system-ui, sans-serif"
# Close to the paper's palette; used only as translucent fills and outlines, each outline ≥ 3:1 against white and the
# dark theme's #27272a (the paper's amber, yellow, green and teal were 2.2, 1.9, 2.3 and 2.5:1 on white)
COLORS = {
    "attn": "#d97706", "ffn": "#3b82f6", "norm": "#a16207", "embed": "#ec4899", "linear": "#8b5cf6",
    "softmax": "#16a34a", "matmul": "#a855f7", "mask": "#ec4899", "concat": "#a16207", "pos": "#0d9488",
}
CSS = (
    ".tf-block>rect{transition:fill-opacity .15s}"
    ".tf-block:hover>rect{fill-opacity:.45;stroke-width:2.4}"
    ".tf-block[data-attention]{cursor:pointer}"
    ".tf-block[data-attention]:focus-visible>rect{stroke-width:3;fill-opacity:.45}"
)
_MATH = re.compile(r"([_^])(\{[^}]*\}|[A-Za-z0-9]+)")  # d_model, W_i^Q, d_{ff}: sub/superscripts


def _attr(value: object) -> str:
    return escape(str(value), {'"': "&quot;"})


def _tspan(s: str, dy: float, small: bool = False) -> str:
    attrs = (f' dy="{dy:g}"' if dy else "") + (' font-size="75%"' if small else "")
    return f"<tspan{attrs}>{escape(s)}</tspan>" if attrs else escape(s)


def _rich(s: str) -> str:
    """Escape ``s``; ``_x`` / ``^x`` become sub/superscript tspans (dy shifts, which every browser honours)."""
    parts, pos, shift = [], 0, 0.0
    for m in _MATH.finditer(s):
        if m.start() > pos:
            parts.append(_tspan(s[pos : m.start()], -shift))
            shift = 0.0
        target = 3.0 if m.group(1) == "_" else -5.0
        parts.append(_tspan(m.group(2).strip("{}"), target - shift, small=True))
        shift, pos = target, m.end()
    if pos < len(s) or shift:
        parts.append(_tspan(s[pos:] or "\u200b", -shift))
    return "".join(parts)


def _text(x: float, y: float, s: str, size: float = 12, anchor: str = "middle", weight: str = "", dim=False) -> str:
    extra = (f' font-weight="{weight}"' if weight else "") + (' fill-opacity="0.75"' if dim else "")
    return f'<text x="{x:g}" y="{y:g}" font-size="{size:g}" text-anchor="{anchor}"{extra}>{_rich(s)}</text>'


def _note(x: float, y: float, s: str, anchor: str = "start", size: float = 10.5) -> str:
    """A dimmed annotation: tensor shapes, sizes."""
    return _text(x, y, s, size, anchor, dim=True)


def _rect(x: float, y: float, w: float, h: float, kind: str) -> str:
    c = COLORS[kind]
    return (f'<rect x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" rx="5" fill="{c}" fill-opacity="0.22" '
            f'stroke="{c}" stroke-width="1.4"/>')


def _group(cls: str, title: str, body: str, params: int | None = None, attention: str | None = None, extra="") -> str:
    attrs = f' class="{_attr(cls)}"' + (f' data-params="{params}"' if params is not None else "") + extra
    if attention is not None:
        if attention not in KINDS:
            raise ValueError(f"unknown attention kind {attention!r}")
        attrs += f' data-attention="{attention}" tabindex="0" role="button" aria-label="{_attr(title)}"'
    return f"<g{attrs}><title>{escape(title)}</title>{body}</g>"


def _shadow(x: float, y: float, w: float, h: float, kind: str, i: int) -> str:
    """The visible L-shaped rim of the i-th card stacked up-right behind a box (h parallel copies)."""
    a, b, c, r = 5 * i, 5 * (i - 1), COLORS[kind], x + w
    pts = f"{x + a:g},{y - b:g} {x + a:g},{y - a:g} {r + a:g},{y - a:g} {r + a:g},{y + h - a:g} {r + b:g},"
    pts += f"{y + h - a:g} {r + b:g},{y - b:g}"
    edge = f"M{x + a:g},{y - b:g} V{y - a:g} H{r + a:g} V{y + h - a:g} H{r + b:g}"
    return f'<polygon points="{pts}" fill="{c}" fill-opacity="0.14"/><path d="{edge}" fill="none" stroke="{c}"/>'


def _box(x: float, y: float, w: float, h: float, kind: str, title: str, label: str, sub: str = "", note: str = "",
         params: int | None = None, attention: str | None = None, shadows: int = 0) -> str:
    """A labelled block; ``sub`` is a smaller second line, ``note`` a small count at the right edge."""
    body = "".join(_shadow(x, y, w, h, kind, i) for i in range(shadows, 0, -1)) + _rect(x, y, w, h, kind)
    cx, cy = x + w / 2, y + h / 2
    if sub:
        size = 12.5 if len(label) < 24 else 11.5  # "Masked Multi-Head Attention" must fit
        up, down = (2.5, 10.5) if h < 36 else (2, 12)  # (Figure 1's compact sub-layers: 30 tall)
        body += _text(cx, cy - up, label, size, weight="600") + _note(cx, cy + down, sub, "middle")
    else:
        body += _text(cx, cy + 4.5, label, 12.5, weight="600")
    if note:
        body += _note(x + w - 6, cy + 4, note, "end", 9.5)
    return _group(f"tf-block tf-{kind}", title, body, params, attention)


def _arrow(m: str, *points: tuple[float, float], head: bool = True) -> str:
    """A polyline through ``points``, with the arrowhead marker ``m`` at its end unless ``head`` is False."""
    d = "M" + " L".join(f"{x:g},{y:g}" for x, y in points)
    end = f' marker-end="url(#{m})"' if head else ""
    return f'<path d="{d}" fill="none" stroke="currentColor" stroke-opacity="0.7" stroke-width="1.3"{end}/>'


def _dot(x: float, y: float) -> str:
    return f'<circle cx="{x:g}" cy="{y:g}" r="2.4" fill="currentColor" fill-opacity="0.8"/>'


def _svg(width: int, height: int, body: str, label: str, m: str) -> str:
    """The figure, named by ``label``: a picture (role img), or a group where its blocks are buttons (an image's
    content is not meant to be focused: Figure 1's attention blocks are)."""
    role = "group" if 'role="button"' in body else "img"
    head = '<path d="M0,1 L10,5 L0,9 z" fill="currentColor" fill-opacity="0.8"/>'
    defs = (f'<defs><marker id="{m}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" '
            f'orient="auto-start-reverse">{head}</marker></defs>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="tf-figure" viewBox="0 0 {width} {height}" width="100%" '
            f'font-family="{FONT}" fill="currentColor" role="{role}" aria-label="{_attr(label)}">'
            f"<style>{CSS}</style>{defs}{body}</svg>")


def _summary(cfg: TransformerConfig, total: int) -> str:
    return (f"N={cfg.n_layers}, d_model={cfg.d_model}, h={cfg.n_heads}, d_k={cfg.d_k}, d_ff={cfg.d_ff}, "
            f"vocab={cfg.vocab_size}, {total:,} parameters")


def _shape(*dims: object) -> str:
    return "(" + ", ".join(str(d) for d in dims) + ")"


# Figure 1 geometry (units of the viewBox): compact enough to be whole on a 1280×720 screen's first screen at a
# legible size (890 × 440 units drawn 1.3× there: its smallest notes ~12 px; in presentation mode 16 px). Boxes are W
# wide; sub-layers SUB tall (a name and a smaller line), Add & Norm, Softmax, Linear and the embeddings one line
# (their sizes beside them). Both stacks end at Y_BOTTOM, over the same row of inputs; the encoder, two sub-layers
# shorter, tops out below the decoder's encoder–decoder attention: its output rises above it, runs right between
# the stacks and down to Y_MEM, under that block, which it enters from below as K and V (the paper's arrows).
W, SUB, AN = 204, 30, 20
EL, DL = 148, 498  # left edges of the encoder and decoder columns
EC, DC, ER, DR = EL + W / 2, DL + W / 2, EL + W, DL + W
E_LANE, D_LANE = EL - 20, DR + 20  # residual lanes
Y_TOP_E, Y_TOP_D, Y_BOTTOM = 174, 80, 342  # the stacks' frames: the encoder's top, the decoder's, both bottoms
Y_OVER, X_DOWN, Y_MEM = 166, 468, 230  # the encoder output: above the encoder, down between the stacks, across
Y_PE, Y_EMB, Y_IN = 357, 377, 425  # positional encodings (centre), embeddings (top), the inputs' names (baseline)
# (y of each block's top) encoder: attention, Add & Norm, feed-forward, Add & Norm; decoder: masked attention, Add &
# Norm, encoder–decoder attention, Add & Norm, feed-forward, Add & Norm; the output head: Linear, Softmax
E_Y = (284, 254, 210, 180)
D_Y = (284, 254, 190, 160, 116, 86)
Y_LINEAR, Y_SOFTMAX = 50, 20


def _split(m: str, left: float, y_from: float, y_box: float) -> str:
    """One input line fanning out into the V, K, Q inputs of an attention block (the paper's three arrows)."""
    ys, c, xv, xq = y_box + 14, left + W / 2, left + W / 4, left + 3 * W / 4
    return (_arrow(m, (c, y_from), (c, y_box)) + _arrow(m, (xv, ys), (xq, ys), head=False)
            + _arrow(m, (xv, ys), (xv, y_box)) + _arrow(m, (xq, ys), (xq, y_box)))


def _residual(m: str, x: float, y: float, lane: float, y_norm: float, edge: float) -> str:
    """x + Sublayer(x): from the sub-layer's input at (x, y) up the lane into the side of the Add & Norm."""
    return _dot(x, y) + _arrow(m, (x, y), (lane, y), (lane, y_norm + AN / 2), (edge, y_norm + AN / 2))


def _add_norm(left: float, y: float, where: str, d: int) -> str:
    title = f"{where}: Add & Norm, LayerNorm(x + Sublayer(x)) (post-LN, §3.1) — 2·d_model = {2 * d:,} parameters"
    return _box(left, y, W, AN, "norm", title, "Add & Norm", note=format_count(2 * d), params=2 * d)


def _legend(cfg: TransformerConfig, p: dict[str, int]) -> list[str]:
    """Configuration and parameter table, in the empty top-left corner above the (lower) encoder."""
    n, d, v = cfg.n_layers, cfg.d_model, cfg.vocab_size
    o = [_text(14, 6, "Transformer (Figure 1), drawn from the live config", 15, "start", "700"),
         _text(14, 26, f"N = {n} · d_model = {d} · h = {cfg.n_heads} · d_k = d_v = {cfg.d_k}", 12.5, "start"),
         _text(14, 44, f"d_ff = {cfg.d_ff} · vocabulary = {v}", 12.5, "start")]
    rows = [
        ("embedding", f"Shared embedding, vocab × d_model = {v} × {d}",
         "Shared embedding matrix: source, target and pre-softmax linear (§3.4)"),
        ("encoder", f"Encoder: {n} × {format_count(p['encoder_layer'])}", f"Encoder: N = {n} layers"),
        ("decoder", f"Decoder: {n} × {format_count(p['decoder_layer'])}", f"Decoder: N = {n} layers"),
        ("output_projection", "Output projection (shares the embedding)", "Pre-softmax linear: reuses the embedding"),
        ("positional_encoding", "Positional encoding (sinusoidal)", "Positional encoding: computed, not learned"),
        ("total", "Total", "Total"),
    ]
    for i, (key, label, title) in enumerate(rows):
        y, bold = 64 + 16 * i + (7 if key == "total" else 0), "700" if key == "total" else ""
        body = _text(14, y, label, 12, "start", bold) + _text(410, y, format_count(p[key]), 12, "end", bold)
        extra = f' data-part="{key}" data-part-params="{p[key]}"'
        o.append(_group("tf-legend-row", f"{title}: {p[key]:,} parameters", body, extra=extra))
    o.append('<path d="M14,137 H410" stroke="currentColor" stroke-opacity="0.5"/>')
    return o


def _encoder(m: str, d: int, attn_f: str, a_count: int, ffn_f: str, ffn_sub: str, f_count: int) -> list[str]:
    """The encoder layer's blocks and arrows, bottom to top (drawn once, inside its "N×" frame)."""
    y_attn, y_norm1, y_ffn, y_norm2 = E_Y
    return [
        _box(EL, y_attn, W, SUB, "attn", f"Encoder layer: multi-head self-attention — {attn_f}",
             "Multi-Head Attention", f"self-attention · {format_count(a_count)}", params=a_count,
             attention="encoder_self"),
        _add_norm(EL, y_norm1, "Encoder layer", d),
        _box(EL, y_ffn, W, SUB, "ffn", f"Encoder layer: position-wise feed-forward — {ffn_f}", "Feed Forward",
             ffn_sub, params=f_count),
        _add_norm(EL, y_norm2, "Encoder layer", d),
        _split(m, EL, Y_PE - 10, y_attn + SUB), _residual(m, EC, y_attn + SUB + 22, E_LANE, y_norm1, EL),
        _arrow(m, (EC, y_attn), (EC, y_norm1 + AN)), _arrow(m, (EC, y_norm1), (EC, y_ffn + SUB)),
        _residual(m, EC, (y_norm1 + y_ffn + SUB) / 2, E_LANE, y_norm2, EL), _arrow(m, (EC, y_ffn), (EC, y_norm2 + AN)),
    ]


def _decoder(m: str, d: int, attn_f: str, a_count: int, ffn_f: str, ffn_sub: str, f_count: int) -> list[str]:
    """The decoder layer's blocks and arrows, bottom to top: Q rises into the encoder–decoder attention at its right
    quarter, the encoder output's K and V at its left half."""
    y_self, y_norm1, y_cross, y_norm2, y_ffn, y_norm3 = D_Y
    q75, y_route = DL + 0.75 * W, y_norm1 - 7
    return [
        _box(DL, y_self, W, SUB, "attn", f"Decoder layer: masked multi-head self-attention (i sees ≤ i) — {attn_f}",
             "Masked Multi-Head Attention", f"self-attention · {format_count(a_count)}", params=a_count,
             attention="decoder_self"),
        _add_norm(DL, y_norm1, "Decoder layer", d),
        _box(DL, y_cross, W, SUB, "attn", "Decoder layer: encoder–decoder attention, Q from the decoder, K and V from "
             f"the encoder output — {attn_f}", "Multi-Head Attention", f"encoder–decoder · {format_count(a_count)}",
             params=a_count, attention="cross"),
        _add_norm(DL, y_norm2, "Decoder layer", d),
        _box(DL, y_ffn, W, SUB, "ffn", f"Decoder layer: position-wise feed-forward — {ffn_f}", "Feed Forward", ffn_sub,
             params=f_count),
        _add_norm(DL, y_norm3, "Decoder layer", d),
        _split(m, DL, Y_PE - 10, y_self + SUB), _residual(m, DC, y_self + SUB + 22, D_LANE, y_norm1, DR),
        _arrow(m, (DC, y_self), (DC, y_norm1 + AN)),
        _arrow(m, (DC, y_norm1), (DC, y_route), (q75, y_route), (q75, y_cross + SUB)),
        _residual(m, q75, y_route - 8, D_LANE, y_norm2, DR), _arrow(m, (DC, y_cross), (DC, y_norm2 + AN)),
        _arrow(m, (DC, y_norm2), (DC, y_ffn + SUB)), _residual(m, DC, (y_norm2 + y_ffn + SUB) / 2, D_LANE, y_norm3, DR),
        _arrow(m, (DC, y_ffn), (DC, y_norm3 + AN)),
    ]


def _inputs(m: str, p: dict[str, int], v: int, d: int, s: object, t: object, shapes: bool) -> list[str]:
    """The embeddings, the positional encodings added to them, and the inputs' names (with their shapes)."""
    emb_title = (f"Input embedding: vocab × d_model = {v} × {d} = {p['embedding']:,} parameters, shared with the "
                 "output embedding and the pre-softmax linear (§3.4); multiplied by √d_model")
    o = [_box(EL, Y_EMB, W, 22, "embed", emb_title, "Input Embedding", params=p["embedding"]),
         _note(EL - 8, Y_EMB + 15, f"{v} × {d} · {format_count(p['embedding'])}", "end"),
         _box(DL, Y_EMB, W, 22, "embed", "Output embedding: the same matrix as the input embedding (§3.4) — 0 extra "
              "parameters", "Output Embedding", params=0),
         _note(DR + 8, Y_EMB + 15, "shared with the input · +0")]
    pe_title = "Positional encoding added to the scaled embedding: sin/cos of the position (§3.5), fixed — 0 parameters"
    for c, side, inp, length, room in ((EC, -1, "Inputs", s, 26), (DC, 1, "Outputs (shifted right)", t, 84)):
        o.append(_arrow(m, (c, Y_EMB), (c, Y_PE + 10)) + _arrow(m, (c, Y_IN - 12), (c, Y_EMB + 22))
                 + _text(c, Y_IN, inp, 12.5, weight="600"))
        if shapes:
            o.append(_note(c + room, Y_IN, f"{_shape(1, length)} token ids"))
        sx, anchor, pc, y = c + 42 * side, "end" if side < 0 else "start", COLORS["pos"], Y_PE
        wave = " ".join(f"{sx - 7 + i:g},{y - 5 * math.sin(i * math.pi / 7):.1f}" for i in range(15))
        pos = (f'<circle cx="{c:g}" cy="{y}" r="10" fill="none" stroke="currentColor" stroke-width="1.3"/>'
               f'<path d="M{c - 6:g},{y} H{c + 6:g} M{c:g},{y - 6} V{y + 6}" stroke="currentColor" stroke-width="1.3"/>'
               f'<circle cx="{sx:g}" cy="{y}" r="11" fill="{pc}" fill-opacity="0.22" stroke="{pc}"/>'
               f'<polyline points="{wave}" fill="none" stroke="currentColor" stroke-width="1.2"/>'
               + _arrow(m, (sx - 11 * side, y), (c + 10 * side, y), head=False)
               + _text(sx + 18 * side, y - 3, "Positional Encoding", 12, anchor, "600")
               + _note(sx + 18 * side, y + 11, "sinusoidal · 0 params", anchor))
        o.append(_group("tf-block tf-pos", pe_title, pos, params=0))
    return o


def figure1_svg(cfg: TransformerConfig, src_len: int | None = None, tgt_len: int | None = None) -> str:
    """Figure 1 (the model architecture) for ``cfg``; with ``src_len``/``tgt_len``, the tensor shapes too."""
    p, m = parameter_breakdown(cfg), "tf-arrow-fig1"
    d, h, n, v, dk = cfg.d_model, cfg.n_heads, cfg.n_layers, cfg.vocab_size, cfg.d_k
    s = src_len if src_len is not None else "S"
    t = tgt_len if tgt_len is not None else "T"
    shapes = src_len is not None or tgt_len is not None
    a_count, f_count = p["encoder_self_attn"], p["encoder_ffn"]
    attn_f = (f"4·(d_model²+d_model) = {a_count:,} parameters (W^Q, W^K, W^V, W^O with biases); "
              f"h = {h} heads of d_k = {dk}. Click for its attention maps.")
    ffn_f = f"max(0, xW1+b1)W2+b2, 2·d_model·d_ff + d_ff + d_model = {f_count:,} parameters"
    ffn_sub = f"{d} → {cfg.d_ff} → {d} · {format_count(f_count)}"
    parts = (m, d, attn_f, a_count, ffn_f, ffn_sub, f_count)
    o = _legend(cfg, p)
    for left, right, top, name, key, x_lab, y_lab, anchor, inner in (
        (E_LANE - 18, ER + 10, Y_TOP_E, "Encoder", "encoder", E_LANE - 26, 250, "end", _encoder(*parts)),
        (DL - 16, D_LANE + 18, Y_TOP_D, "Decoder", "decoder", D_LANE + 26, 114, "start", _decoder(*parts)),
    ):
        frame = (f'<rect x="{left:g}" y="{top}" width="{right - left:g}" height="{Y_BOTTOM - top}" rx="10" '
                 'fill="currentColor" fill-opacity="0.04" stroke="currentColor" stroke-opacity="0.45"/>')
        layer = p[key + "_layer"]
        frame += _text(x_lab, y_lab, f"{n}×", 24, anchor, "700") + _note(x_lab, y_lab + 17, f"N = {n}", anchor, 11)
        frame += _note(x_lab, y_lab + 31, f"{format_count(layer)} each", anchor, 11)
        title = f"{name}: N = {n} identical layers of {layer:,} parameters, {p[key]:,} in all"
        o.append(_group(f"tf-stack tf-{key}", title, frame + "".join(inner), extra=f' data-repeat="{n}"'))
    # encoder output (memory): up out of the encoder, right, down between the stacks, into K and V from below
    y_cross, k50, v25 = D_Y[2] + SUB, DL + 0.5 * W, DL + 0.25 * W
    o.append(_arrow(m, (EC, E_Y[3]), (EC, Y_OVER), (X_DOWN, Y_OVER), (X_DOWN, Y_MEM), (k50, Y_MEM), (k50, y_cross))
             + _dot(v25, Y_MEM) + _arrow(m, (v25, Y_MEM), (v25, y_cross)))
    memory = ["encoder output", "→ K, V", *([_shape(1, s, d)] if shapes else [])]
    o += [_note(X_DOWN - 6, E_Y[3] + 8 + 14 * i, line, "end") for i, line in enumerate(memory)]
    # --- output head ---
    o.append(_arrow(m, (DC, D_Y[5]), (DC, Y_LINEAR + 20)) + _arrow(m, (DC, Y_LINEAR), (DC, Y_SOFTMAX + 20))
             + _arrow(m, (DC, Y_SOFTMAX), (DC, 7)))
    o.append(_box(DL, Y_LINEAR, W, 20, "linear", "Linear: pre-softmax projection d_model → vocab, x·Eᵀ with the shared "
                  "embedding E (§3.4) — 0 extra parameters, no bias", "Linear", params=p["output_projection"]))
    o.append(_note(DR + 10, Y_LINEAR + 9, "shares the embedding · +0"))
    o.append(_box(DL, Y_SOFTMAX, W, 20, "softmax", f"Softmax over the vocabulary ({v} entries) — no parameters",
                  "Softmax", params=0))
    o.append(_text(DC, 2, "Output Probabilities", 12.5, weight="600"))
    o += _inputs(m, p, v, d, s, t, shapes)
    # --- tensor shapes for the current input (batch of 1) ---
    if shapes:
        o += [_note(EC + 16, Y_PE + 4, _shape(1, s, d)), _note(DC - 16, Y_PE + 4, _shape(1, t, d), "end")]
        for x, y, dims in ((ER + 16, E_Y[0] + 12, (s, s)), (D_LANE + 26, D_Y[0] + 12, (t, t)),
                           (D_LANE + 26, D_Y[2] + 10, (t, s))):
            o.append(_note(x, y, "weights") + _note(x, y + 14, _shape(1, h, *dims)))
        o += [_note(DR + 10, Y_LINEAR + 23, f"logits {_shape(1, t, v)}"),
              _note(DR + 10, Y_SOFTMAX + 14, f"probabilities {_shape(1, t, v)}")]
    body = '<g transform="translate(0,12)">' + "".join(o) + "</g>"  # room above for "Output Probabilities"
    return _svg(890, 442, body, f"Transformer architecture (Figure 1): {_summary(cfg, p['total'])}", m)


def figure2_svg(cfg: TransformerConfig) -> str:
    """Figure 2: scaled dot-product attention (left) and multi-head attention (right), for ``cfg``'s h and d_k."""
    m, d, h, dk = "tf-arrow-fig2", cfg.d_model, cfg.n_heads, cfg.d_k
    attn, lin, scale = parameter_breakdown(cfg)["encoder_self_attn"], d * d + d, 1 / math.sqrt(dk)
    o = [_text(170, 22, "Scaled Dot-Product Attention", 15, weight="700"), _text(170, 42, "softmax(QK^T / √d_k) V", 12)]
    # left: one head, bottom to top; chain centred at x=lc, V rises on the right
    lc, bw = 170, 130
    chain = [  # (y, kind, label, sub, tooltip, annotation)
        (350, "matmul", "MatMul", "", f"Q·Kᵀ: every query against every key, (L_q, d_k)·(d_k, L_k) with d_k = {dk}",
         f"Q K^T, d_k = {dk}"),
        (290, "norm", "Scale", f"× 1/√d_k = 1/√{dk}", f"Scale by 1/√d_k = 1/√{dk} ≈ {scale:.3f} (footnote 4: for "
         "unit-variance q, k the dot product q·k has variance d_k)", f"≈ {scale:.3f}"),
        (230, "mask", "Mask (opt.)", "", "Optional mask: padding keys everywhere; in the decoder's self-attention also "
         "the future positions", "causal / padding"),
        (170, "softmax", "SoftMax", "", "Softmax over the keys: the attention weights that the heatmaps show",
         "→ the heatmaps"),
        (100, "matmul", "MatMul", "", "Attention weights · V: a weighted average of the values", ""),
    ]
    for y, kind, label, sub, title, note in chain:
        o.append(_box(lc - bw / 2, y, bw, 38 if sub else 30, kind, title, label, sub, params=0))
        if note:
            o.append(_note(300, y + (23 if sub else 19), note, size=11))
    for y0, y1 in ((350, 328), (290, 260), (230, 200), (170, 130), (100, 66)):
        o.append(_arrow(m, (lc, y0), (lc, y1)))
    for x, name in ((lc - 35, "Q"), (lc + 35, "K")):
        o.append(_arrow(m, (x, 412), (x, 380)) + _text(x, 428, name, 13, weight="700"))
    o.append(_arrow(m, (270, 412), (270, 115), (lc + bw / 2, 115)) + _text(270, 428, "V", 13, weight="700"))
    # right: multi-head attention, chain centred at x=rc
    rc = 690
    o.append(_text(rc, 22, "Multi-Head Attention", 15, weight="700"))
    o.append(_text(rc, 42, f"h = {h} heads, d_k = d_v = d_model / h = {d} / {h} = {dk}", 12))
    for x, name in ((rc - 110, "V"), (rc, "K"), (rc + 110, "Q")):
        title = (f"Linear: {name}·W_i^{name} for each head i = 1..{h}, W_i^{name} is d_model × d_k = {d} × {dk} "
                 f"(as implemented, one d_model × d_model Linear with bias for all heads: {lin:,} parameters)")
        o.append(_box(x - 40, 350, 80, 30, "linear", title, "Linear", params=lin, shadows=2))
        o.append(_arrow(m, (x, 412), (x, 380)) + _text(x, 428, name, 13, weight="700") + _arrow(m, (x, 340), (x, 290)))
    o.append(_note(rc - 160, 359, "W_i^Q, W_i^K, W_i^V:", "end", 11))
    o.append(_note(rc - 160, 380, f"{d} × {dk}, i = 1 … {h}", "end", 11))
    o.append(_box(rc - 140, 240, 280, 50, "matmul", f"Scaled dot-product attention, run by h = {h} heads in parallel, "
                  f"each on d_k = {dk} dimensions", "Scaled Dot-Product Attention", f"each on d_k = {dk} dimensions",
                  params=0, shadows=2))
    o.append(_text(rc + 165, 262, f"× h = {h}", 15, "start", "700"))
    o.append(_box(rc - 65, 170, 130, 30, "concat", f"Concat: {h} heads × d_v = {dk} → {h * dk} = d_model", "Concat",
                  params=0))
    o.append(_note(rc + 80, 190, f"h · d_v = {h} · {dk} = {h * dk}", size=11))
    o.append(_box(rc - 65, 110, 130, 30, "linear", f"Linear W^O: h·d_v × d_model = {d} × {d}, with bias — {lin:,} "
                  "parameters", "Linear", params=lin))
    o.append(_note(rc + 80, 130, f"W^O: {d} × {d}", size=11))
    o.append(_arrow(m, (rc, 230), (rc, 200)) + _arrow(m, (rc, 170), (rc, 140)) + _arrow(m, (rc, 110), (rc, 66)))
    o.append(_note(rc + 10, 80, f"MultiHead(Q, K, V): (1, L_q, {d})", size=11))
    o.append(_note(480, 470, f"Each multi-head attention block: 4·(d_model² + d_model) = {attn:,} parameters "
                   f"({format_count(attn)}: W^Q, W^K, W^V, W^O with biases)", "middle", 12))
    return _svg(960, 485, "".join(o), f"Attention (Figure 2): {_summary(cfg, parameter_breakdown(cfg)['total'])}", m)

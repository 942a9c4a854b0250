"""Text made safe where it is shown: tokens and free text as plotly label text, and plain text inside Markdown.

Token display (``escape_token``), for raw SentencePiece pieces:
  "▁Haus" -> "Haus"   a piece that starts a word loses its "▁" marker;
  "tür"   -> "·tür"   a piece that continues a word gets a leading middle dot;
  "."     -> "."      ... unless it is only punctuation (no "·." after "Schnee");
  "▁"     -> "␣"      a lone word marker stays visible;
  "<s>", "</s>", "<unk>" are shown as they are (but escaped, like all text).
  Then control characters become "�", text over ``max_len`` characters ends in "…", and
  & < > " ' $ become HTML entities, so plotly shows "<b>" literally instead of bold text
  (and "$...$" never reaches MathJax).

``plain_token``: a piece as the figures show it, unescaped again (for text that is escaped otherwise).
``PIECE_NOTE`` and ``piece_example``: what the "·" means, with a word of the sentence ("eine ·m = einem").
Free text (``escape_text``: titles, axis labels, hovers) gets the same control-character and entity treatment,
without the SentencePiece rules. Markdown (``md_escape``): no emphasis, links, HTML or maths from the text itself.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata

from model.terms import WORD_MARKER

_SPECIAL = re.compile(r"</?[A-Za-z0-9_|]{1,16}>")  # <s>, </s>, <unk>, <pad>, <2de>
_BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_ENTITIES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;", "'": "&#39;", "$": "&#36;"})
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~])")


def escape_token(piece: str, max_len: int = 24) -> str:
    """Make one SentencePiece piece safe and readable as plotly label text (see the module docstring)."""
    if not isinstance(piece, str):
        raise ValueError(f"a token must be a str, got {type(piece).__name__}: {piece!r}")
    if max_len < 2:
        raise ValueError(f"max_len must be at least 2, got {max_len}")
    return _escaped(piece, max_len)


@functools.lru_cache(maxsize=8192)  # a figure escapes the same few dozen pieces hundreds of times
def _escaped(piece: str, max_len: int) -> str:
    if _SPECIAL.fullmatch(piece):
        text = piece
    elif piece.startswith(WORD_MARKER):
        text = piece[1:] or "\u2423"
    elif _is_punctuation(piece):  # "." "," "!" '"': read as punctuation, not as half a word
        text = piece
    else:
        text = "\u00b7" + piece
    text = text.replace(WORD_MARKER, " ")
    text = "".join("\ufffd" if _is_control(ch) else ch for ch in text)
    if len(text) > max_len:
        text = text[: max_len - 1] + "\u2026"
    return text.translate(_ENTITIES)


def _is_punctuation(piece: str) -> bool:
    """Only punctuation characters (Unicode categories P*): such a piece gets no continuation dot."""
    return all(unicodedata.category(ch).startswith("P") for ch in piece)


def _is_control(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Zl", "Zp") or ch in _BIDI_CONTROLS


def plain_token(piece: str, max_len: int = 24) -> str:
    """A piece as the figures show it ("▁Haus" -> "Haus", "m" -> "·m"), as plain (unescaped) text, e.g. for Markdown."""
    return _plain(piece, max_len) if isinstance(piece, str) else html.unescape(escape_token(piece, max_len))


@functools.lru_cache(maxsize=8192)
def _plain(piece: str, max_len: int) -> str:
    return html.unescape(escape_token(piece, max_len))


PIECE_NOTE = ("“·” marks a word piece that continues the word before it (the model reads SentencePiece pieces, "
              "not words)")


def piece_example(pieces: list[str] | tuple[str, ...]) -> str | None:
    """The first word of ``pieces`` (raw SentencePiece pieces) that the figures show in pieces, as plain text:
    "eine ·m = einem"; None when every piece is a whole word (or punctuation)."""
    shown = [plain_token(p) for p in pieces]
    for i, text in enumerate(shown):
        if not (text.startswith("\u00b7") and i > 0 and not _SPECIAL.fullmatch(pieces[i - 1])):
            continue
        start = i - 1
        while start > 0 and shown[start].startswith("\u00b7"):
            start -= 1
        end = i + 1
        while end < len(shown) and shown[end].startswith("\u00b7"):
            end += 1
        word = "".join(p.replace(WORD_MARKER, "") for p in pieces[start:end])
        return f"{' '.join(shown[start:end])} = {word}"
    return None


def escape_text(text: str) -> str:
    """Escape free text (titles, axis labels) without the SentencePiece treatment."""
    return "".join("\ufffd" if _is_control(ch) else ch for ch in str(text)).translate(_ENTITIES)


def md_escape(text: str) -> str:
    """Plain text for Markdown: no emphasis, links, HTML or maths from the text itself."""
    text = "".join("\ufffd" if ord(c) < 32 or c == "\x7f" else c for c in str(text))
    text = _MD_SPECIAL.sub(r"\\\1", text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("$", "&#36;")

"""Examples that teach: sentences, each with the one view that shows something, and one line on what to see.

Every example names a view (kind, layer, head) and one ROW of it: the decoder position fed ``row`` (for
the decoder's kinds it writes ``writes`` next, the §3.1 shift) or, in the encoder, the source token ``row``.
Its claim: in that row, the head's largest weight falls on the column ``column``. The caption's pointer
("… layer 5, head 4: the row fed “Zwei” writes “Hunde” and looks most at “dogs”.") is written from those
fields, never by hand, and ``check`` tests the claim on a model's own result: tests/test_examples_shipped.py
runs it against the shipped model, so a retrained model that no longer does this fails a test by name.

Tokens are named as the page shows them: a SentencePiece piece without its "▁" word marker ("Foto",
".", "</s>"). A claim's row and column must each name exactly one token (no guessing which "a" is meant).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from model.terms import EOS_PIECE as EOS
from model.terms import WORD_MARKER
from viz.views.attention.context import next_tokens
from viz.views.inputs import shown
from viz.vocab import KIND_LABELS

if TYPE_CHECKING:
    from model.network.inference import AttentionResult


@dataclass(frozen=True)
class Example:
    topic: str  # a few words for the menu
    sentence: str
    lesson: str  # what it teaches about German or attention; quotes no token (the pointer does)
    kind: str
    layer: int  # 1-based
    head: int  # 1-based (0 = mean would also do)
    row: str  # the query token whose row the caption talks about
    column: str  # the key token that row looks at most
    writes: str = ""  # decoder kinds: the token that row predicts (the next target token, or </s>)
    reference: str = ""  # a correct German translation, written here; the model's own (shown) must equal it

    @property
    def label(self) -> str:
        """The menu entry: topic and sentence."""
        return f"{self.topic}: {self.sentence}"

    @property
    def pointer(self) -> str:
        """Where to look and what is there, written from the checked fields."""
        which = "mean of the heads" if self.head == 0 else f"head {self.head}"
        fed = "the row of" if self.kind == "encoder_self" else "the row fed"
        writes = f" writes “{self.writes}” and" if self.writes else ""
        return (f"{KIND_LABELS[self.kind]}, layer {self.layer}, {which}: {fed} “{self.row}”{writes} "
                f"looks most at “{self.column}”.")

    @property
    def caption(self) -> str:
        return f"{self.lesson} {self.pointer}"


EXAMPLES: tuple[Example, ...] = (
    Example("Word alignment", "Two dogs are running through the snow.",
            "A German word is often written while the decoder looks at the English word it translates.",
            "cross", 5, 4, row="Zwei", writes="Hunde", column="dogs",
            reference="Zwei Hunde rennen durch den Schnee."),
    Example("Verb last (1): which verb", "A man is smiling while a woman takes a picture.",
            "In a clause that starts with während (while), German puts the verb at the very end.",
            "cross", 5, 7, row="Foto", writes="macht", column="takes",
            reference="Ein Mann lächelt, während eine Frau ein Foto macht."),
    Example("Verb last (2): why now", "A man is smiling while a woman takes a picture.",
            "What tells the decoder that the verb is due? It looks back at the word that opened the clause.",
            "decoder_self", 4, 7, row="Foto", writes="macht", column="während",
            reference="Ein Mann lächelt, während eine Frau ein Foto macht."),
    Example("Separable verb", "A woman is putting on a coat.",
            "To put on is anziehen: German splits the verb and puts its particle last.",
            "cross", 6, 1, row="Mantel", writes="an", column="on", reference="Eine Frau zieht einen Mantel an."),
    Example("Article and noun gender", "A man is picking up a red ball.",
            "The article must agree with the noun's gender, so before writing it the decoder looks ahead, "
            "past the adjective, at the noun.",
            "cross", 6, 6, row="hebt", writes="einen", column="ball", reference="Ein Mann hebt einen roten Ball auf."),
    Example("Subject and verb agree", "A little girl in a pink dress is climbing a wooden fence.",
            "The verb agrees with its subject, even with a whole phrase in between.",
            "decoder_self", 5, 1, row="Kleid", writes="klettert", column="Mädchen",
            reference="Ein kleines Mädchen in einem rosa Kleid klettert einen Holzzaun hoch."),
    Example("A noun and its adjective", "A little girl in a pink dress is climbing a wooden fence.",
            "The encoder mixes context into every word: here a noun attends to the adjective that describes it.",
            "encoder_self", 1, 5, row="girl", column="little",
            reference="Ein kleines Mädchen in einem rosa Kleid klettert einen Holzzaun hoch."),
    Example("The end of the sentence", "A woman in a red coat walks down the street.",
            f"The translation stops when the decoder writes the end marker {EOS}.",
            "cross", 5, 1, row=".", writes=EOS, column=EOS,
            reference="Eine Frau in einem roten Mantel geht die Straße entlang."),
)
PROMPT = -1  # the menu's first entry, a prompt that opens nothing
CHOICES = [("Examples that teach: choose one to open its view …", PROMPT)] + [
    (example.label, i) for i, example in enumerate(EXAMPLES)]


def example_at(index) -> Example | None:
    """The example at a menu index (an int, or its string), or None for anything else."""
    try:
        i = int(index)
    except (TypeError, ValueError, OverflowError):
        return None
    return EXAMPLES[i] if 0 <= i < len(EXAMPLES) and str(i) == str(index).strip() else None


def check_example(index) -> Example | None:
    """The example a menu value names (``example_at``), None for the menu's prompt (``PROMPT``), else a ValueError
    that names the menu's values."""
    if isinstance(index, bool) or index is None:
        picked, prompt = None, False
    else:
        picked, prompt = example_at(index), str(index).strip() == str(PROMPT)
    if picked is None and not prompt:
        raise ValueError(f"The example must be one of the menu's: {PROMPT} (the prompt) or 0 … {len(EXAMPLES) - 1}; "
                         f"got {shown(index)}.")
    return picked


def find(text: str, kind: str, layer: int, head: int) -> Example | None:
    """The example that is exactly this view, if any (a shared link to it gets its caption back)."""
    for example in EXAMPLES:
        if (example.sentence, example.kind, example.layer, example.head) == (text.strip(), kind, layer, head):
            return example
    return None


def shown_token(piece: str) -> str:
    """A piece as captions name it: without the "▁" word marker."""
    return piece.replace(WORD_MARKER, "")


def _position(tokens: list[str], word: str, side: str) -> int:
    hits = [i for i, piece in enumerate(tokens) if shown_token(piece) == word]
    if len(hits) != 1:
        found = "no token" if not hits else f"{len(hits)} tokens"
        raise ValueError(f"the {side} has {found} “{word}” (tokens: {' '.join(map(shown_token, tokens))})")
    return hits[0]


def next_token(result: AttentionResult, row: int) -> str:
    """What decoder row ``row`` predicts, as captions name it (``context.next_tokens``: the next row's token, </s>
    after the last row of a finished translation, "…" after a cut-off one)."""
    return shown_token(next_tokens(result)[row])


def check(example: Example, result: AttentionResult) -> str:
    """Test the example's claim on ``result`` (its sentence's own run). Returns a one-line summary of what
    was found; raises ValueError saying what the model does instead when the claim is false."""
    if result.source_text.strip() != example.sentence:
        raise ValueError(f"result is for {result.source_text!r}, not {example.sentence!r}")
    q_tokens, k_tokens = result.tokens(example.kind)
    where = f"{example.kind} layer {example.layer} head {example.head}"
    row = _position(q_tokens, example.row, "query side")
    if example.writes and next_token(result, row) != example.writes:
        raise ValueError(f"{where}: the row fed “{example.row}” now writes “{next_token(result, row)}”, "
                         f"not “{example.writes}” (translation: {result.translation})")
    maps = result.maps(example.kind)[example.layer - 1]  # (H, Q, K)
    weights = maps.mean(axis=0)[row] if example.head == 0 else maps[example.head - 1, row]  # (K,)
    column = _position(k_tokens, example.column, "key side")
    top = int(weights.argmax())
    if top != column:
        raise ValueError(f"{where}: row “{example.row}” looks most at “{shown_token(k_tokens[top])}” "
                         f"({weights[top]:.2f}), not at “{example.column}” ({weights[column]:.2f})")
    return f"{where}: “{example.row}” → “{example.column}” {weights[column]:.2f}"


def markdown(lines: list[str]) -> str:
    """Lines (notices, captions) as Markdown that shows them as written: "</s>" stays text, not a tag."""
    escape = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "*": r"\*", "_": r"\_", "`": r"\`"})
    return "\n\n".join(line.translate(escape) for line in lines)

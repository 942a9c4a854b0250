"""The model card's "What the model is bad at": the "far from the captions" rule (``model.probes.domain``) in words, and
sentences the model gets wrong, each with the model's own greedy translation (what the Attention tab shows), a
correct German one, and the signs the rule sees. Written between ``CARD_START`` and ``CARD_END`` by
``python -m model.domain --card``; tests/test_domain.py holds the card to the model's outputs.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import NamedTuple

from model.network.checkpoint import atomic_write_text
from model.network.inference import Translator
from model.probes.domain import Calibration, check

CARD_START, CARD_END = "<!-- limits: start -->", "<!-- limits: end -->"
CARD = "MODEL_CARD.md"
BEFORE = "## Citation"  # the section goes above this heading when the card has none yet


class Example(NamedTuple):
    english: str
    german: str  # a correct translation (not the model's)
    what: str  # what goes wrong, in a few words


EXAMPLES = (
    Example("The cat sat on the mat.", "Die Katze saß auf der Matte.",
            "a past tense: captions describe what is happening now"),
    Example("I would like a cup of coffee, please.", "Ich hätte gern eine Tasse Kaffee, bitte.",
            "a request in the first person: captions describe others"),
    Example("Where is the nearest train station?", "Wo ist der nächste Bahnhof?",
            "a question: captions are statements"),
    Example("Please install the latest security update before restarting your computer.",
            "Bitte installieren Sie das neueste Sicherheitsupdate, bevor Sie Ihren Computer neu starten.",
            "words no photo caption needs"),
    Example("Yesterday the parliament voted on a new law about taxes for small businesses and the opposition "
            "protested loudly because they believed that the reform would hurt families who already struggle to pay "
            "their rent every month in the big cities.",
            "Gestern hat das Parlament über ein neues Gesetz zu Steuern für kleine Unternehmen abgestimmt, und die "
            "Opposition hat laut protestiert, weil sie glaubte, dass die Reform Familien schaden würde, die schon "
            "jetzt Mühe haben, in den großen Städten jeden Monat ihre Miete zu bezahlen.",
            "a long sentence about politics"),
)
SIGN_WORDS = {"long": "long", "rare": "rare pieces", "unsure": "low confidence"}


class Row(NamedTuple):
    example: Example
    translation: str  # the model's own, greedy
    signs: tuple[str, ...]


def rows(translator: Translator, cal: Calibration) -> list[Row]:
    """Each example as the Attention tab shows it: its greedy translation, and the signs the rule sees."""
    out = []
    for ex in EXAMPLES:
        result = translator.attention(ex.english)
        out.append(Row(ex, result.translation, check(translator, cal, result).signs))
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def section(translator: Translator, cal: Calibration) -> str:
    """The card's section, between its markers."""
    lines = [
        CARD_START, "## What the model is bad at", "",
        f"It learnt from {cal.train_sentences:,} image captions — short, literal, present-tense descriptions of what "
        "a photo shows — and translates little else well: long sentences, questions, the first and second person, "
        "past tenses and everyday words no caption needs come out wrong, often fluent-looking. The app says so "
        "beside a translation when a sentence is far from the captions (`model/probes/domain.py`): more than "
        f"{cal.long_pieces} English pieces (99% of the training captions have fewer or as many), or at least "
        f"{cal.rare_min} pieces seen fewer than {cal.rare_seen} times in the training captions making up more than "
        f"{cal.rare_share:.0%} of the sentence, or a greedy translation whose mean log-probability per token is below "
        f"{cal.low_confidence:.2f} (a mean probability of {math.exp(cal.low_confidence):.2f} a token; 1% of the "
        f"validation captions are lower). It flags {cal.val_flagged:.1%} of the {cal.val_sentences:,} validation "
        "captions. It is a warning, "
        "not a guarantee: a short everyday sentence may pass it and still be translated wrongly (below).", "",
        "Examples, translated by the shipped model as the Attention tab shows them (greedy):", "",
        "| English | the model's German | a correct German | what goes wrong | the app's notice |",
        "|---|---|---|---|---|",
    ]
    for row in rows(translator, cal):
        notice = ", ".join(SIGN_WORDS[s] for s in row.signs) if row.signs else "none"
        lines.append(f"| {_cell(row.example.english)} | {_cell(row.translation)} | {_cell(row.example.german)} | "
                     f"{row.example.what} | {notice} |")
    lines += ["", "Regenerate with `python -m model.domain --card` (it calibrates the rule again first).", CARD_END]
    return "\n".join(lines)


def update_card(translator: Translator, cal: Calibration, folder: str | Path) -> Path:
    """Write ``section`` into the model folder's card: in place of the old one, else above its citations."""
    path = Path(folder) / CARD
    text, new = path.read_text(encoding="utf-8"), section(translator, cal)
    if CARD_START in text:
        text = text[: text.index(CARD_START)] + new + text[text.index(CARD_END) + len(CARD_END):]
    elif BEFORE in text:
        text = text.replace(BEFORE, new + "\n\n" + BEFORE, 1)
    else:
        text = text.rstrip("\n") + "\n\n" + new + "\n"
    atomic_write_text(path, text)
    return path

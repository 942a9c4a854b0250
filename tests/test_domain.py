"""Out-of-domain honesty: the "far from the captions" rule (model.probes.domain), its calibration in the shipped model
folder (model.training.domain, against the training data), the notice beside the translation
(viz.views.attention.domain) and the model card's "What the model is bad at" (model.training.limits), held to the
model's own outputs.
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest

from model.network.inference import ASSETS, Translator
from model.probes.ablation import load_sample
from model.probes.domain import Calibration, DomainCheck, check, confidences, flagged_share, rare_ids, signs
from model.probes.forcing import token_probs
from model.training.data import MULTI30K, read_lines, split_path
from model.training.domain import english_counts
from model.training.export import kept_sections
from model.training.limits import CARD_END, CARD_START, EXAMPLES, SIGN_WORDS
from viz.views.attention.domain import domain_notice, notice_text

CARD = ASSETS / "MODEL_CARD.md"
LONG = EXAMPLES[-1].english  # 40 words about politics


def calibration(**changes) -> Calibration:
    base = Calibration(long_pieces=10, rare_seen=5, rare_min=2, rare_share=0.2, low_confidence=-1.5, val_flagged=0.0,
                       train_sentences=1, val_sentences=1, english_counts=[])
    return dataclasses.replace(base, **changes)


# ------------------------------------------------------------------------------------------------ the rule
def test_each_sign_has_its_threshold():
    cal = calibration()
    assert signs(cal, 10, 0, -1.0) == () and signs(cal, 11, 0, -1.0) == ("long",)
    assert signs(cal, 5, 2, -1.0) == ("rare",)  # 2 of 5 rare: 40% > 20%
    assert signs(cal, 10, 2, -1.0) == ()  # 20%: not more than the share
    assert signs(cal, 2, 1, -1.0) == ()  # one rare piece is never "many"
    assert signs(cal, 20, 9, -2.0) == ("long", "rare", "unsure")
    assert flagged_share(cal, [5, 11, 5, 5], [0, 0, 0, 3], [-1, -1, -3, -1]) == 0.75


def test_rare_pieces_are_the_training_captions_rare_ones_and_bytes():
    cal = calibration(english_counts=[100, 4, 5, 0])
    assert rare_ids(cal, [0, 1, 2, 3, 0], [False, False, False, False, True]) == [1, 3, 4]


def test_confidence_is_the_mean_log_probability_of_the_teacher_forced_pass(translator):
    """The same numbers as the token-probability view (one teacher-forced pass), batched with padding or not."""
    texts = [("a big dog runs in the park.", "ein großer hund rennt in dem park."), ("a man sits.", "ein mann sitzt.")]
    expected, sources, outputs = [], [], []
    for text, target in texts:
        result = translator.attention(text, target)
        expected.append(float(np.mean(np.log(token_probs(translator, result).probs.astype(np.float64)))))
        sources.append(translator.encode_input(text)[1])
        outputs.append(result.target_ids)
    np.testing.assert_allclose(confidences(translator, sources, outputs), expected, atol=1e-4)
    np.testing.assert_allclose(confidences(translator, sources[1:], outputs[1:]), expected[1:], atol=1e-4)


def test_check_reads_the_models_own_translation(translator):
    cal = calibration(english_counts=[0] * translator.cfg.vocab_size, rare_share=0.0, long_pieces=3,
                      low_confidence=10.0)
    result = translator.attention("a big dog runs in the park.")
    found = check(translator, cal, result)
    ids = translator.encode_input(result.source_text)[1][:-1]
    assert found.pieces == len(ids) and found.rare_pieces == tuple(result.source_tokens[:-1])  # none seen: all rare
    assert found.signs == ("long", "rare", "unsure") and found.far
    assert found.confidence == pytest.approx(confidences(translator, [ids + [translator.cfg.eos_id]],
                                                         [result.target_ids])[0])
    with pytest.raises(ValueError, match="own translation"):
        check(translator, cal, translator.attention("a dog.", "ein hund."))


# ------------------------------------------------------------------------------------------ the shipped model
@pytest.fixture(scope="module")
def shipped() -> Translator:
    return Translator(ASSETS, device="cpu")


@pytest.fixture(scope="module")
def cal() -> Calibration:
    found = Calibration.load(ASSETS)
    assert found is not None, "assets/model/DOMAIN.json: run python -m model.domain"
    return found


@pytest.mark.skipif(not any(MULTI30K.glob("train.en*")),
                    reason=f"the training split is not on this machine ({MULTI30K}): the app never needs it")
def test_the_calibration_is_the_training_datas(shipped, cal):
    """Counts and the length threshold recomputed from the training split, with the shipped tokenizer."""
    train = read_lines(split_path(MULTI30K, "train", "en"))
    assert cal.train_sentences == len(train) == 29_000 and cal.val_sentences == 1014
    assert cal.english_counts == english_counts(shipped, train).tolist()
    lengths = [len(shipped.token_ids(line)) - 1 for line in train]
    assert cal.long_pieces == int(np.percentile(lengths, 99))
    assert (cal.rare_seen, cal.rare_min) == (5, 2) and 0 < cal.rare_share < 1 and cal.low_confidence < 0
    assert cal.val_flagged <= 0.05  # a caption-like sentence rarely gets the notice


def test_captions_pass_and_sentences_far_from_them_get_the_notice(shipped, cal):
    val = load_sample().sources[:40]  # the shipped sample: the first captions of the validation split
    flagged = [s for s in val if check(shipped, cal, shipped.attention(s)).far]
    assert len(flagged) <= 2, flagged
    long = check(shipped, cal, shipped.attention(LONG))
    assert "long" in long.signs and long.pieces > cal.long_pieces
    unsure = check(shipped, cal, shipped.attention(EXAMPLES[3].english))  # a computer's security update
    assert unsure.signs == ("unsure",) and unsure.mean_probability < math.exp(cal.low_confidence)
    german = check(shipped, cal, shipped.attention("Der Hund läuft schnell über die Straße."))  # German in
    assert "rare" in german.signs and "▁Hund" in german.rare_pieces  # pieces the English captions never had
    emoji = check(shipped, cal, shipped.attention("A dog 🐕 runs."))
    assert emoji.signs == ("rare",) and emoji.rare_pieces == ("🐕₁", "🐕₂", "🐕₃", "🐕₄")  # bytes are rare


# ------------------------------------------------------------------------------------------------ the notice
def test_the_notice_names_each_sign_with_its_number(cal):
    far = DomainCheck(pieces=48, rare_pieces=("▁quarterly", "▁earn", "ings", "▁inflation", "ary"),
                      confidence=math.log(0.3), signs=("long", "rare", "unsure"))
    text = notice_text(far, cal)
    assert text.startswith("⚠️ **Far from the 29,000 image captions the model learnt from:** ")
    assert f"long (48 pieces; 99% of the captions ≤ {cal.long_pieces})" in text
    # as the app shows pieces: a word's start plain, a piece inside a word after "·"
    assert "5 pieces the captions hardly had (“quarterly”, “earn”, “·ings”, “inflation” and 1 more)" in text
    assert f"mean probability 0.30 a token; 99% of the captions ≥ {math.exp(cal.low_confidence):.2f})" in text
    assert text.endswith("Expect mistakes (Model card: “What the model is bad at”).")
    near = dataclasses.replace(far, signs=())
    calls = []

    def checked(text):
        calls.append(text)
        return far if "far" in text else near

    result = type("R", (), {"source_text": "far away"})()
    shown = domain_notice(checked, cal, result)
    assert shown.props["visible"] is True and shown.props["value"] == notice_text(far, cal)
    result.source_text = "a dog"
    assert domain_notice(checked, cal, result).props == {"value": "", "visible": False}
    assert domain_notice(checked, None, result).props["visible"] is False  # no calibration: no notice
    assert domain_notice(checked, cal, None).props["visible"] is False and calls == ["far away", "a dog"]


# --------------------------------------------------------------------------------------------- the model card
def card_rows() -> list[list[str]]:
    text = CARD.read_text(encoding="utf-8")
    section = text[text.index(CARD_START): text.index(CARD_END)]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| English")]
    return [[c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows]


def test_the_card_says_what_the_model_is_bad_at_with_its_own_wrong_translations(shipped, cal):
    rows = card_rows()
    assert [r[0] for r in rows] == [ex.english for ex in EXAMPLES]
    for (english, german, correct, _, notice), ex in zip(rows, EXAMPLES):
        result = shipped.attention(english)
        assert german == result.translation, english  # the model's own greedy output, as the app shows it
        assert german != correct == ex.german  # and it is wrong
        found = check(shipped, cal, result)
        assert notice == (", ".join(SIGN_WORDS[s] for s in found.signs) or "none"), english
    assert any(r[4] == "none" for r in rows) and any("long" in r[4] for r in rows)  # honest: not every error
    text = CARD.read_text(encoding="utf-8")
    assert f"It flags {cal.val_flagged:.1%} of the 1,014 validation captions" in text
    assert f"more than {cal.long_pieces} English pieces" in text
    assert text.index(CARD_START) < text.index("## Citation")


def test_a_rewritten_card_keeps_the_sections_other_commands_wrote():
    old = "# Card\n\nold\n\n<!-- limits: start -->\nL\n<!-- limits: end -->\n\n## Citation\n\nC\n\n" \
          "<!-- lab: start -->\nB\n<!-- lab: end -->\n"
    new = kept_sections(old, "# Card\n\nnew\n\n## Citation\n\nC\n")
    assert new == "# Card\n\nnew\n\n<!-- limits: start -->\nL\n<!-- limits: end -->\n\n## Citation\n\nC\n\n" \
                  "<!-- lab: start -->\nB\n<!-- lab: end -->\n"
    assert kept_sections("", "# Card\n") == "# Card\n"

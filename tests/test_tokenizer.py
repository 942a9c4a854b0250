"""Byte fallback: no character becomes <unk>, and byte pieces are shown as the characters they spell."""

from __future__ import annotations

from model.network.tokenizer import BYTE_FALLBACK_MIN_VOCAB, readable_bytes, train_tokenizer

TEXT = ["a dog runs in the park .", "ein hund rennt im park .", "the small child plays near the water ."] * 40


def test_byte_fallback_tokenizer_never_gives_unk_and_shows_bytes_readably(tmp_path):
    tok = train_tokenizer(TEXT, tmp_path / "tokenizer.model", BYTE_FALLBACK_MIN_VOCAB)
    text = "a <b> dog 🙂 Œuvre"
    ids = tok.encode(text)
    assert tok.sp.unk_id() not in ids
    assert tok.decode(ids) == text
    pieces = tok.pieces(ids)
    assert len(pieces) == len(ids)  # one label per model position
    assert "<" in pieces and ">" in pieces  # "<0x3C>" is shown as "<"
    assert [p for p in pieces if p.startswith("🙂")] == ["🙂₁", "🙂₂", "🙂₃", "🙂₄"]
    assert not any(p.startswith("<0x") for p in pieces)
    assert tok.byte_fallback


def test_small_vocabularies_go_without_byte_fallback(tmp_path):
    tok = train_tokenizer(TEXT, tmp_path / "tokenizer.model", 64)
    assert not tok.byte_fallback
    assert tok.sp.unk_id() in tok.encode("🙂")


def test_invalid_utf8_bytes_keep_their_names():
    pieces = ["<0xF0>", "<0x9F>", "x", "<0xC3>", "<0xA9>", "<0xFF>", "<0x41>"]
    assert readable_bytes(pieces, [True, True, False, True, True, True, True]) == [
        "<0xF0>", "<0x9F>", "x", "é₁", "é₂", "<0xFF>", "A"]
    assert readable_bytes(["▁a", "<0x41>"], [False, False]) == ["▁a", "<0x41>"]  # only byte ids are decoded


def test_the_shipped_tokenizer_has_byte_fallback_and_its_card_says_so():
    from model.network.inference import ASSETS
    from model.network.tokenizer import Tokenizer

    tok = Tokenizer(ASSETS / "tokenizer.model")
    assert tok.byte_fallback and tok.sp.unk_id() not in tok.encode("a <b> 🙂 Œuvre ½")
    assert "byte fallback: no `<unk>`" in (ASSETS / "MODEL_CARD.md").read_text(encoding="utf-8")

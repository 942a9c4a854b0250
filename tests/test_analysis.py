"""Per-head statistics, role labels and rollout: hand-made maps give the numbers worked out by hand; on a
tiny model they match a recomputation from the maps the loader returns; the presenters draw those numbers."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from helpers.plotly import apply_changes, array

from model.network.checkpoint import WEIGHTS_FILE
from model.network.inference import Encoded
from model.probes.ablation import Sample, file_sha256
from model.probes.analysis import (
    EOS_SINK,
    NO_DATA,
    ROLE_THRESHOLDS,
    ROLES,
    START_SINK,
    STAT_LABELS,
    STATS,
    HeadStats,
    RoleThresholds,
    head_stats_payload,
    is_punctuation,
    role_name,
    role_of,
    role_rule_markdown,
    rollout,
    sample_head_stats,
    sample_stats,
    sentence_stats,
    source_relevance,
    stats_file_record,
)
from model.terms import KINDS
from viz.stats_grid import stats_grid_spec
from viz.views.head_analysis import analysis_markdown, cell_from_click, rollout_plots, stats_grid_plot, stats_view

SRC = ["▁a", "▁b", ".", "</s>"]  # S = 4: two words, a full stop, EOS


def one_map_stats(kind: str, w: np.ndarray, q_tokens, k_tokens) -> HeadStats:
    """Stats of a single head's (Q, K) map, as a 1 layer × 1 head stack."""
    stats = HeadStats(1, 1)
    stats.add_maps(kind, w[None, None], q_tokens, k_tokens)
    return stats


def means(stats: HeadStats, kind: str) -> dict[str, float]:
    return {s: float(stats.mean(kind, s)[0, 0]) for s in STATS}


def test_uniform_map_is_broad():
    m = means(one_map_stats("encoder_self", np.full((4, 4), 0.25), SRC, SRC), "encoder_self")
    assert m["entropy"] == pytest.approx(math.log(4))
    assert m["spread"] == pytest.approx(1.0)
    for stat in ("confidence", "eos", "punctuation", "previous", "self", "next", "sharpness"):
        assert m[stat] == pytest.approx(0.25), stat
    assert m["offset"] == pytest.approx(0.0)  # row i: mean of (j - i) over j = 1.5 - i; rows 0..3 average 0
    assert role_of("encoder_self", m) == "broad"


def test_one_hot_on_previous_is_previous_token():
    w = np.zeros((4, 4))
    w[0, 0] = 1.0  # row 0 has no previous token: it looks at itself
    w[np.arange(1, 4), np.arange(0, 3)] = 1.0
    m = means(one_map_stats("encoder_self", w, SRC, SRC), "encoder_self")
    assert m["previous"] == pytest.approx(1.0)  # rows 1..3, where a previous token exists
    assert m["self"] == pytest.approx(0.25)  # row 0 of 4
    assert m["next"] == pytest.approx(0.0)
    assert m["offset"] == pytest.approx(-0.75)  # (0 - 1 - 1 - 1) / 4
    assert m["entropy"] == pytest.approx(0.0) and m["confidence"] == pytest.approx(1.0)
    assert m["eos"] == pytest.approx(0.0)
    assert m["punctuation"] == pytest.approx(0.25)  # row 3 (EOS) looks at "."
    assert role_of("encoder_self", m) == "previous-token"


def test_one_hot_on_eos_is_eos_sink():
    w = np.zeros((4, 4))
    w[:, 3] = 1.0
    m = means(one_map_stats("encoder_self", w, SRC, SRC), "encoder_self")
    assert m["eos"] == pytest.approx(1.0)
    assert m["sharpness"] == pytest.approx(0.0)  # nothing on a real token
    assert m["offset"] == pytest.approx(1.5)  # mean of 3 - i
    assert m["next"] == pytest.approx(1 / 3)  # row 2's next token is EOS; rows 0..2 count
    assert role_of("encoder_self", m) == "EOS-sink"


def test_decoder_rows_see_only_the_past_and_row_zero_is_left_out():
    tgt = ["<s>", "▁x", "▁y", "▁z"]
    w = np.tril(np.ones((4, 4)))
    w /= w.sum(-1, keepdims=True)  # row i uniform over its i + 1 visible keys
    m = means(one_map_stats("decoder_self", w, tgt, tgt), "decoder_self")
    assert m["spread"] == pytest.approx(1.0)  # uniform over what each row can see
    assert m["entropy"] == pytest.approx(np.mean([math.log(2), math.log(3), math.log(4)]))
    assert m["eos"] == pytest.approx(np.mean([1 / 2, 1 / 3, 1 / 4]))  # <s> is the decoder's special key
    assert math.isnan(m["next"])  # the decoder cannot look ahead
    only_bos = means(one_map_stats("decoder_self", np.ones((1, 1)), ["<s>"], ["<s>"]), "decoder_self")
    assert math.isnan(only_bos["eos"]) and role_of("decoder_self", only_bos) == NO_DATA


def test_a_decoder_head_on_its_start_token_is_a_start_sink_not_an_eos_sink():
    """Decoder self-attention's keys hold no EOS: its special key is <s>, and a head parked there is named for it
    (the lab's records, written before the name, say EOS-sink: ``role_name`` renames them)."""
    tgt = ["<s>", "▁x", "▁y", "▁z"]
    w = np.zeros((4, 4))
    w[:, 0] = 1.0  # every row on <s>
    m = means(one_map_stats("decoder_self", w, tgt, tgt), "decoder_self")
    assert m["eos"] == pytest.approx(1.0)
    assert role_of("decoder_self", m) == START_SINK == "start-sink"
    assert role_of("encoder_self", m) == role_of("cross", m) == EOS_SINK  # the same weight on </s>
    assert START_SINK in ROLES and EOS_SINK in ROLES
    assert role_name("decoder_self", EOS_SINK) == START_SINK
    assert role_name("cross", EOS_SINK) == EOS_SINK and role_name("decoder_self", "mixed") == "mixed"
    rule = role_rule_markdown()
    assert "**start-sink**" in rule and "`<s>`" in rule


def test_cross_alignment_and_what_does_not_apply():
    w = np.zeros((3, 4))
    w[[0, 1, 2], [0, 1, 3]] = 1.0  # <s> -> a, x -> b, y -> EOS
    m = means(one_map_stats("cross", w, ["<s>", "▁x", "▁y"], SRC), "cross")
    assert m["sharpness"] == pytest.approx(2 / 3) and m["eos"] == pytest.approx(1 / 3)
    assert all(math.isnan(m[s]) for s in ("previous", "self", "next", "offset"))
    assert role_of("cross", m) == "alignment"


def test_rows_are_pooled_over_sentences():
    rng = np.random.default_rng(0)
    a, b = rng.dirichlet(np.ones(4), size=(2, 3, 4)), rng.dirichlet(np.ones(3), size=(2, 3, 3))  # (L, H, Q, K)
    stats = HeadStats(2, 3)
    stats.add_maps("encoder_self", a, SRC, SRC)
    stats.add_maps("encoder_self", b, ["▁a", "▁b", "</s>"], ["▁a", "▁b", "</s>"])
    pooled = np.concatenate([a.max(-1), b.max(-1)], axis=-1).mean(-1)  # 7 rows per head
    np.testing.assert_allclose(stats.mean("encoder_self", "confidence"), pooled)
    with pytest.raises(ValueError, match="expected"):
        stats.add_maps("encoder_self", a, SRC[:3], SRC)


def test_thresholds_live_in_one_place():
    m = {"eos": 0.3, "previous": 0.35, "spread": 0.5}
    assert role_of("encoder_self", m) == "mixed"
    assert role_of("encoder_self", m, RoleThresholds(previous=0.3)) == "previous-token"
    text = role_rule_markdown(RoleThresholds(previous=0.3))
    assert "at least 30% on the token just before" in text
    assert f"{ROLE_THRESHOLDS.eos_sink:.0%}" in role_rule_markdown()
    assert is_punctuation(".") and is_punctuation("▁(") and not is_punctuation("▁a") and not is_punctuation("</s>")


def test_json_is_rounded_float64_with_null_where_nothing_applies():
    w = np.full((1, 1, 3, 3), 1 / 3, dtype=np.float32)
    stats = HeadStats(1, 1)
    stats.add_maps("encoder_self", w, ["▁a", "▁b", "</s>"], ["▁a", "▁b", "</s>"])
    out = json.loads(json.dumps(stats.to_json_dict()))
    assert out["stats"]["encoder_self"]["confidence"] == [[0.3333]]
    assert out["stats"]["cross"]["offset"] == [[None]]
    assert out["roles"]["encoder_self"] == [["broad"]] and out["roles"]["cross"] == [[NO_DATA]]


# ------------------------------------------------------------------------------------------------------ rollout
def test_rollout_of_identity_maps_is_identity():
    eye = np.broadcast_to(np.eye(5), (3, 4, 5, 5))
    np.testing.assert_allclose(rollout(eye), np.broadcast_to(np.eye(5), (3, 5, 5)))


def test_rollout_is_the_product_of_residual_mixed_layers():
    rng = np.random.default_rng(1)
    maps = rng.dirichlet(np.ones(5), size=(3, 2, 5))  # (L, H, S, S)
    a_hat = [0.5 * maps[i].mean(0) + 0.5 * np.eye(5) for i in range(3)]  # rows already sum to 1
    r = rollout(maps)
    np.testing.assert_allclose(r[0], a_hat[0])
    np.testing.assert_allclose(r[2], a_hat[2] @ a_hat[1] @ a_hat[0])
    np.testing.assert_allclose(r.sum(-1), 1.0)
    cross = rng.dirichlet(np.ones(5), size=(3, 2, 4))  # (L, H, T, S)
    np.testing.assert_allclose(source_relevance(cross, r), cross.mean(1) @ r[-1])
    np.testing.assert_allclose(source_relevance(cross, rollout(np.broadcast_to(np.eye(5), (3, 2, 5, 5)))),
                               cross.mean(1))
    with pytest.raises(ValueError, match="shape"):
        rollout(maps[..., :4])


# ------------------------------------------------------------------------------------------------- tiny model
SENTENCES = ["a dog runs in the park.", "the red house.", "a small child plays near the water."]


def test_sentence_stats_match_the_maps(translator):
    r = translator.attention(SENTENCES[0], target="ein hund rennt in dem park.")
    stats = sentence_stats(r)
    np.testing.assert_allclose(stats.mean("encoder_self", "confidence"), r.encoder_self.max(-1).mean(-1), rtol=1e-6)
    np.testing.assert_allclose(stats.mean("cross", "eos"), r.cross[..., -1].mean(-1), rtol=1e-5, atol=1e-7)
    dec = r.decoder_self[:, :, 1:]  # row 0 (<s> sees only itself) is left out
    np.testing.assert_allclose(stats.mean("decoder_self", "self"), np.diagonal(dec, 1, -2, -1).mean(-1), rtol=1e-6)


def test_batched_maps_are_each_sentences_own(translator):
    ids = [translator.token_ids(s) for s in SENTENCES]
    for text, got in zip(SENTENCES, translator.attention_batch([Encoded(i) for i in ids])):
        alone = translator.attention(text)
        assert got.translation == alone.translation and got.target_tokens == alone.target_tokens
        for kind in KINDS:
            np.testing.assert_allclose(got.maps(kind), alone.maps(kind), atol=1e-5)


def test_sample_stats_pool_the_sentences_and_the_file_is_used_only_for_its_weights(translator, tmp_path):
    sample = Sample(tuple(SENTENCES), ("x",) * 3, "tiny")
    pooled = sample_stats(translator, sample.sources, batch_size=2)
    by_hand = HeadStats(translator.cfg.n_layers, translator.cfg.n_heads)
    for text in SENTENCES:
        by_hand.add_result(translator.attention(text))
    assert pooled.sentences == 3
    for kind in KINDS:
        np.testing.assert_allclose(pooled.mean(kind, "entropy"), by_hand.mean(kind, "entropy"), atol=1e-5)

    path = tmp_path / "stats.json"
    weights = file_sha256(translator.folder / WEIGHTS_FILE)
    record = stats_file_record(pooled, weights, sample)
    record["stats"]["cross"]["confidence"] = [[0.5] * translator.cfg.n_heads] * translator.cfg.n_layers  # a marker
    path.write_text(json.dumps(record))
    from_file = sample_head_stats(translator, sample, path=path)
    assert (from_file.mean("cross", "confidence") == 0.5).all()
    other = Sample(tuple(SENTENCES[:2]), ("x",) * 2, "tiny[:2]")  # not the file's sample: computed live
    assert not (sample_head_stats(translator, other, path=path).mean("cross", "confidence") == 0.5).all()


def test_head_stats_payload(translator):
    sample = Sample(tuple(SENTENCES[1:]), ("x",) * 2, "tiny[1:]")
    result = translator.attention(SENTENCES[0])
    out = json.loads(json.dumps(head_stats_payload(result, sample_head_stats(translator, sample))))
    expected = sentence_stats(translator.attention(SENTENCES[0])).to_json_dict()
    assert out["sentence"] == json.loads(json.dumps(expected))
    assert out["sample"]["sentences"] == 2 and out["source_tokens"][-1] == "</s>"
    assert out["translation"] == result.translation
    assert len(out["sentence"]["stats"]["cross"]["sharpness"]) == translator.cfg.n_layers


# --------------------------------------------------------------------------------------------------- presenters
def test_stats_grid_shows_each_heads_value_and_role(translator):
    stats = sentence_stats(translator.attention(SENTENCES[0]))
    roles = stats.roles()
    fig = stats_grid_plot(stats, "offset", title="<b>x</b>")
    assert [t["customdata"][0][0][0] for t in fig["data"]] == ["encoder_self", "decoder_self"]  # offset: no cross
    means = {kind: stats.mean(kind, "confidence") for kind in KINDS}
    enc = stats_grid_spec(means, roles, "confidence", STAT_LABELS["confidence"])["data"][0]
    np.testing.assert_allclose(enc["z"], stats.mean("encoder_self", "confidence"), rtol=1e-6)
    layer, head = 1, 2
    role = roles["encoder_self"][layer][head]
    assert list(enc["customdata"][layer, head]) == ["encoder_self", layer + 1, head + 1, role]
    assert "<b>" not in fig["layout"]["title"]["text"]
    with pytest.raises(ValueError, match="Unknown statistic"):
        stats_grid_plot(stats, "nonsense")
    assert "EOS-sink" in analysis_markdown(stats, "this sentence")


def test_the_grid_names_every_role_in_a_word_at_12_px_or_more():
    """Every role a word in its cell ("mixed", not a dot; a start-sink by its token), 12 px or more (presentation
    mode: 16 px, assets/web/app.css); the colour bar under the grids, across them, leaving the columns the width."""
    from viz.stats_grid import CELL_TEXT_PX, ROLE_SHORT

    roles = {kind: [list(ROLES[i:i + 3]) for i in range(0, 9, 3)] for kind in KINDS}
    values = {kind: np.full((3, 3), 0.5) for kind in KINDS}
    spec = stats_grid_spec(values, roles, "spread", STAT_LABELS["spread"])
    texts = {t for trace in spec["data"] for row in trace["text"] for t in row}
    assert texts == {ROLE_SHORT[r] for r in ROLES}
    assert ROLE_SHORT["mixed"] == "mixed" and ROLE_SHORT["start-sink"] == "&lt;s&gt;"
    assert all(any(c.isalpha() for c in t) for t in texts)  # a word each: no "·"
    assert all(trace["textfont"]["size"] == CELL_TEXT_PX >= 12 for trace in spec["data"])
    bar = spec["layout"]["coloraxis"]["colorbar"]
    assert bar["orientation"] == "h" and bar["y"] < 0 and spec["layout"]["margin"]["b"] >= 60
    domains = [spec["layout"][k]["domain"] for k in spec["layout"] if k.startswith("yaxis")]
    assert all(0 < lo < hi <= 1 for lo, hi in domains)


def test_stats_view_draws_the_sentence_or_the_sample(translator):
    r = translator.attention(SENTENCES[2])
    calls = []

    def sample():
        calls.append(1)
        return sentence_stats(translator.attention(SENTENCES[0]))

    text, frames = stats_view(sample, r, "sentence")
    stats = sentence_stats(r)
    assert "this sentence" in text and not calls
    grids = json.loads(frames)
    assert set(grids["stats"]) == set(STATS)
    for stat in STATS:  # each statistic's grid, as the page rebuilds it, is the one drawn for it alone
        drawn = json.loads(json.dumps(stats_grid_plot(stats, stat)))
        assert apply_changes(grids["base"], grids["stats"][stat]) == drawn
    grid = apply_changes(grids["base"], grids["stats"]["eos"])
    np.testing.assert_allclose(plotly_z(grid, 2), stats.mean("cross", "eos"), rtol=1e-6)
    text, frames = stats_view(sample, r, "sample")
    assert calls and "shipped sample" in text and frames
    assert stats_view(sample, None, "sentence") == ("Translate a sentence on the Attention tab first.", "")
    with pytest.raises(ValueError, match="Unknown scope"):
        stats_view(sample, r, "corpus")


def test_cell_click_message():
    assert cell_from_click(6, 8, "cross,3,5,17") == ("cross", 3, 5)
    for bad in ("", "cross,0,1", "cross,7,1", "attn,1,1", "cross,a,1", None):
        assert cell_from_click(6, 8, bad) is None


def test_rollout_plots_show_raw_and_rolled_out_maps(translator):
    r = translator.attention(SENTENCES[1])
    enc_raw, enc_roll, cross_raw, cross_roll = rollout_plots(r, 2)
    np.testing.assert_allclose(plotly_z(enc_raw), r.encoder_self[1].mean(0), atol=1e-6)
    np.testing.assert_allclose(plotly_z(enc_roll), rollout(r.encoder_self)[1], atol=1e-6)
    np.testing.assert_allclose(plotly_z(cross_raw), r.cross[1].mean(0), atol=1e-6)
    np.testing.assert_allclose(plotly_z(cross_roll), source_relevance(r.cross, rollout(r.encoder_self))[1], atol=1e-6)
    with pytest.raises(ValueError, match="Layer must be"):
        rollout_plots(r, 9)
    assert rollout_plots(None, 1) == (None,) * 4


def plotly_z(fig: dict, trace: int = 0) -> np.ndarray:
    """The z of a finished figure's trace (plotly's base64 typed array) as an array."""
    return array(fig["data"][trace]["z"])

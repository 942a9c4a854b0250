"""/decode_steps through the served app (the Decoding tab's endpoint), called as a script would: gradio_client against
`app.create_app` launched in-process the way `app.launch` serves it, with the shipped model.

Checked against what the endpoint promises and against the model itself: per step exactly the documented keys;
the top-1 token is the greedy output token (the translation /attention shows); the probabilities are the
model's next-token distribution (recomputed here with the incremental decoder, one token at a time);
step t's rows are row t of /attention's maps.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from gradio_client import Client

from model.network.decode import greedy_decode
from model.network.inference import Translator

pytestmark = pytest.mark.filterwarnings("ignore::Warning:gradio.queueing")

SENTENCE = "A man in a blue shirt is playing the guitar on the street."
STEP_KEYS = {"prefix_tokens", "top_tokens", "top_probs", "chosen_token", "cross", "decoder_self"}


@pytest.fixture(scope="module")
def served(serve):
    """The shipped model served in this process, and a gradio_client for it."""
    app = serve("shipped")
    return SimpleNamespace(translator=app.translator,
                           client=Client(app.url, analytics_enabled=False, verbose=False,
                                         httpx_kwargs={"timeout": 300}))


@pytest.fixture(scope="module")
def answers(served) -> SimpleNamespace:
    """/decode_steps and /attention for the same sentence."""
    steps = served.client.predict(SENTENCE, api_name="/decode_steps")
    attention = served.client.predict(SENTENCE, api_name="/attention")
    return SimpleNamespace(steps=steps, attention=attention)


def next_token_probs(translator: Translator, text: str, fed: list[int]) -> np.ndarray:
    """Each step's next-token distribution, recomputed with the cached one-token-at-a-time decoder."""
    model = translator.model
    src = torch.tensor([translator.token_ids(text)], device=translator.device)
    with torch.inference_mode():
        memory, _ = model.encode(src)
        state = model.new_state()
        rows = [torch.softmax(model.decode(torch.tensor([[i]], device=translator.device), memory, None,
                                           state=state)[0, -1].float(), -1) for i in fed]
    return torch.stack(rows).cpu().numpy()  # (T, V)


def test_every_step_has_exactly_the_documented_keys(answers):
    data, att = answers.steps, answers.attention
    assert isinstance(data, dict) and isinstance(data["steps"], list)
    assert len(data["steps"]) == len(att["target_tokens"]) > 3
    for step in data["steps"]:
        assert set(step) == STEP_KEYS
        assert len(step["top_tokens"]) == len(step["top_probs"]) == 5
    # the sentence's tokens come beside the steps, to read the rows by
    assert data["source_tokens"] == att["source_tokens"] and data["translation"] == att["translation"]


def test_top1_is_the_greedy_token_and_the_probabilities_are_the_models(served, answers):
    data, att, translator = answers.steps, answers.attention, served.translator
    steps = data["steps"]
    # the greedy output, token by token: /attention's decoder positions after BOS, then EOS
    assert [s["chosen_token"] for s in steps] == att["target_tokens"][1:] + ["</s>"]
    for t, step in enumerate(steps):
        assert step["prefix_tokens"] == att["target_tokens"][: t + 1]
        assert step["top_tokens"][0] == step["chosen_token"]
        probs = np.array(step["top_probs"])
        assert np.all(np.diff(probs) <= 0) and np.all((probs >= 0) & (probs <= 1)) and probs.sum() <= 1 + 1e-4

    # Recomputed: the greedy ids, and the full next-token distribution at every step, one token at a time.
    out = greedy_decode(translator.model, torch.tensor([translator.token_ids(SENTENCE)], device=translator.device))[0]
    assert translator.tokenizer.pieces(out) == att["target_tokens"][1:]
    full = next_token_probs(translator, SENTENCE, [translator.cfg.bos_id] + out)  # (T, V)
    assert full.shape[0] == len(steps)
    np.testing.assert_allclose(full.sum(axis=1), 1.0, atol=1e-5)  # a distribution over the vocabulary
    want = -np.sort(-full, axis=1)[:, :5]
    # float32 on a CPU; float16 on a GPU, where the app's batch and this one-sentence rerun round differently
    atol = 2e-5 if translator.dtype == torch.float32 else 2e-3
    np.testing.assert_allclose([s["top_probs"] for s in steps], want, atol=atol)
    assert np.argmax(full, axis=1).tolist() == out + [translator.cfg.eos_id]  # top-1 = the greedy token


def test_step_rows_are_the_rows_of_attention(answers):
    data, att = answers.steps, answers.attention
    cross, dec = np.array(att["cross"]), np.array(att["decoder_self"])  # (L, H, T, S), (L, H, T, T)
    n_layers, n_heads, _, s = cross.shape
    for t, step in enumerate(data["steps"]):
        assert np.array(step["cross"]).shape == (n_layers, n_heads, s)
        assert np.array(step["decoder_self"]).shape == (n_layers, n_heads, t + 1)
        np.testing.assert_array_equal(step["cross"], cross[:, :, t])
        np.testing.assert_array_equal(step["decoder_self"], dec[:, :, t, : t + 1])
        assert np.all(dec[:, :, t, t + 1:] == 0)  # what the step leaves out is the masked future


@pytest.mark.parametrize("text", ["", " \t\n", None])
def test_an_empty_sentence_is_a_clear_error(served, text):
    with pytest.raises(Exception, match="empty") as info:
        served.client.predict(text, api_name="/decode_steps")
    assert "Traceback" not in str(info.value) and 'File "' not in str(info.value)

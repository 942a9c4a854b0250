"""What tests/test_zerogpu.py shares with the processes it starts: the stand-in ``spaces`` (``STANDIN``, put first on
the path: tests/helpers/standin), the app's answers to a few calls, and an app served where ``spaces`` is not
importable at all (as without the package)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from helpers.raw_api import RawClient

STANDIN = Path(__file__).resolve().parent / "standin"
SENTENCE = "a big dog runs in the park."
HEADS = ["cross:1:2", "encoder_self:2:1"]
SAMPLE = 24  # the shipped sample's first pairs the tests' ablations score (a tiny model's scores: no shipped numbers)
CALLS = {  # endpoint -> its arguments: a sentence's runs on three tabs, and the ablation
    "translate": [SENTENCE, 4],
    "attention": [SENTENCE, "", None],
    "decode_steps": [SENTENCE],
    "ablate": [SENTENCE, HEADS],
}


def answers(url: str) -> dict:
    """Each of ``CALLS``' answers from the app at ``url`` (its outputs, or its error), over raw HTTP."""
    client = RawClient(url, timeout=300)
    try:
        out = {}
        for name, args in CALLS.items():
            answer = client.call(name, args)
            out[name] = answer.data if answer.event == "complete" else {"error": answer.message}
        return out
    finally:
        client.close()


def main(folder: str, temp_dir: str) -> None:
    """``python -m helpers.zerogpu FOLDER TEMP`` (tests/ on the path): the app on the model in FOLDER, served as the
    tests serve it (``helpers.served``) in a process where ``import spaces`` fails as it does without the package, its
    ablation on the sample's first ``SAMPLE`` pairs; prints its ``answers`` and its queue's concurrency as JSON."""
    sys.modules["spaces"] = None  # `import spaces` raises ImportError here, gradio's own attempt too
    import model.probes.ablation as ablation
    from helpers.served import served_app
    from model.network.inference import Translator

    small = ablation.load_sample().head(SAMPLE)
    ablation.load_sample = lambda *args: small
    with served_app(Translator(folder, device="cpu"), temp_dir=Path(temp_dir)) as served:
        limit = served.demo._queue.default_concurrency_limit
        print("answers:", json.dumps({"answers": answers(served.url), "concurrency": limit}))


if __name__ == "__main__":
    main(*sys.argv[1:3])

"""The lab's shipped runs, served: their records, the time-lapse maps, and siblings opened on demand.

``assets/lab/`` (``ATTN_LAB_DIR`` names another folder) holds what ``python -m model.lab export`` wrote
(``model.training.lab_export``): a JSON record per run, a time-lapse npz per run, ``index.json``, and a model
folder for each sibling a visitor can run. At most ``capacity`` siblings (default 2) are loaded beside the
shipped model at once; the least recently used goes first. Everything here is read-only and shared by every
visitor.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from functools import cached_property
from pathlib import Path

import numpy as np

from model.terms import KINDS

LAB = Path(__file__).resolve().parents[2] / "assets" / "lab"
REFERENCE = "h8"  # the run whose time-lapse the API serves: the shipped architecture under the lab's budget
SHIPPED = "shipped"  # /lab_attention's name for the shipped model (h = 8, the full training budget)
MAP_DECIMALS = 3


class LabError(ValueError):
    """A request the lab cannot serve; the message names the allowed values."""


def _allowed(what: str, value, allowed) -> LabError:
    return LabError(f"unknown {what} {value!r}; choose one of: {', '.join(map(str, allowed))}")


class Lab:
    def __init__(self, folder: str | Path | None = None, device=None, capacity: int = 2):
        self.folder = Path(folder or os.environ.get("ATTN_LAB_DIR") or LAB)
        self.device, self.capacity = device, capacity
        self._open: OrderedDict[str, object] = OrderedDict()
        self._lock = threading.Lock()

    @cached_property
    def index(self) -> dict:
        """``index.json``: runs (in the lab's order), reference, live, budget, sentences; empty if nothing shipped."""
        path = self.folder / "index.json"
        if not path.is_file():
            return {"runs": [], "reference": REFERENCE, "live": [], "budget": [], "sentences": []}
        return json.loads(path.read_text(encoding="utf-8"))

    @cached_property
    def records(self) -> dict[str, dict]:
        """name -> the run's record, in the lab's order."""
        return {name: json.loads((self.folder / f"{name}.json").read_text(encoding="utf-8"))
                for name in self.index["runs"]}

    @property
    def sentences(self) -> list[dict]:
        return self.index["sentences"]

    @property
    def live(self) -> list[str]:
        """The runs whose weights are shipped (a visitor can run them on a sentence)."""
        return list(self.index["live"])

    def runs_payload(self) -> dict:
        """/lab_runs: one entry per sibling (its seeds together): name, config, seeds, curves, bleu per seed."""
        families: dict[str, dict] = {}
        for record in self.records.values():
            family = record["name"].removesuffix(f"-seed{record['seed']}")
            entry = families.setdefault(family, {
                "name": family, "label": record["label"].split(", seed")[0], "tests": record["tests"],
                "config": record["config"], "parameters": record["parameters"], "seeds": [], "runs": [],
                "curves": [], "bleu": [], "epochs": []})
            entry["seeds"].append(record["seed"])
            entry["runs"].append(record["name"])
            entry["curves"].append(record["curves"])
            entry["bleu"].append(record["bleu"])
            entry["epochs"].append(record["epochs"])
        return {"runs": list(families.values())}

    def check_live(self, run: str) -> None:
        if run not in self.live:
            raise _allowed("run", run, [SHIPPED, *self.live])

    def translator(self, run: str):
        """The sibling's Translator, loaded on first use; at most ``capacity`` stay loaded (LRU)."""
        if run not in self.live:
            raise _allowed("run", run, self.live)
        with self._lock:
            if run in self._open:
                self._open.move_to_end(run)
                return self._open[run]
            from model.network.inference import Translator

            translator = Translator(self.folder / self.records[run]["weights"]["folder"], self.device)
            self._open[run] = translator
            while len(self._open) > self.capacity:
                self._open.popitem(last=False)
            return translator

    def loaded(self) -> list[str]:
        with self._lock:
            return list(self._open)

    def example_index(self, example) -> int:
        """A time-lapse sentence by its index (0-based, int or digits) or its exact English text."""
        texts = [s["source"] for s in self.sentences]
        if isinstance(example, str) and example.strip() in texts:
            return texts.index(example.strip())
        try:
            i = int(str(example).strip())
        except ValueError:
            i = -1
        if 0 <= i < len(texts) and str(i) == str(example).strip():
            return i
        raise _allowed("example", example, [f"{i}: {t}" for i, t in enumerate(texts)])

    def timelapse_maps(self, example, kind: str, run: str | None = None) -> tuple[str, np.ndarray, list, list]:
        """(run, maps (steps, L, H, Q, K) float64, query tokens, key tokens) of one time-lapse sentence."""
        if not self.records:
            raise LabError("no lab run is shipped yet (`python -m model.lab export` ships the finished ones)")
        run = run or self.index["reference"]
        if kind not in KINDS:
            raise _allowed("kind", kind, KINDS)
        if run not in self.records:
            raise _allowed("run", run, list(self.records))
        i = self.example_index(example)
        with np.load(self.folder / self.records[run]["timelapse"]["maps"]) as z:
            maps = z[f"{i}.{kind}"].astype(np.float64) / 255.0  # uint8 -> weights
        sentence = self.sentences[i]
        queries = sentence["source_tokens"] if kind == "encoder_self" else sentence["target_tokens"]
        keys = sentence["target_tokens"] if kind == "decoder_self" else sentence["source_tokens"]
        return run, maps, queries, keys

    def timelapse(self, example, kind: str, run: str | None = None) -> dict:
        """/timelapse: the maps of one time-lapse sentence over the training steps: (steps, L, H, Q, K)."""
        run, maps, queries, keys = self.timelapse_maps(example, kind, run)
        return {"run": run, "example": self.sentences[self.example_index(example)]["source"], "kind": kind,
                "steps": self.records[run]["timelapse"]["steps"], "query_tokens": queries, "key_tokens": keys,
                "maps": np.round(maps, MAP_DECIMALS).tolist()}

"""Ship the lab: finished sibling runs -> the small files the Lab tab reads, in ``assets/lab/``.

Per run ``NAME.json`` (config, parameters, budget, per-epoch log, the recorded curves as columns, BLEU on val
and test_2016_flickr greedy and beam 4 with sacreBLEU's signature, the time-lapse's steps, per-head statistics
and roles, and the SHA-256 of the run's final float16 weights) and ``NAME.timelapse.npz`` (the time-lapse
sentences' maps, one uint8 array per sentence and kind: (steps, L, H, Q, K), weight = value / 255).
``index.json``: the runs in order, the reference run, the live ones, and the time-lapse sentences with their
references and tokens. For ``LIVE`` siblings, a model folder
``NAME/`` (config.json, float16 model.safetensors, tokenizer.model) that the app opens on demand.
The model card gets a section listing every file with its SHA-256.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
from pathlib import Path

import numpy as np
import torch

from model.network.checkpoint import CONFIG_FILE, TOKENIZER_FILE, WEIGHTS_FILE, atomic_write_text, save_model
from model.terms import KINDS
from model.training.lab_series import series
from model.training.lab_stats import DECODINGS, SPLIT, reference_file, statistics, translation_file, write_lines
from model.training.siblings import BUDGET, BY_NAME, SIBLINGS

LIVE = ("h1", "h1-unscaled", "h1-additive")  # the siblings a visitor can run on their own sentence
TIMELAPSE_STATS = ("entropy", "confidence", "sharpness", "eos", "previous")
BUDGET_BYTES = 64 * 2**20
INDEX = "index.json"  # the runs in order, the reference, the live ones, the time-lapse sentences
STATISTICS = "statistics.json"  # model.training.lab_stats.statistics: per run, setting and claim
ROOT_TOKENIZER = Path(__file__).resolve().parents[2] / "assets" / "model" / TOKENIZER_FILE  # every sibling's
DEVICE_NAMES = {"cpu": "CPU (2 cores)", "cuda": "one GPU"}  # what the epoch log says -> the card's words
CARD_START, CARD_END = "<!-- lab: start -->", "<!-- lab: end -->"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _columns(records: list[dict]) -> dict[str, list]:
    """[{step: 25, a: x}, {step: 50, a: y}] -> {step: [25, 50], a: [x, y]} (curves are read column-wise)."""
    keys = list(records[0]) if records else []
    return {key: [r.get(key) for r in records] for key in keys}


def snapshot_files(run: Path) -> list[tuple[int, Path]]:
    return sorted((int(p.stem.split("_")[1]), p) for p in (run / "snapshots").glob("step_*.json"))


def timelapse(run: Path) -> tuple[dict, bytes]:
    """The time-lapse record (steps, probe loss, per-head statistics and roles, and what the maps say over
    training: ``model.training.lab_series``) and the npz of its maps."""
    snaps = snapshot_files(run)
    steps, losses, stats, roles = [], [], {}, {}
    maps: dict[str, list[np.ndarray]] = {}
    exact: dict[str, list[np.ndarray]] = {}  # the float16 maps, for the series (the npz keeps uint8)
    for step, path in snaps:
        record = json.loads(path.read_text(encoding="utf-8"))
        steps.append(step)
        losses.append(record["probe_loss"])
        for kind, per_stat in record["stats"].items():
            for stat in TIMELAPSE_STATS:
                stats.setdefault(kind, {}).setdefault(stat, []).append(per_stat[stat])
            roles.setdefault(kind, []).append(record["roles"][kind])
        with np.load(path.with_suffix(".npz")) as z:
            for key in z.files:
                maps.setdefault(key, []).append(np.round(z[key].astype(np.float32) * 255).astype(np.uint8))
                exact.setdefault(key, []).append(z[key].astype(np.float32))
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **{key: np.stack(arrays) for key, arrays in maps.items()})  # (steps, L, H, Q, K)
    record = {"steps": steps, "probe_loss": losses, "stats": stats, "roles": roles,
              "series": maps_series({key: np.stack(arrays) for key, arrays in exact.items()})}
    return record, buffer.getvalue()


def maps_series(arrays: dict[str, np.ndarray]) -> dict:
    """``{"B.kind": (steps, L, H, Q, K)}`` -> per kind and layer over the steps: entropy ÷ log n, softmax gradient."""
    n = len({key.split(".")[0] for key in arrays})
    return series([{kind: arrays[f"{b}.{kind}"] for kind in KINDS} for b in range(n)], KINDS)


def final_weights(run: Path) -> Path:
    """The run's final weights as a float16 model folder ``run/final16`` (what is hashed and, if live, shipped)."""
    from model.network.checkpoint import load_config, load_state_into, read_tensors
    from model.network.transformer import EncoderDecoder

    folder = run / "final16"
    if not (folder / WEIGHTS_FILE).is_file():
        model = EncoderDecoder(load_config(run))
        load_state_into(model, read_tensors(run / "last" / WEIGHTS_FILE), run / "last")
        save_model(model, folder, dtype=torch.float16)
        shutil.copyfile(run / TOKENIZER_FILE, folder / TOKENIZER_FILE)
    return folder


def factor_said(config: dict) -> dict:
    """Additive attention is never multiplied by 1/√d_k (``TransformerConfig.scale``): its config says
    ``scaled: false`` (runs trained before their command said so wrote ``true``, which the model ignored)."""
    return {**config, "scaled": False} if config.get("attention") == "additive" else config


def run_record(run: Path, out: Path) -> dict:
    sib = BY_NAME[run.name]
    result = json.loads((run / "result.json").read_text(encoding="utf-8"))
    config = json.loads((run / CONFIG_FILE).read_text(encoding="utf-8"))
    from model.network.config import TransformerConfig
    from model.network.params import parameter_breakdown

    log = json.loads((run / "log.json").read_text(encoding="utf-8"))
    curves = json.loads((run / "curves.json").read_text(encoding="utf-8"))
    record, npz = timelapse(run)
    live = sib.name in LIVE
    weights = final_weights(run) if live or "weights_sha256" not in result else None
    # The time-lapse maps of the first seed only (the tab shows one run's history; the budget, BUDGET_BYTES):
    # every seed keeps the series computed from its maps.
    ship_maps = sib.seed == 1
    if ship_maps:
        (out / f"{sib.name}.timelapse.npz").write_bytes(npz)
    for decoding in DECODINGS:
        text = (run / "translations" / f"{SPLIT}.{decoding}.de").read_text(encoding="utf-8")
        write_lines(translation_file(out, sib.name, decoding), text.splitlines())
    if live:
        target = out / sib.name
        target.mkdir(parents=True, exist_ok=True)
        for name in (CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE):
            shutil.copyfile(weights / name, target / name)
    return {
        "name": sib.name,
        "label": sib.label,
        "tests": sib.tests,
        "seed": sib.seed,
        "config": factor_said(config),
        "parameters": parameter_breakdown(TransformerConfig.from_dict(config))["total"],
        "budget": BUDGET + ["--anneal", str(result["steps"] // 2), str(result["steps"])],
        "steps": result["steps"],
        "epochs": [{k: e[k] for k in ("epoch", "step", "train_loss", "val_loss", "val_ppl", "val_bleu", "elapsed_s")}
                   for e in log],
        "curves": _columns(curves),
        "bleu": result["bleu"],
        "signature": result["signature"],
        "timelapse": {**record, "maps": f"{sib.name}.timelapse.npz" if ship_maps else None},
        # runs logged before the epoch log named its device all trained on the CPU
        "trained_on": sorted({e.get("device", "cpu") for e in log}),
        "weights": {"sha256": result.get("weights_sha256") or sha256(weights / WEIGHTS_FILE),
                    "folder": sib.name if live else None},
    }


def card_section(records: list[dict]) -> str:
    lines = [CARD_START, "## The lab's siblings", "",
             "Trained by `python -m model.lab train`, shipped by `python -m model.lab export` into `assets/lab/` "
             "(the Lab tab). Same data, vocabulary and recipe as the shipped model, one thing changed each, under "
             "one shorter budget: " + " ".join(records[0]["budget"]) + ".", "",
             "| run | what changes | parameters | trained on | val BLEU greedy / beam 4 | test_2016 greedy / beam 4 "
             "| weights |", "|---|---|---|---|---|---|---|"]
    for r in records:
        b = r["bleu"]
        where = f"`assets/lab/{r['weights']['folder']}/`" if r["weights"]["folder"] else "not shipped"
        device = ", ".join(DEVICE_NAMES.get(d, d.replace("cuda: ", "one GPU, ")) for d in r["trained_on"])
        lines.append(f"| {r['name']} | {r['label']} | {r['parameters']:,} | {device} | {b['val.greedy']:.2f} / "
                     f"{b['val.beam4']:.2f} | {b['test_2016_flickr.greedy']:.2f} / {b['test_2016_flickr.beam4']:.2f}"
                     f" | {where}, SHA-256 `{r['weights']['sha256'][:16]}…` |")
    return "\n".join(lines + ["", CARD_END])


def update_card(card: Path, section: str) -> None:
    text = card.read_text(encoding="utf-8")
    if CARD_START in text:
        text = text[: text.index(CARD_START)] + section + text[text.index(CARD_END) + len(CARD_END):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    atomic_write_text(card, text)


def shipped_record(out: Path, name: str) -> dict | None:
    """A run shipped earlier whose training folder is gone (a new machine): its record as shipped, with the series
    of its time-lapse maps and the factor its config says brought up to date."""
    path = out / f"{name}.json"
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    record["config"] = factor_said(record["config"])
    maps = record["timelapse"].get("maps")
    if maps and "series" not in record["timelapse"]:
        with np.load(out / maps) as z:
            record["timelapse"]["series"] = maps_series({key: z[key].astype(np.float32) / 255 for key in z.files})
    return record


def export_all(runs: Path, out: Path, card: Path | None = None, data: Path | None = None) -> list[dict]:
    """Every finished run (``result.json`` written) of ``SIBLINGS``, in their order, beside the runs shipped before
    whose folders are not here (kept as shipped); then the statistics (``model.training.lab_stats``) from every
    run's shipped translations, with the test set's references copied from ``data`` when it is given."""
    from model.network.tokenizer import Tokenizer
    from model.training.recorder import timelapse_tokens

    out.mkdir(parents=True, exist_ok=True)
    records = []
    for sib in SIBLINGS:
        run = runs / sib.name
        if (run / "result.json").is_file():
            record = run_record(run, out)
            print(f"{sib.name}: exported", flush=True)
        elif (record := shipped_record(out, sib.name)) is None:
            continue
        atomic_write_text(out / f"{sib.name}.json", json.dumps(record, separators=(",", ":")) + "\n")
        records.append(record)
    if not records:
        raise ValueError(f"{runs}: no finished run (none has result.json); train with `python -m model.lab train`")
    trained = [runs / r["name"] / TOKENIZER_FILE for r in records if (runs / r["name"] / TOKENIZER_FILE).is_file()]
    tok = Tokenizer(trained[0] if trained else ROOT_TOKENIZER)  # the siblings' vocabulary (the shipped one)
    index = {"runs": [r["name"] for r in records], "reference": SIBLINGS[0].name,
             "live": [r["name"] for r in records if r["weights"]["folder"]], "budget": records[0]["budget"],
             "sentences": timelapse_tokens(tok)}
    atomic_write_text(out / INDEX, json.dumps(index, ensure_ascii=False, indent=1) + "\n")
    if data is not None and (data / f"{SPLIT}.de.gz").is_file():
        reference_file(out).parent.mkdir(exist_ok=True)
        for lang in ("en", "de"):
            shutil.copyfile(data / f"{SPLIT}.{lang}.gz", reference_file(out, lang))
    stats = statistics(out, {r["name"]: r for r in records})
    atomic_write_text(out / STATISTICS, json.dumps(stats, ensure_ascii=False, indent=1) + "\n")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"{out}: {size / 2**20:.1f} MB in {sum(1 for p in out.rglob('*') if p.is_file())} files", flush=True)
    if size > BUDGET_BYTES:
        raise ValueError(f"{out}: {size / 2**20:.1f} MB, over the lab's {BUDGET_BYTES // 2**20} MB")
    if card is not None:
        update_card(card, card_section(records))
    return records

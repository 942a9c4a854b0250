"""Does the encoder keep its positions apart? ``python -m model.diagnose [--model DIR] [--init GAIN]``.

For each encoder layer, over the first ``--sentences`` lines of a source file: the mean pairwise cosine
similarity of the layer's output vectors (1.0 means every position carries the same vector: the encoder
has collapsed to one summary of the sentence, and cross-attention can only be uniform) and the ratio of
the self-attention sub-layer's output norm to its input's. ``--init GAIN`` measures a freshly initialised
model of the same config instead, with ``scale_branch_init(GAIN)``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
import torch.nn.functional as F

from model.cli import command
from model.network.inference import ASSETS, Translator
from model.network.transformer import EncoderDecoder, padding_mask
from model.training.data import MULTI30K, read_lines, split_path


@torch.inference_mode()
def encoder_profile(model: EncoderDecoder, sentences: list[list[int]]) -> list[tuple[float, float]]:
    """Per encoder layer: (mean pairwise cosine of its outputs, |self-attention output| / |input|)."""
    sums = torch.zeros(len(model.encoder.layers), 2, dtype=torch.float64)
    for ids in sentences:
        src = torch.tensor([ids], device=next(model.parameters()).device)
        mask, x = padding_mask(src, model.cfg.pad_id), model.embed_tokens(src)
        for i, layer in enumerate(model.encoder.layers):
            attn_out, _ = layer.self_attn(x, x, mask, model.cfg.scale)
            ratio = (attn_out.float().norm(dim=-1) / x.float().norm(dim=-1)).mean()
            x, _ = layer(x, mask, model.cfg.scale)
            unit = F.normalize(x[0].float(), dim=-1)
            sums[i, 0] += float((unit @ unit.T).mean())
            sums[i, 1] += float(ratio)
    return [(c / len(sentences), r / len(sentences)) for c, r in sums.tolist()]


@command
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m model.diagnose", description=__doc__.splitlines()[0])
    p.add_argument("--model", type=Path, default=ASSETS)
    p.add_argument("--init", type=float, metavar="GAIN", help="a fresh model of that config, branch init gain GAIN")
    p.add_argument("--src", type=Path, help="English sentences (default: DATA/val.en.gz)")
    p.add_argument("--data", type=Path, default=MULTI30K)
    p.add_argument("--sentences", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    translator = Translator(args.model, "cpu")
    lines = read_lines(args.src or split_path(args.data, "val", "en"))[: args.sentences]
    model, what = translator.model, str(args.model)
    if args.init is not None:
        torch.manual_seed(args.seed)
        model = EncoderDecoder(translator.cfg).eval()
        model.scale_branch_init(args.init)
        what = f"a fresh {what} config, branch init gain {args.init:g}"
    ids = [translator.token_ids(s) for s in lines if s.strip()]
    print(f"{what}: {len(ids)} sentences")
    print("layer  cosine between positions  |attention out| / |input|")
    for i, (cos, ratio) in enumerate(encoder_profile(model, ids), 1):
        print(f"{i:>5}  {cos:>24.3f}  {ratio:>25.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

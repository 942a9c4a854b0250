"""Translate one sentence and export its attention maps.

    python -m model.translate "A dog runs in the park." [--target "Ein Hund …"] [--npz F] [--json F]

Prints the translation (with ``--target``: that given translation, teacher-forced). The npz/json hold
``source_tokens``, ``target_tokens``, ``encoder_self (L,H,S,S)``, ``decoder_self (L,H,T,T)`` and
``cross (L,H,T,S)`` as float32.
"""

from __future__ import annotations

import sys
from pathlib import Path

from model.cli import ArgumentParser, attention_scale, beam_size, command, device_name
from model.network.inference import ASSETS, Translator


@command
def main(argv: list[str] | None = None) -> int:
    p = ArgumentParser(prog="python -m model.translate", description="Translate English to German.")
    p.add_argument("text", help="English source sentence")
    p.add_argument("--target", help="German translation to show the attention of (teacher forcing)")
    p.add_argument(
        "--beam",
        type=beam_size,
        default=1,
        help="beam size for the printed translation, 1-8 (1 = greedy, the one whose attention is exported)",
    )
    p.add_argument("--scale", type=attention_scale, help="attention scale instead of 1/sqrt(d_k), in (0, 100]")
    p.add_argument("--npz", type=Path, help="write the attention maps here (.npz)")
    p.add_argument("--json", type=Path, help="write the attention maps here (.json)")
    p.add_argument("--model", type=Path, default=ASSETS, help="checkpoint folder (default: the shipped model)")
    p.add_argument("--device", type=device_name, help="cpu, cuda or cuda:N (default: cuda when present)")
    args = p.parse_args(argv)
    translator = Translator(args.model, args.device)
    result = translator.attention(args.text, target=args.target, scale=args.scale)
    text = result.translation
    if args.beam > 1 and not args.target:
        text = translator.translate(args.text, beam=args.beam, scale=args.scale)
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(text)
    if args.npz:
        args.npz.write_bytes(result.to_npz_bytes())
    if args.json:
        args.json.write_text(result.to_json(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

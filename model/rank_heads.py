"""``python -m model.rank_heads``: rank every head by the BLEU the sample loses without it, and store the sample's head
statistics (``model.training.rank_heads``)."""

from model.training.rank_heads import main

if __name__ == "__main__":
    raise SystemExit(main())

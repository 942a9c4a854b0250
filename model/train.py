"""``python -m model.train``: train a Transformer on Multi30k, resumable (``model.training.train``)."""

from model.training.train import main

if __name__ == "__main__":
    raise SystemExit(main())

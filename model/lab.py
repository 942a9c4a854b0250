"""``python -m model.lab``: the lab of sibling models: train, status, export (``model.training.lab``)."""

from model.training.lab import main

if __name__ == "__main__":
    raise SystemExit(main())

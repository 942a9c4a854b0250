"""``python -m model.domain``: calibrate the "far from the captions" rule into the model folder, and (``--card``) the
model card's section on what the model is bad at (``model.training.domain``, ``model.training.limits``)."""

from model.training.domain import main

if __name__ == "__main__":
    raise SystemExit(main())

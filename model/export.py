"""``python -m model.export``: ship a training run: averaged weights, float16, the model card
(``model.training.export``)."""

from model.training.export import main

if __name__ == "__main__":
    raise SystemExit(main())

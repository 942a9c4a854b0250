"""``python -m model.evaluate``: cased sacreBLEU of a model on parallel files (``model.training.evaluate``)."""

from model.training.evaluate import main

if __name__ == "__main__":
    raise SystemExit(main())

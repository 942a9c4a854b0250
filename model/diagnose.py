"""``python -m model.diagnose``: does the encoder keep its positions apart? (``model.training.diagnose``)."""

from model.training.diagnose import main

if __name__ == "__main__":
    raise SystemExit(main())

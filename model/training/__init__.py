"""Training and measuring models: the training command and its pieces (schedule, loss, validation, resumable state),
the data, the recorder of curves and attention snapshots, evaluation (sacreBLEU), export to a shipped model folder
with its card, diagnostics, the head ranking, and the lab of sibling models. The commands run as ``python -m
model.<name>`` through the thin entry points in ``model/``.
"""

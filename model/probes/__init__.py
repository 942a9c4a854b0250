"""What the tabs ask the model, beyond a translation: the decoding steps, teacher-forced token probabilities, the
replayed layers and one head from the inside, per-head statistics and roles, head ablation, and footnote 4's scaling
experiments. They return plain dataclasses and numpy arrays; none knows the UI.
"""

"""Presenters: one module per tab of the app. Each turns a model result plus the view's choices (kind, layer,
head, factor, ...) into finished figure specs (``finish_figure``) and Markdown, and checks those choices
with clear ``ValueError``s. No gradio here: ``app.py`` lays the results out and maps a ValueError to a
message; the presenters are unit-tested without a server (``tests/test_views.py``).

A presenter may call the model (it gets the runs it needs as callables, so that the app can wrap them
for ZeroGPU and cache them), which is why ``viz.views`` may import torch where the drawing modules of
``viz`` never do.
"""

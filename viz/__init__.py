"""Attention visualisation: numpy arrays and token lists in, plotly figure specs, SVG and Markdown out.

The drawing modules (``viz/*.py``) need neither gradio nor torch. ``viz/views/`` holds the presenters, grouped
by tab (a result and the tab's choices in, finished figures and text out); presenters may call the model through
``model.serving.runs.Runs``. Nothing in ``viz`` imports gradio (``tests/test_layering.py``).
"""

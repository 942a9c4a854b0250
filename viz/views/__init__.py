"""Presenters, grouped by tab. Each turns a model result plus the view's choices (kind, layer, head, factor, ...)
into finished figures (``outputs.finish_figure``) and Markdown, and checks those choices with clear
``ValueError``s. No gradio here: the app lays the results out and maps a ValueError to a message; the presenters
are unit-tested without a server (``tests/test_views.py``). The figures themselves are drawn in ``viz/*.py``.

  attention/      the Attention tab (a package: the maps, the close-up and what the tab adds around them)
  decode_steps    the Decoding tab        scaling        the "Why 1/√d_k" tab
  inside_head     the Inside a head tab   head_analysis  the Head analysis tab
  architecture    the Architecture tab    model_card     the Model card tab
  lab             the Lab tab

Shared by every tab:
  inputs          every value a listener takes from the page or the API, checked
  outputs         what a presenter returns: finished figures (``Figure``) and updates of other outputs (``Update``)
  reading         the "How to read this" note of each tab
  page            the contract between the page and its script (element ids, label patterns, the script)
  exports         export files on disk, never more than a bound
  api             the endpoints without a UI, for scripts

A presenter may call the model (it gets the runs it needs as callables, so that the app can wrap them
for ZeroGPU and cache them), which is why ``viz.views`` may import torch where the drawing modules of
``viz`` never do.
"""

"""From-scratch Transformer (Vaswani et al., 2017) and everything that runs it. No UI here.

    network/    the Transformer, tokenizer, checkpoints, decoding, and the Translator every other room uses
    probes/     what the tabs ask the model beyond a translation (steps, forcing, heads inside and out, scaling)
    serving/    the app's model-run service (Runs), its cache, the micro-batcher and the model process
    training/   training, data, evaluation, export, diagnostics, the head ranking and the lab
    terms.py    the words shared with viz/ and the app (kinds of attention, limits, special pieces); no torch
    cli.py      one error style for every command; the commands themselves are the small modules beside it
                (``python -m model.train``, ``.evaluate``, ``.translate``, ``.export``, ``.diagnose``,
                ``.rank_heads``, ``.lab``)

Rooms import downwards only: probes use the network; serving uses the probes and the network; training uses the
network and the probes. Nothing here imports viz, gradio or the app.
"""

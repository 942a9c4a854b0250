"""The app's Gradio code, the only gradio in viz: ``wiring`` (what every tab builder shares: presenters as
listeners, the page's settings), ``patches`` (where the app works around Gradio's internals), ``endpoints`` (the
API without a page) and ``tabs`` (one module per tab: its layout and listeners, ``build_<tab>``). app.py composes
them; nothing here imports app.py."""

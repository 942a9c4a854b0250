"""One module per tab of the app, in the page's order: attention, decoding, scaling ("Why 1/√d_k"), inside_head,
head_analysis, architecture, model_card. Each ``build_<tab>(page, …)`` lays out its ``gr.Tab`` and wires its
listeners; it takes the components of other tabs it links to as arguments and returns those other tabs need
(``app.create_app`` passes them on)."""

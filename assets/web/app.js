/* The page script of app.py (Gradio runs it once the page has loaded: launch(js=...)).

   app.py calls this function with the page contract, written once in Python (app.PAGE):
     page.overview, page.figure1       element ids of the overview plot and of Figure 1
     page.tileClick, page.blockClick   element ids of two hidden textboxes this script writes to
     page.layerLabel, page.headLabel   regular expressions that read the layer and the head (1-based)
                                       from an overview cell's row and column labels (viz.heatmaps)
   Messages: a click on an overview tile sends "layer,head,time" to page.tileClick; a click (or Enter,
   or Space) on an attention block of Figure 1 sends "kind|time" to page.blockClick. The time makes
   every message new, so that a second click on the same tile is a change too. */
(page) => {
  // Tell a hidden Gradio textbox something: its .change listener does the rest.
  const send = (id, value) => {
    const box = document.querySelector(`#${id} textarea, #${id} input`);
    if (!box) return;
    box.value = value;
    box.dispatchEvent(new Event('input', {bubbles: true}));
  };

  // Client-side downloads of a plot as PNG or SVG, through plotly's own camera button (the Export buttons).
  window.attnDownload = (id, format) => {
    const gd = document.querySelector(`#${id} .js-plotly-plot`);
    const btn = gd && gd.querySelector('.modebar-btn[data-title^="Download plot"]');
    if (!btn) return;
    const old = gd._context.toImageButtonOptions;
    gd._context.toImageButtonOptions = {...old, format: format};
    btn.dispatchEvent(new MouseEvent('click', {bubbles: true}));
    gd._context.toImageButtonOptions = old;
  };

  // Overview: a click on a tile picks its layer and head. Gradio draws the plot late, and anew: hook it when it appears.
  const layerOf = new RegExp(page.layerLabel), headOf = new RegExp(page.headLabel);
  const hook = () => {
    const gd = document.querySelector(`#${page.overview} .js-plotly-plot`);
    if (gd && gd.on && !gd.attnHooked) {
      gd.attnHooked = true;
      gd.on('plotly_click', (ev) => {
        const p = ev.points && ev.points[0];
        const layer = p && layerOf.exec(String(p.y)), head = p && headOf.exec(String(p.x));
        if (layer && head) send(page.tileClick, `${layer[1]},${head[1]},${Date.now()}`);
      });
    }
  };
  new MutationObserver(hook).observe(document.body, {childList: true, subtree: true});

  // Figure 1: an attention block opens its heatmaps. Listened for on the document, so redraws need no new hook.
  const block = (ev) => ev.target.closest && ev.target.closest(`#${page.figure1} [data-attention]`);
  document.addEventListener('click', (ev) => {
    const b = block(ev);
    if (b) send(page.blockClick, `${b.dataset.attention}|${Date.now()}`);
  });
  document.addEventListener('keydown', (ev) => {
    const b = (ev.key === 'Enter' || ev.key === ' ') && block(ev);
    if (!b) return;
    ev.preventDefault();
    send(page.blockClick, `${b.dataset.attention}|${Date.now()}`);
  });
}

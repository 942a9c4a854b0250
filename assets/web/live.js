/* The Why tab's run (section 3): its three figures come as JSON in a hidden textbox (viz.views.scaling.live_frames),
   not as three new Plot values (each drawn from scratch in a new element, ~1.7 times as long as in place). Each is
   drawn in the figure shown, only what changed (inside.js's shared.drawInPlace: the Plot keeps its value, and should
   Gradio draw that value again, the figure drawn in its place is drawn instead). A figure not drawn yet (the tab's
   first run) becomes its Plot's value: window.attnLiveRun returns the three Plots' outputs, undefined (no change) for
   those drawn in place. */
(page, {plotOf, drawInPlace}) => {
  window.attnLiveRun = (text) => {
    if (!text) return page.livePlots.map(() => undefined);
    const {figures} = JSON.parse(text);
    const shown = (id) => {
      const gd = plotOf(id);
      return Boolean(gd && gd.attnSent);
    };
    drawInPlace(Object.fromEntries(page.livePlots.filter(shown).map((id) => [id, figures[id]])));
    return page.livePlots.map((id) => (shown(id) ? undefined : {type: 'plotly', plot: JSON.stringify(figures[id])}));
  };
}

/* Draw once: every figure drawn once, not twice, with the margins the server worked out. Reads no entry of the page
   contract.

   Gradio's Plot hands a new figure to its plotly element (Plotly.react), then replaces that element with a new one
   ({#key} on the figure) and draws the figure again there: the overview was drawn twice per run (~60 ms of a ~200 ms
   click on a 2-core machine). Plotly is wrapped once it is loaded (Gradio loads it with the first plot and sets
   window.Plotly): a draw waits one microtask, by when Svelte has swapped the elements (in the same task: no moment
   without a plot element), and is skipped if its element has left the page. A drawn figure tells the page with a
   bubbling 'attn-drawn' event on its element (the benchmark waits for it).

   A figure whose margins the server worked out (viz.margins: layout.meta.margins, the overview and the close-up) is
   drawn once: its column labels' angle for the plot's width (flat, slanted, upright: the first whose columns fit),
   those margins, and margin.autoexpand off (Gradio turns it on; then plotly draws, measures the labels, grows the
   margins and draws again). A plot whose width changes (a resize) gets its angle and margins again; a plot in a
   hidden tab (no width) keeps them. */
() => {
  const fitMargins = (gd, layout) => {
    const m = layout && layout.meta && layout.meta.margins;
    if (!m || !Array.isArray(m.angles) || !m.angles.length) return false;
    const width = gd.clientWidth, top = (layout.margin || {}).t || 0;
    // plotly's resize drops layout.height: the drawn height is then only in plotly's _fullLayout (no public getter)
    const height = layout.height || (gd._fullLayout || {}).height || 0;
    const fits = ([, need, left, bottom]) => {
      let plot = width - left - m.r;
      if (m.cells) plot = Math.min(plot, (height - top - bottom) * m.cells[0] / m.cells[1]);
      return !m.n || plot / m.n >= need;
    };
    const [angle, , l, b] = m.angles.find(fits) || m.angles[m.angles.length - 1];
    layout.margin = {...(layout.margin || {}), l, r: m.r, b, autoexpand: false};
    if (m.n) layout.xaxis = {...(layout.xaxis || {}), tickangle: angle};
    return true;
  };
  const refit = new ResizeObserver((entries) => entries.forEach(({target: gd}) => {
    if (!gd.isConnected) { refit.unobserve(gd); return; }
    if (!gd.clientWidth || !gd._fullLayout || !gd.layout) return;  // not drawn yet (the same private layout as above)
    const layout = {...gd.layout};
    const was = JSON.stringify([layout.margin, (layout.xaxis || {}).tickangle]);
    if (!fitMargins(gd, layout)) return;
    const now = [layout.margin, (layout.xaxis || {}).tickangle];
    if (JSON.stringify(now) !== was) window.Plotly.relayout(gd, {margin: now[0], 'xaxis.tickangle': now[1]});
  }));
  // Plotly.react itself is wrapped: plotly has no public hook that runs before a draw.
  const deferDraws = (plotly) => {
    if (!plotly || plotly.attnDeferred) return plotly;
    const react = plotly.react;
    const drawn = (gd) => { gd.dispatchEvent(new CustomEvent('attn-drawn', {bubbles: true})); return gd; };
    plotly.react = function (gd, ...rest) {
      if (!(gd instanceof HTMLElement) || !gd.isConnected) return react.call(this, gd, ...rest);
      return Promise.resolve().then(() => {
        if (!gd.isConnected) return gd;
        if (fitMargins(gd, rest[1])) refit.observe(gd);
        return Promise.resolve(react.call(this, gd, ...rest)).then(drawn);
      });
    };
    plotly.attnDeferred = true;
    return plotly;
  };
  // Gradio sets window.Plotly as it loads plotly and draws at once: its setter is the one moment before the first draw.
  let plotlyLoaded = deferDraws(window.Plotly);
  Object.defineProperty(window, 'Plotly', {configurable: true, get: () => plotlyLoaded,
                                           set: (p) => { plotlyLoaded = deferDraws(p); }});
}

/* Exports that carry their context: a plot saved as PNG or SVG (the Export buttons, or plotly's own camera button).
   Reads no entry of the page contract; the overview's tiles by the shared layerOf / headOf.

   window.attnDownload(id, format): the Export buttons (viz/ui/tabs/attention.py) download the plot of element `id`
   as PNG or SVG, client-side, through plotly's own camera button.

   A saved plot is drawn from an export layout: an opaque white background and dark text, and what the figure's
   layout.meta.export adds (viz.views.attention.context): its title (the sentence, the kind, layer and head), its colour
   bar where the page shows one for several maps (showscale: viz.views.scaling.page_map) and, with
   categoryTicks, the overview's tokens as tick labels (read off its row and column labels "L1 query 3: Hunde" ->
   "Hunde", tiles by page.layerLabel / page.headLabel), drawn on a canvas large enough for one legible label per cell
   (exportCell px, at most exportMax px wide). plotly copies gd.data, gd.layout and its export options the moment the
   download starts: the page's own come back at once.

   The camera button reads its options from the plot's config in plotly's private gd._context: plotly has no public way
   to change a plot's config for one click (Plotly.react with a new config draws the plot anew). */
(page, {plotOf, layerOf, headOf}) => {
  window.attnDownload = (id, format) => {
    const gd = plotOf(id);
    const btn = gd && gd.querySelector('.modebar-btn[data-title^="Download plot"]');
    if (!btn) return;
    const old = gd._context.toImageButtonOptions;
    gd._context.toImageButtonOptions = {...old, format: format};
    btn.dispatchEvent(new MouseEvent('click', {bubbles: true}));
    gd._context.toImageButtonOptions = old;
  };

  const exportCell = 16, exportMax = 3200;
  const tokenTicks = (axis, labels, pattern) => {
    const vals = Array.from(labels || []).filter((l) => pattern.test(String(l)));
    return {...axis, showticklabels: true, tickmode: 'array', tickvals: vals, automargin: true, tickfont: {size: 10},
            ticktext: vals.map((l) => {
              const i = String(l).indexOf(': ');
              return i < 0 ? '' : String(l).slice(i + 2);
            })};
  };
  const exportSize = (gd) => {  // the overview's canvas: its cells exportCell px square, its labels around them
    const heatmap = (gd.data || []).find((t) => t.type === 'heatmap');
    if (!heatmap) return {};
    const width = Math.min(exportMax, heatmap.x.length * exportCell + 320);
    const cell = (width - 320) / heatmap.x.length;
    return {width: Math.round(width), height: Math.round(heatmap.y.length * cell + 260)};
  };
  const exportLayout = (gd) => {
    const own = gd.layout || {}, meta = (own.meta && own.meta.export) || {};
    const layout = {...own, paper_bgcolor: '#ffffff', plot_bgcolor: '#ffffff',
                    font: {...(own.font || {}), color: '#222222'},
                    margin: {...(own.margin || {}), autoexpand: true}};  // plotly sizes an export's margins
    if (meta.title) {  // its lines in the top margin (plotly centres a title there)
      const lines = meta.title.split('<br>').length;
      layout.title = {text: meta.title, x: 0, xref: 'paper', xanchor: 'left', font: {size: 13, color: '#222222'}};
      layout.margin = {...layout.margin, t: Math.max((own.margin || {}).t || 0, 24 + 20 * lines)};
    }
    const heatmap = (gd.data || []).find((t) => t.type === 'heatmap');
    if (meta.categoryTicks && heatmap) {  // the tokens on the axes, "L1 H1" over each tile
      layout.xaxis = {...tokenTicks(own.xaxis, heatmap.x, headOf), tickangle: -90};
      layout.yaxis = tokenTicks(own.yaxis, heatmap.y, layerOf);
      const firsts = (labels, pattern) => {
        const at = new Map();
        Array.from(labels).forEach((l, i) => {
          const m = pattern.exec(String(l));
          if (m && !at.has(m[1])) at.set(m[1], i);
        });
        return [...at];
      };
      const tiles = [];
      for (const [layer, row] of firsts(heatmap.y, layerOf)) {
        for (const [head, col] of firsts(heatmap.x, headOf)) {
          tiles.push({text: `L${layer} H${head}`, x: col - 0.5, y: row - 0.5, xref: 'x', yref: 'y', xanchor: 'left',
                      yanchor: 'bottom', showarrow: false, font: {size: 11, color: '#222222'}});
        }
      }
      layout.annotations = [...(own.annotations || []).filter((a) => !/^L\d+ H\d+$/.test(String(a.text))), ...tiles];
    }
    return layout;
  };
  document.addEventListener('click', (ev) => {
    const btn = ev.target.closest && ev.target.closest('.modebar-btn[data-title^="Download plot"]');
    const gd = btn && btn.closest('.js-plotly-plot');
    if (!gd || !gd.layout) return;
    const own = gd.layout, exported = exportLayout(gd), ownData = gd.data;
    const ownOptions = gd._context.toImageButtonOptions, meta = (own.meta && own.meta.export) || {};
    const options = {...ownOptions, ...(meta.categoryTicks ? exportSize(gd) : {})};
    // a map whose colour bar the page shows once beside it (meta.export.showscale) is saved with its own
    const data = meta.showscale ? ownData.map((t) => (t.type === 'heatmap' ? {...t, showscale: true} : t)) : ownData;
    gd.layout = exported;  // read by plotly's own click handler, which runs after this capturing one
    gd.data = data;
    gd._context.toImageButtonOptions = options;
    setTimeout(() => {
      if (gd.data === data) gd.data = ownData;
      if (gd.layout === exported) gd.layout = own;
      if (gd._context.toImageButtonOptions === options) gd._context.toImageButtonOptions = ownOptions;
    }, 0);
  }, true);
}

/* Head analysis: a click on a cell of the statistics grid (page.cellGrid) sends "kind,layer,head,time" to
   page.cellClick (a hidden textbox): the server opens that head on the Attention tab. Each cell's customdata is
   [kind, layer, head, role], 1-based (viz.stats_grid). A new figure's element is hooked anew. Another statistic is
   drawn here from the grids the server sent for every one (window.attnHeadsStat, events.js's headsStat).

   On a wide screen (WIDE: the grid takes the page's width there, app.css) the kinds' panels, stacked by the server
   (viz.stats_grid: one under the other, as a phone needs them), are drawn side by side: the grid a third as tall, whole
   on the first screen at 1280×720 (draw.js's drawHooks). */
(page, {send, eachPlot, applyChanges, drawHooks}) => {
  const WIDE = matchMedia('(min-width: 1000px)');
  const GAP_PX = 14;  // between two panels (the layer labels only left of the first: the rows line up)
  const sideBySide = (layout) => {
    const axes = Object.keys(layout).filter((k) => /^yaxis\d*$/.test(k)).sort();
    const n = axes.length, width = document.getElementById(page.cellGrid).clientWidth || 1200;
    if (n < 2 || !layout.meta || !layout.meta.grid) return null;
    const {cell, gap, top} = layout.meta.grid, layers = layout[axes[0]].tickvals.length;
    const plot = layers * cell + gap, y1 = 1 - (gap - 8) / plot, step = 1 / n, pad = GAP_PX / width;
    const t = layout.title && layout.title.text ? layout.margin.t : 8;  // (no title: no room kept for one)
    const out = {...layout, height: t + plot + layout.margin.b, margin: {...layout.margin, t},
                 meta: {...layout.meta, sideBySide: true}};
    axes.forEach((y, i) => {
      const x = y.replace('y', 'x'), x0 = i * step + (i ? pad / 2 : 0);
      out[x] = {...layout[x], domain: [x0, (i + 1) * step - (i < n - 1 ? pad / 2 : 0)]};
      out[y] = {...layout[y], domain: [y1 - layers * cell / plot, y1], showticklabels: !i};
    });
    out.annotations = (layout.annotations || []).map((a, i) => ({...a, x: out[axes[i].replace('y', 'x')].domain[0],
                                                                  y: y1}));
    const bar = out.coloraxis && out.coloraxis.colorbar;
    if (bar) out.coloraxis = {...out.coloraxis, colorbar: {...bar, y: -12 / plot}};
    return out;
  };
  drawHooks.push((gd, data, layout) => {
    if (!gd.closest(`#${page.cellGrid}`)) return null;
    // as the server laid it out, for a change of the screen's width (a redraw of the page's, as the theme changes,
    // hands back the layout drawn: side by side, it is not kept)
    const stacked = layout.meta && layout.meta.sideBySide ? gd.attnStacked || layout : layout;
    gd.attnStacked = stacked;
    const out = WIDE.matches && sideBySide(stacked);
    return out ? {data, layout: out} : (stacked !== layout ? {data, layout: stacked} : null);
  });
  WIDE.addEventListener('change', () => {  // a window made wider or narrower: the grid laid out again
    const gd = document.querySelector(`#${page.cellGrid} .js-plotly-plot`);
    if (gd && gd.attnStacked && window.Plotly) window.Plotly.react(gd, gd.attnSentData, gd.attnStacked, gd.attnSentConfig);
  });
  // window.attnHeadsStat(frames, stat): the grid of one statistic as a Gradio Plot's value (null: none yet), from
  // every statistic's grid (viz.views.head_analysis.stats_frames: the first one's figure and each one's changes).
  let held = {text: null, frames: null};
  window.attnHeadsStat = (text, stat) => {
    if (held.text !== text) held = {text, frames: text ? JSON.parse(text) : null};
    const changes = held.frames && held.frames.stats[stat];
    if (!changes) return null;
    return {type: 'plotly', plot: JSON.stringify(applyChanges(held.frames.base, changes))};
  };

  // A role word wider than its cell (presentation mode's 16 px on a phone: "mixed" 43 px in a 41-px cell) is drawn as
  // wide as the cell, its letters a little narrower, its size kept
  const fitWords = (gd) => {
    const fl = gd._fullLayout, x = fl && fl.xaxis, n = x && x.tickvals ? x.tickvals.length : 0;
    if (!n) return;
    const room = x._length / n - 4;
    gd.querySelectorAll('.heatmap-label text').forEach((t) => {
      t.removeAttribute('textLength');
      if (t.getComputedTextLength() > room) {
        t.setAttribute('textLength', room.toFixed(1));
        t.setAttribute('lengthAdjust', 'spacingAndGlyphs');
      }
    });
  };
  eachPlot(page.cellGrid, (gd) => {
    gd.on('plotly_afterplot', () => fitWords(gd));
    fitWords(gd);
    gd.on('plotly_click', (ev) => {
      const cd = ev.points && ev.points[0] && ev.points[0].customdata;
      if (Array.isArray(cd) && cd.length >= 3) send(page.cellClick, `${cd[0]},${cd[1]},${cd[2]},${Date.now()}`);
    });
  });
}

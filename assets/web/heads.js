/* Head analysis: a click on a cell of the statistics grid (page.cellGrid) sends "kind,layer,head,time" to
   page.cellClick (a hidden textbox): the server opens that head on the Attention tab. Each cell's customdata is
   [kind, layer, head, role], 1-based (viz.stats_grid). A new figure's element is hooked anew. Another statistic is
   drawn here from the grids the server sent for every one (window.attnHeadsStat, events.js's headsStat). */
(page, {send, eachPlot, applyChanges}) => {
  // window.attnHeadsStat(frames, stat): the grid of one statistic as a Gradio Plot's value (null: none yet), from
  // every statistic's grid (viz.views.head_analysis.stats_frames: the first one's figure and each one's changes).
  let held = {text: null, frames: null};
  window.attnHeadsStat = (text, stat) => {
    if (held.text !== text) held = {text, frames: text ? JSON.parse(text) : null};
    const changes = held.frames && held.frames.stats[stat];
    if (!changes) return null;
    return {type: 'plotly', plot: JSON.stringify(applyChanges(held.frames.base, changes))};
  };

  eachPlot(page.cellGrid, (gd) => {
    gd.on('plotly_click', (ev) => {
      const cd = ev.points && ev.points[0] && ev.points[0].customdata;
      if (Array.isArray(cd) && cd.length >= 3) send(page.cellClick, `${cd[0]},${cd[1]},${cd[2]},${Date.now()}`);
    });
  });
}

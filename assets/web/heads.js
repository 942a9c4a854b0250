/* Head analysis: a click on a cell of the statistics grid (page.cellGrid) sends "kind,layer,head,time" to
   page.cellClick (a hidden textbox): the server opens that head on the Attention tab. Each cell's customdata is
   [kind, layer, head, role], 1-based (viz.stats_grid). A new figure's element is hooked anew. */
(page, {send, eachPlot}) => {
  eachPlot(page.cellGrid, (gd) => {
    gd.on('plotly_click', (ev) => {
      const cd = ev.points && ev.points[0] && ev.points[0].customdata;
      if (Array.isArray(cd) && cd.length >= 3) send(page.cellClick, `${cd[0]},${cd[1]},${cd[2]},${Date.now()}`);
    });
  });
}

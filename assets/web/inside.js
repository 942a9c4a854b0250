/* Inside a head: a click on a row of the close-up (page.detail) sends "row,time" to page.rowClick (a hidden
   textbox): the server opens "Inside a head" on that query (the row's 0-based position: the close-up's rows sit at
   y = 0 … Q-1). A new figure's element is hooked anew. */
(page, {send, eachPlot}) => {
  eachPlot(page.detail, (gd) => {
    gd.on('plotly_click', (ev) => {
      const p = ev.points && ev.points.find((q) => q.data && q.data.type === 'heatmap');
      if (p && Number.isInteger(p.y)) send(page.rowClick, `${p.y},${Date.now()}`);
    });
  });
}

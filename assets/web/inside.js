/* Inside a head: a click on a row of the close-up (page.detail) sends "row,time" to page.rowClick (a hidden
   textbox): the server opens "Inside a head" on that query (the row's 0-based position: the close-up's rows sit at
   y = 0 … Q-1). A click on a row of a whole-matrix figure (page.matrixPlots; only traces whose meta is
   page.queryRows have the queries as rows) sends "row,time" to page.matrixRowClick: the one-query view opens on it.
   A new figure's element is hooked anew. */
(page, {send, eachPlot}) => {
  const onRow = (id, box, wanted) => eachPlot(id, (gd) => {
    gd.on('plotly_click', (ev) => {
      const p = ev.points && ev.points.find((q) => q.data && q.data.type === 'heatmap' && wanted(q.data));
      if (p && Number.isInteger(p.y)) send(box, `${p.y},${Date.now()}`);
    });
  });
  onRow(page.detail, page.rowClick, () => true);
  for (const id of page.matrixPlots) onRow(id, page.matrixRowClick, (data) => data.meta === page.queryRows);
}

/* Overview: a click on a tile picks its layer and head. Reads page.overview (the element id of the overview plot)
   and page.tileClick (a hidden textbox): the click sends "layer,head,time" there, the tile's layer and head read off
   its row and column labels (the shared layerOf / headOf). */
(page, {send, layerOf, headOf, eachPlot}) => {
  eachPlot(page.overview, (gd) => {
    gd.on('plotly_click', (ev) => {
      const p = ev.points && ev.points[0];
      const layer = p && layerOf.exec(String(p.y)), head = p && headOf.exec(String(p.x));
      if (layer && head) send(page.tileClick, `${layer[1]},${head[1]},${Date.now()}`);
    });
  });
}

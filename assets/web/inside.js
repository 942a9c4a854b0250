/* Inside a head: a click on a row of the close-up (page.detail) sends "row,time" to page.rowClick (a hidden
   textbox): the server opens "Inside a head" on that query (the row's 0-based position: the close-up's rows sit at
   y = 0 … Q-1). A click on a row of a whole-matrix figure (page.matrixPlots; only traces whose meta is
   page.queryRows have the queries as rows) sends "row,time" to page.matrixRowClick: the one-query view opens on it.
   A new figure's element is hooked anew.

   A new query: once a view is drawn, the server sends every query's figures of the head shown (viz.views.
   inside_matrices.held_queries: query 0's and each one's changes from it, up to HELD_QUERIES query tokens) into a
   hidden textbox, held here (window.attnInsideHold). A click on another query draws its figures from them before its
   call is sent (no round trip): at the radio's own input event while the panels shown are the view held, else in
   the query's js (window.attnInsideHeld) when they are for the view the call names. The
   call (show_query) still answers with the texts, and with the figures as JSON in a hidden textbox
   (window.attnInsideQuery): what equals the figure shown is not drawn again; without held figures (a long sentence,
   a view just changed) they are drawn from there. Either way, not as six new Plot values (Gradio would draw each from
   scratch in a new element, twice over: plotly grows the margins and draws again): each is drawn in the figure in
   its place (page.insidePlots), with only what changed (Plotly.update: the data, titles and sizes that differ), and
   tells the page it is drawn ('attn-drawn', as draw.js does). In presentation mode, or where the figure differs in
   its traces, it is drawn anew (Plotly.react). The Plot keeps its value: should Gradio draw that value again (its
   element made anew), the figure drawn in its place is drawn instead (draw.js's drawHooks); a new value of its own
   replaces it. The Why tab's run draws its figures the same way (shared.drawInPlace, page.livePlots: live.js). */
(page, shared) => {
  const {send, eachPlot, plotOf, drawHooks, applyChanges} = shared;
  const onRow = (id, box, wanted) => eachPlot(id, (gd) => {
    gd.on('plotly_click', (ev) => {
      const p = ev.points && ev.points.find((q) => q.data && q.data.type === 'heatmap' && wanted(q.data));
      if (p && Number.isInteger(p.y)) send(box, `${p.y},${Date.now()}`);
    });
  });
  onRow(page.detail, page.rowClick, () => true);
  for (const id of page.matrixPlots) onRow(id, page.matrixRowClick, (data) => data.meta === page.queryRows);

  // The figure as Gradio's Plot draws it (its Plot sets these before drawing; a figure with a title gets a top margin
  // of 100 px or more under the Plot's label, as every Plot here shows its label)
  const asPlotDraws = ({data, layout, config}) => {
    const margin = {...(layout.margin || {}), autoexpand: true};
    if (layout.title) margin.t = Math.max(100, margin.t || 0);
    return {data, config: {...(config || {}), responsive: true}, layout: {...layout, autosize: true, margin}};
  };
  const nameOf = (config) => ((config || {}).toImageButtonOptions || {}).filename;
  const held = new Map();  // a Plot's id -> {from: the name of the Plot's own figure, figure: the one drawn over it}
  // a Plot's id -> its figure as sent, as JSON (plotly writes into the data and layout it draws: axis ranges, arrays)
  const sentText = new Map();
  const differs = (a, b) => JSON.stringify(a) !== JSON.stringify(b);
  // Plotly.update's arguments from the figure shown to the next (same traces): null where it differs more
  const update = (shown, next) => {
    if (shown.data.length !== next.data.length || next.data.some((t, i) => t.type !== shown.data[i].type)) return null;
    const traces = {};
    const keys = new Set(next.data.flatMap(Object.keys).concat(shown.data.flatMap(Object.keys)));
    keys.delete('uid');  // (plotly's own)
    for (const key of keys) {
      if (next.data.some((t, i) => differs(t[key], shown.data[i][key]))) {
        traces[key] = next.data.map((t) => (t[key] === undefined ? null : t[key]));
      }
    }
    const layout = {};
    for (const key of new Set([...Object.keys(next.layout), ...Object.keys(shown.layout)])) {
      const [was, now] = [shown.layout[key], next.layout[key]];
      if (key === 'meta' || !differs(was, now)) continue;  // (meta: set in place, below)
      if (Array.isArray(was) && Array.isArray(now) && was.length === now.length) {  // annotations, shapes
        now.forEach((item, i) => {
          if (!differs(item, was[i])) return;
          const [a, b] = [{...was[i], text: null}, {...item, text: null}];
          if (differs(a, b)) layout[`${key}[${i}]`] = item; else layout[`${key}[${i}].text`] = item.text;
        });
      } else {
        layout[key] = now === undefined ? null : now;
      }
    }
    return [traces, layout];
  };
  const drawn = (gd) => gd.dispatchEvent(new CustomEvent('attn-drawn', {bubbles: true}));
  // Each figure (by its Plot's id) drawn in the figure shown, only what changed; resolves once all are drawn. A
  // figure equal to the one shown (drawn from what the page holds, then sent by the server) is not drawn again.
  // ``anew``: each drawn whole by Plotly.react instead (the Why tab's run: a new sentence changes nearly everything
  // of its three figures, and react's one pass took two thirds of the time of update's restyle and relayout there;
  // a new query of Inside a head changes little, and update is the faster there).
  const drawFigures = (figures, anew = false) => Promise.all(Object.entries(figures).map(([id, sent]) => {
    const gd = plotOf(id);
    if (!gd || !gd.attnSent) return null;  // not drawn yet: its Plot's own figure comes
    const next = asPlotDraws(sent);
    const from = held.has(id) ? held.get(id).from : nameOf(gd.attnSentConfig);
    held.set(id, {from, figure: next});
    const nextText = JSON.stringify({data: next.data, layout: next.layout});
    if (sentText.get(id) === nextText) return drawn(gd);
    // drawn now where it is near the view, else as it comes near or once the page is idle (draw.js): from what is
    // drawn then to the last figure sent
    return shared.drawWhenNear(gd, () => {
      const shown = sentText.get(id);
      sentText.set(id, nextText);
      if (shown === nextText) return drawn(gd);
      const changes = !anew && !gd.attnPresent && shown && update(JSON.parse(shown), next);
      if (!changes) return window.Plotly.react(gd, next.data, next.layout, next.config);  // (draw.js tells the page)
      Object.assign(gd, {attnSent: next.layout, attnSentData: next.data, attnSentConfig: next.config});
      // The figure's description (layout.meta: nothing plotly draws reads it, no text of ours being a %{meta}
      // template) is set in place, not relaid out (its editType is "plot": one more cause of a full replot).
      gd.layout.meta = next.layout.meta;
      if (gd._fullLayout) gd._fullLayout.meta = next.layout.meta;
      return window.Plotly.update(gd, ...changes).then(() => drawn(gd));
    });
  }));
  shared.drawInPlace = drawFigures;  // (the Why tab's run too: live.js)
  window.attnInsideQuery = (text) => {
    if (text) drawFigures(JSON.parse(text).figures);
  };
  // Every query's figures of the head shown (viz.views.inside_matrices.held_queries), held once the view is drawn:
  // a new query is drawn from them (the query's js, window.attnInsideHeld) before its call is sent, when they are
  // for the view the call names (view, kind, layer, head, factor); the call's answer brings the texts.
  let holding = null;
  // early: the panels shown are those of the view held, and no other choice has changed since they came
  let early = false;
  window.attnInsideHold = (text) => {
    holding = text ? JSON.parse(text) : null;
    early = Boolean(holding);
  };
  const drawHeld = async (h, q) => {
    try {
      await drawFigures(applyChanges(h.base, h.changes[q]));
    } catch (err) {
      console.warn('Inside a head: a held query not drawn', err);  // the call's answer draws it
    }
  };
  // A query chosen (a click, an arrow key: the radio's own input event) is drawn from what the page holds at once,
  // before Gradio's dispatch of the event (a frame and its work later, ~20 ms), while the panels shown are those
  // of the view held (early). The visitor's hand on any other choice of the tab (page.insideChoices: kind, layer,
  // head, factor, the view) ends that until the next view's panels come, and so does a figure of a Plot's own (a view
  // the server drew: a link's, a lecture stop's, the tab's opening); the query's js below still draws them, after its
  // check of the view, where this did not.
  const within = (target, ids) => Boolean(target && target.closest && ids.some((id) => target.closest(`#${id}`)));
  for (const type of ['pointerdown', 'keydown', 'input', 'change']) {
    document.addEventListener(type, (ev) => {
      if (within(ev.target, page.insideChoices)) early = false;
    }, true);
  }
  let drawnEarly = null;  // [the panels held, the query] drawn at the radio's input: the query's js has nothing to do
  document.addEventListener('input', ({target: radio}) => {
    if (!early || !holding || !within(radio, [page.views.inside.query]) || !radio.checked) return;
    const q = Number(radio.value);
    if (!Number.isInteger(q) || q < 0 || q >= holding.queries) return;
    drawnEarly = [holding, q];
    drawHeld(holding, q);
  }, true);
  window.attnInsideHeld = async (...inputs) => {
    const [, mode, kind, layer, head, query, factor] = inputs, h = holding, q = Number(query);
    const already = drawnEarly && drawnEarly[0] === h && drawnEarly[1] === q;
    drawnEarly = null;
    if (h && !already && Number.isInteger(q) && q >= 0 && q < h.queries
        && JSON.stringify(h.view) === JSON.stringify([mode, kind, layer, head, factor])) {
      await drawHeld(h, q);
    }
    return inputs;
  };
  drawHooks.push((gd, data, layout, config) => {
    const id = [...page.insidePlots, ...page.livePlots].find((plot) => gd.closest(`#${plot}`));
    if (!id) return null;
    const kept = held.get(id);
    if (kept && config === kept.figure.config) return null;  // the figure drawn over it, again (presentation mode)
    if (kept && nameOf(config) === kept.from) return kept.figure;  // the Plot's own figure again: the one over it
    held.delete(id);  // a new figure of the Plot's own
    if (page.insidePlots.includes(id)) early = false;
    sentText.set(id, JSON.stringify({data, layout}));
    return null;
  });
}

/* Alignment view (viz.lines; page.lines: its element id). Reads page.lineMeta and page.tokenMeta (the names of its
   traces' meta entries: viz.lines.LINE_META, TOKEN_META) and page.linesRequest (a hidden textbox).

   Hovering a token dot shows only that token's lines, leaving shows all again; a click pins a token's lines until the
   next click (on it, or a new figure). Line traces carry meta[page.lineMeta] = {q: [...], k: [...]} (one query and
   key index per segment), token dots meta[page.tokenMeta] = "q" | "k" and customdata = the token index. Plotly draws
   each segment of a line trace as its own path.js-line, in data order: the others are hidden in the SVG, no replot (a
   restyle of x and y took seconds at 60 × 60 tokens on a busy CPU). Every redraw (a new figure, a resize, a legend
   click) draws the focus again. Each new figure comes in a new element (draw.js), hooked as it appears.
   gd.dataset.attnFocus says which token is shown ("q:3", "").

   Drawn only when on screen (it is below the fold, and its many traces cost a busy page hundreds of ms): the app calls
   window.attnLinesStale() after a run or a new choice; the view is then asked for (page.linesRequest) at once if it is
   on screen, else when it comes within 300 px of it (in the lecture: once it is in sight). */
(page, {send, onChange, eachPlot}) => {
  eachPlot(page.lines, (gd) => {
    let focus = null, pinned = false;  // focus: {side, index, key, data} or null = every line
    const draw = () => {
      if (!focus && !gd.dataset.attnFocus) return;  // every line shown already
      gd.querySelectorAll('.scatterlayer .trace').forEach((g) => {
        // a drawn trace's own data: plotly's public API has no map from a drawn path to its trace, its d3 data has
        const trace = g.__data__ && g.__data__[0] && g.__data__[0].trace;
        const m = trace && trace.meta && trace.meta[page.lineMeta];
        const paths = g.querySelectorAll('path.js-line');
        if (!m || paths.length !== m.q.length) return;
        paths.forEach((path, s) => {
          const keep = !focus || (focus.side === 'q' ? m.q[s] : m.k[s]) === focus.index;
          path.style.display = keep ? '' : 'none';
        });
      });
      gd.dataset.attnFocus = focus ? focus.key : '';
    };
    const set = (t) => { focus = t && {...t, data: gd.data}; draw(); };
    const token = (ev) => {
      const p = ev.points && ev.points[0];
      const side = p && p.data.meta && p.data.meta[page.tokenMeta];
      return side ? {side, index: p.customdata, key: `${side}:${p.customdata}`} : null;
    };
    gd.on('plotly_afterplot', () => {
      if (focus && focus.data !== gd.data) { focus = null; pinned = false; }  // a new figure: every line
      draw();
    });
    gd.on('plotly_hover', (ev) => { const t = token(ev); if (t && !pinned) set(t); });
    gd.on('plotly_unhover', () => { if (!pinned) set(null); });
    gd.on('plotly_click', (ev) => {
      const t = token(ev);
      if (!t) return;
      pinned = !(pinned && focus && focus.key === t.key);
      set(pinned ? t : null);
    });
  });

  let linesStale = false, linesSeen = false, linesEl = null, linesAsked = 0;
  // In the lecture only once it is in sight above the caption bar (a stop scrolls its own figure into view: the
  // view just under it would cost each stop a round trip and its lines drawn, while the next stop waits)
  const inSight = () => {
    if (!document.body.classList.contains('attn-lecture')) return true;
    const el = document.getElementById(page.lines), bar = document.getElementById('lecture-bar');
    const r = el ? el.getBoundingClientRect() : null;
    const room = innerHeight - (bar ? bar.getBoundingClientRect().height : 0);
    return !!r && r.height > 0 && r.top < room && r.bottom > 0;
  };
  const requestLines = () => {
    if (!linesStale || !linesSeen || !inSight()) return;
    linesStale = false;
    linesAsked += 1;  // every request a new value (a change), even two in one millisecond
    send(page.linesRequest, `${linesAsked},${Date.now()}`);
  };
  window.attnLinesStale = () => { linesStale = true; requestLines(); };
  const linesSight = new IntersectionObserver((entries) => {
    linesSeen = entries[entries.length - 1].isIntersecting;
    requestLines();
  }, {rootMargin: '300px'});
  window.addEventListener('scroll', () => { if (linesStale && linesSeen) requestLines(); }, {passive: true});
  onChange(() => {
    const el = document.getElementById(page.lines);
    if (el && el !== linesEl) {
      if (linesEl) linesSight.unobserve(linesEl);
      linesEl = el;
      linesSight.observe(el);
    }
  });
}

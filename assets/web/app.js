/* The page script of app.py (Gradio runs it once the page has loaded: launch(js=...)).

   app.py calls this function with the page contract, written once in Python (app.PAGE):
     page.overview, page.figure1       element ids of the overview plot and of Figure 1
     page.tileClick, page.blockClick   element ids of two hidden textboxes this script writes to
     page.layerLabel, page.headLabel   regular expressions that read the layer and the head (1-based)
                                       from an overview cell's row and column labels (viz.heatmaps)
     page.lines                        element id of the alignment view (viz.lines)
     page.lineMeta, page.tokenMeta     names of its traces' meta entries (viz.lines.LINE_META, TOKEN_META)
     page.linesRequest                 element id of a hidden textbox: the alignment view is on screen, draw it
     page.stepPrev, page.stepNext      element ids of the Decoding tab's Previous and Next buttons
     page.rowClick                     element id of a hidden textbox: a click on a row of the close-up
                                       (page.detail) sends "row,time" there ("Inside a head" opens)
     page.cellGrid, page.cellClick     Head analysis: element id of the statistics grid, and of a hidden textbox
                                       a click on a grid cell sends "kind,layer,head,time" to (the head opens)
     page.view                         query parameter -> element id of each control that holds the view
                                       (the URL keeps the view: viz.views.share), page.detail the close-up,
                                       page.copyLink the Copy link button
   Messages: a click on an overview tile (or an arrow key on the focused close-up) sends "layer,head,time"
   to page.tileClick; a click (or Enter,
   or Space) on an attention block of Figure 1 sends "kind|time" to page.blockClick. The time makes
   every message new, so that a second click on the same tile is a change too. */
(page) => {
  // Tell a hidden Gradio textbox something: its .change listener does the rest.
  const send = (id, value) => {
    const box = document.querySelector(`#${id} textarea, #${id} input`);
    if (!box) return;
    box.value = value;
    box.dispatchEvent(new Event('input', {bubbles: true}));
  };

  // Every figure drawn once, not twice. Gradio's Plot hands a new figure to its plotly element (Plotly.react), then
  // replaces that element with a new one ({#key} on the figure) and draws the figure again there: the overview was
  // drawn twice per run (~60 ms of a ~200 ms click on a 2-core machine). Plotly is wrapped once it is loaded (Gradio
  // loads it with the first plot and sets window.Plotly): a draw waits one microtask, by when Svelte has swapped the
  // elements (in the same task: no moment without a plot element), and is skipped if its element has left the page. A drawn figure
  // tells the page with a bubbling 'attn-drawn' event on its element (the benchmark waits for it).
  //
  // A figure whose margins the server worked out (viz.margins: layout.meta.margins, the overview and the close-up)
  // is drawn once: its column labels' angle for the plot's width (flat, slanted, upright: the first whose columns
  // fit), those margins, and margin.autoexpand off (Gradio turns it on; then plotly draws, measures the labels,
  // grows the margins and draws again). A plot whose width changes (a resize) gets its angle and margins again;
  // a plot in a hidden tab (no width) keeps them.
  const fitMargins = (gd, layout) => {
    const m = layout && layout.meta && layout.meta.margins;
    if (!m || !Array.isArray(m.angles) || !m.angles.length) return false;
    const width = gd.clientWidth, top = (layout.margin || {}).t || 0;
    const height = layout.height || (gd._fullLayout || {}).height || 0;  // (plotly's resize drops layout.height)
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
    if (!gd.clientWidth || !gd._fullLayout || !gd.layout) return;
    const layout = {...gd.layout};
    const was = JSON.stringify([layout.margin, (layout.xaxis || {}).tickangle]);
    if (!fitMargins(gd, layout)) return;
    const now = [layout.margin, (layout.xaxis || {}).tickangle];
    if (JSON.stringify(now) !== was) window.Plotly.relayout(gd, {margin: now[0], 'xaxis.tickangle': now[1]});
  }));
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
  let plotlyLoaded = deferDraws(window.Plotly);
  Object.defineProperty(window, 'Plotly', {configurable: true, get: () => plotlyLoaded,
                                           set: (p) => { plotlyLoaded = deferDraws(p); }});

  // Client-side downloads of a plot as PNG or SVG, through plotly's own camera button (the Export buttons).
  window.attnDownload = (id, format) => {
    const gd = document.querySelector(`#${id} .js-plotly-plot`);
    const btn = gd && gd.querySelector('.modebar-btn[data-title^="Download plot"]');
    if (!btn) return;
    const old = gd._context.toImageButtonOptions;
    gd._context.toImageButtonOptions = {...old, format: format};
    btn.dispatchEvent(new MouseEvent('click', {bubbles: true}));
    gd._context.toImageButtonOptions = old;
  };

  // Overview: a click on a tile picks its layer and head. Gradio draws the plot late, and anew: hook it when it appears.
  const layerOf = new RegExp(page.layerLabel), headOf = new RegExp(page.headLabel);
  const hook = () => {
    const gd = document.querySelector(`#${page.overview} .js-plotly-plot`);
    if (gd && gd.on && !gd.attnHooked) {
      gd.attnHooked = true;
      gd.on('plotly_click', (ev) => {
        const p = ev.points && ev.points[0];
        const layer = p && layerOf.exec(String(p.y)), head = p && headOf.exec(String(p.x));
        if (layer && head) send(page.tileClick, `${layer[1]},${head[1]},${Date.now()}`);
      });
    }
  };
  new MutationObserver(hook).observe(document.body, {childList: true, subtree: true});

  // Figure 1: an attention block opens its heatmaps. Listened for on the document, so redraws need no new hook.
  const block = (ev) => ev.target.closest && ev.target.closest(`#${page.figure1} [data-attention]`);
  document.addEventListener('click', (ev) => {
    const b = block(ev);
    if (b) send(page.blockClick, `${b.dataset.attention}|${Date.now()}`);
  });
  document.addEventListener('keydown', (ev) => {
    const b = (ev.key === 'Enter' || ev.key === ' ') && block(ev);
    if (!b) return;
    ev.preventDefault();
    send(page.blockClick, `${b.dataset.attention}|${Date.now()}`);
  });

  // Alignment view (viz.lines): hovering a token dot shows only that token's lines, leaving shows all again; a
  // click pins a token's lines until the next click (on it, or a new figure). Line traces carry meta[page.lineMeta]
  // = {q: [...], k: [...]} (one query and key index per segment), token dots meta[page.tokenMeta] = "q" | "k" and
  // customdata = the token index. Plotly draws each segment of a line trace as its own path.js-line, in data
  // order: the others are hidden in the SVG, no replot (a restyle of x and y took seconds at 60 × 60 tokens on a
  // busy CPU). Every redraw (a new figure, a resize, a legend click) draws the focus again. Each new figure comes in a
  // new element (see deferDraws), hooked as it appears. gd.dataset.attnFocus says which token is shown ("q:3", "").
  const linesHook = (gd) => {
    if (!gd || !gd.on || gd.attnLinesHooked) return;
    gd.attnLinesHooked = true;
    let focus = null, pinned = false;  // focus: {side, index, key, data} or null = every line
    const draw = () => {
      if (!focus && !gd.dataset.attnFocus) return;  // every line shown already
      gd.querySelectorAll('.scatterlayer .trace').forEach((g) => {
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
  };
  // Drawn only when on screen (it is below the fold, and its many traces cost a busy page hundreds of ms): app.py
  // calls attnLinesStale() after a run or a new choice; the view is then asked for (page.linesRequest) at once if it is
  // on screen, else when it comes within 300 px of it.
  let linesStale = false, linesSeen = false, linesEl = null, linesAsked = 0;
  const requestLines = () => {
    if (!linesStale || !linesSeen) return;
    linesStale = false;
    linesAsked += 1;  // every request a new value (a change), even two in one millisecond
    send(page.linesRequest, `${linesAsked},${Date.now()}`);
  };
  window.attnLinesStale = () => { linesStale = true; requestLines(); };
  const linesSight = new IntersectionObserver((entries) => {
    linesSeen = entries[entries.length - 1].isIntersecting;
    requestLines();
  }, {rootMargin: '300px'});
  new MutationObserver(() => {
    linesHook(document.querySelector(`#${page.lines} .js-plotly-plot`));
    const el = document.getElementById(page.lines);
    if (el && el !== linesEl) {
      if (linesEl) linesSight.unobserve(linesEl);
      linesEl = el;
      linesSight.observe(el);
    }
  }).observe(document.body, {childList: true, subtree: true});

  // Decoding tab: the left and right arrow keys press Previous and Next, unless focus is in a field (a slider or a
  // radio keeps its own arrow keys) and only while the tab is shown.
  document.addEventListener('keydown', (ev) => {
    if ((ev.key !== 'ArrowLeft' && ev.key !== 'ArrowRight') || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    if (ev.target && ev.target.closest && ev.target.closest('input, textarea, select, [contenteditable="true"]')) return;
    const btn = document.getElementById(ev.key === 'ArrowLeft' ? page.stepPrev : page.stepNext);
    if (!btn || btn.offsetParent === null) return;
    ev.preventDefault();
    btn.click();
  });

  // ---- Made for the classroom (issue #19; app.PAGE: page.view, page.detail, page.copyLink) ----------------------
  // The view lives in the URL: page.view maps each query parameter to the element that holds its value (the server
  // reads them back when a link is opened: viz.views.share). Written only once the first view has been drawn, so an
  // opened link is read before it is rewritten; other parameters (Gradio's __theme) are kept.
  const viewValue = (id) => {
    const root = document.getElementById(id);
    if (!root) return null;
    const radio = root.querySelector('input[type=radio]:checked');
    if (radio) return radio.value;
    const check = root.querySelector('input[type=checkbox]');
    if (check) return check.checked ? '1' : '';
    const box = root.querySelector('textarea, input[type=number], input[type=text], input:not([type])');
    return box ? box.value : null;
  };
  const drawn = (id) => {
    const gd = document.querySelector(`#${id} .js-plotly-plot`);
    return !!(gd && gd.data && gd.data.length);
  };
  let lastQuery = null;
  const syncView = () => {
    document.body.classList.toggle('attn-present', viewValue(page.view.present) === '1');
    if (!drawn(page.detail)) return;
    const query = new URLSearchParams(location.search);
    for (const [param, id] of Object.entries(page.view)) {
      const v = viewValue(id);
      if (v === null) continue;
      if (v.trim() === '') query.delete(param); else query.set(param, v);
    }
    const tab = document.querySelector('[role=tablist] [role=tab][aria-selected=true][data-tab-id]');
    if (tab) query.set('tab', tab.dataset.tabId);
    const text = query.toString();
    if (text !== lastQuery) {
      lastQuery = text;
      history.replaceState(history.state, '', `${location.pathname}?${text}`);
    }
    frameTile();
    focusableDetail();
  };
  setInterval(syncView, 300);
  for (const type of ['input', 'change', 'click', 'keyup']) document.addEventListener(type, () => setTimeout(syncView, 0));

  // Copy link: the URL (kept up to date above) to the clipboard; where the browser refuses, say where the link is.
  const copyText = async (text) => {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch (e) { /* not allowed here (plain http, no permission): the old way below */ }
    const area = document.createElement('textarea');
    area.value = text;
    area.setAttribute('readonly', '');
    area.style.cssText = 'position:fixed;top:0;left:0;opacity:0';
    document.body.appendChild(area);
    area.select();
    let ok = false;
    try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
    area.remove();
    return ok;
  };
  window.attnCopyLink = async () => {
    syncView();
    const button = document.getElementById(page.copyLink);
    const ok = await copyText(location.href);
    if (button) button.focus();
    let note = document.getElementById(`${page.copyLink}-note`);
    if (!note && button) {
      note = document.createElement('span');
      note.id = `${page.copyLink}-note`;
      note.setAttribute('role', 'status');
      button.insertAdjacentElement('afterend', note);
    }
    if (note) note.textContent = ok ? 'Link copied.' : 'Copy the link from the address bar.';
  };

  // The chosen tile framed in the overview: the rows of its layer and the columns of its head (all heads for the mean),
  // found from the overview's own row and column labels.
  const span = (labels, pattern, n) => {
    let lo = -1, hi = -1;
    Array.from(labels || []).forEach((label, i) => {
      const m = pattern.exec(String(label));
      if (m && (n === 0 || Number(m[1]) === n)) { if (lo < 0) lo = i; hi = i; }
    });
    return [lo, hi];
  };
  const frameTile = () => {
    const gd = document.querySelector(`#${page.overview} .js-plotly-plot`);
    const t = gd && gd.data && gd.data.find((d) => d.type === 'heatmap');
    if (!t || !window.Plotly || !gd.layout) return;
    const layer = Number(viewValue(page.view.layer)), head = Number(viewValue(page.view.head));
    const [y0, y1] = span(t.y, layerOf, layer), [x0, x1] = span(t.x, headOf, head);
    if (y0 < 0 || x0 < 0) return;
    const box = [x0 - 0.5, x1 + 0.5, y0 - 0.5, y1 + 0.5];
    const shapes = gd.layout.shapes || [];
    const old = shapes.find((s) => s.name === 'chosen-tile');
    if (old && JSON.stringify([old.x0, old.x1, old.y0, old.y1]) === JSON.stringify(box)) return;
    const frame = {type: 'rect', name: 'chosen-tile', xref: 'x', yref: 'y', x0: box[0], x1: box[1], y0: box[2],
                   y1: box[3], line: {color: '#ff2d55', width: 3}, fillcolor: 'rgba(0,0,0,0)', layer: 'above'};
    window.Plotly.relayout(gd, {shapes: [...shapes.filter((s) => s.name !== 'chosen-tile'), frame]});
  };

  // The close-up takes the keyboard focus; then ←/→ change the head (0 = mean) and ↑/↓ the layer, by the same message
  // a tile click sends. Several quick presses add up: the last choice sent counts until the page shows it.
  const focusableDetail = () => {
    const el = document.getElementById(page.detail);
    if (el && el.tabIndex !== 0) {
      el.tabIndex = 0;
      el.setAttribute('role', 'group');
      el.setAttribute('aria-label', 'Close-up of one head: left and right arrows change the head, up and down the layer');
    }
  };
  let sent = null;
  document.addEventListener('keydown', (ev) => {
    const el = document.getElementById(page.detail);
    const move = {ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0]}[ev.key];
    if (!el || document.activeElement !== el || !move || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    ev.preventDefault();
    const nLayers = Number(document.querySelector(`#${page.view.layer} input[type=range]`)?.max || 1);
    const nHeads = document.querySelectorAll(`#${page.view.head} input[type=radio]`).length - 1;
    const shown = [Number(viewValue(page.view.layer)), Number(viewValue(page.view.head))];
    const base = sent && Date.now() - sent.at < 2000 && (sent.layer !== shown[0] || sent.head !== shown[1])
      ? [sent.layer, sent.head] : shown;
    const layer = Math.min(Math.max(base[0] + move[0], 1), nLayers);
    const head = Math.min(Math.max(base[1] + move[1], 0), nHeads);
    sent = {layer, head, at: Date.now()};
    send(page.tileClick, `${layer},${head},${Date.now()}`);
  });

  // ---- Inside a head (issue #13; app.PAGE: page.detail, page.rowClick) ----------------------------------------
  // A click on a row of the close-up sends "row,time" to page.rowClick: the server opens "Inside a head" on that
  // query (the row's 0-based position: the close-up's rows sit at y = 0 … Q-1). A new figure's element is hooked anew.
  const rowHook = (gd) => {
    if (!gd || !gd.on || gd.attnRowHooked) return;
    gd.attnRowHooked = true;
    gd.on('plotly_click', (ev) => {
      const p = ev.points && ev.points.find((q) => q.data && q.data.type === 'heatmap');
      if (p && Number.isInteger(p.y)) send(page.rowClick, `${p.y},${Date.now()}`);
    });
  };
  new MutationObserver(() => rowHook(document.querySelector(`#${page.detail} .js-plotly-plot`)))
    .observe(document.body, {childList: true, subtree: true});

  // ---- Exports that carry their context (issue #20) ---------------------------------------------------------------
  // A plot saved as PNG or SVG (the Export buttons, or plotly's own camera button) is drawn from an export layout:
  // an opaque white background and dark text, and what the figure's layout.meta.export adds (viz.views.context):
  // its title (the sentence, the kind, layer and head) and, with categoryTicks, the overview's tokens as tick labels
  // (read off its row and column labels "L1 query 3: Hunde" -> "Hunde", tiles by page.layerLabel / page.headLabel),
  // drawn on a canvas large enough for one legible label per cell (exportCell px, at most exportMax px wide).
  // plotly copies gd.layout and its export options the moment the download starts: the page's own come back at once.
  const exportCell = 16, exportMax = 3200;
  const tokenTicks = (axis, labels, pattern) => {
    const vals = Array.from(labels || []).filter((l) => pattern.test(String(l)));
    return {...axis, showticklabels: true, tickmode: 'array', tickvals: vals, automargin: true, tickfont: {size: 10},
            ticktext: vals.map((l) => { const i = String(l).indexOf(': '); return i < 0 ? '' : String(l).slice(i + 2); })};
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
        Array.from(labels).forEach((l, i) => { const m = pattern.exec(String(l)); if (m && !at.has(m[1])) at.set(m[1], i); });
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
    const own = gd.layout, exported = exportLayout(gd);
    const ownOptions = gd._context.toImageButtonOptions, meta = (own.meta && own.meta.export) || {};
    const options = {...ownOptions, ...(meta.categoryTicks ? exportSize(gd) : {})};
    gd.layout = exported;  // read by plotly's own click handler, which runs after this capturing one
    gd._context.toImageButtonOptions = options;
    setTimeout(() => {
      if (gd.layout === exported) gd.layout = own;
      if (gd._context.toImageButtonOptions === options) gd._context.toImageButtonOptions = ownOptions;
    }, 0);
  }, true);

  // ---- Head analysis (issue #15; app.PAGE: page.cellGrid, page.cellClick) ---------------------------------------
  // A click on a cell of the statistics grid sends "kind,layer,head,time" to page.cellClick: the server opens that
  // head on the Attention tab. Each cell's customdata is [kind, layer, head, role], 1-based (viz.views.head_analysis).
  const cellHook = (gd) => {
    if (!gd || !gd.on || gd.attnCellHooked) return;
    gd.attnCellHooked = true;
    gd.on('plotly_click', (ev) => {
      const cd = ev.points && ev.points[0] && ev.points[0].customdata;
      if (Array.isArray(cd) && cd.length >= 3) send(page.cellClick, `${cd[0]},${cd[1]},${cd[2]},${Date.now()}`);
    });
  };
  new MutationObserver(() => cellHook(document.querySelector(`#${page.cellGrid} .js-plotly-plot`)))
    .observe(document.body, {childList: true, subtree: true});
}

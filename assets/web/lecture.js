/* The lecture (viz.views.lecture): ?lecture=1&stop=N. The server opens the stop's view as it opens any link and
   writes the caption bar (page.lecture: its element id) with the stop's data: its number, the sentence its mark was
   computed on, the mark and an action. This file puts the "Lecture" entry beside the page's title, draws the mark,
   does the action, fits a figure drawn for a phone or a narrower column to the screen (its texts as large), scrolls
   the figure into view above the bar, and moves between stops.

   Moving happens in place, like a slide: Back / Next (and the keys) push the next stop's URL on the browser's history
   (its link still opens it directly; the browser's Back / Forward move too) and send its query to the server
   (the hidden box lecture-go), which opens its view as a page load would (viz/ui/tabs/attention.py) and writes its
   caption. No page load, so no answer on its way is ever cut. The previous stop stays on screen until the next one
   is drawn (its mark placed), then the page swaps at once (a view transition, where the browser has them; held
   HOLD_MS at most). The sentence shown goes along (the URL's text, kept by classroom.js), so the visitor's own
   sentence replaces the example on every stop and the marks are computed for it.
   window.attnLectureMoves: each move's stop and milliseconds from the key to the stop drawn (bench/lecture.py).

   Keys: PageDown / PageUp (what a presenter's clicker sends) always move. → / ← move too, except where the arrows
   already mean something: in a field (a textbox, a slider, a radio), on the Decoding tab (its arrows step the
   decoder: decoding.js) and on the close-up while it has the focus (its arrows change the head and the layer:
   classroom.js).

   The mark: a figure's cell, row, bar or points of its lines as a plotly shape named lecture-mark (drawn again on
   each new figure), an SVG block of Figures 1–2 outlined (class lecture-mark), or the overview's chosen-tile frame
   (classroom.js draws it).
   window.attnLectureMark() gives the mark's box on screen, window.attnLectureFrame() the box of what must be on screen
   with it (the figure, or the mark's frame) (tests). */
(page, shared) => {
  const {send, plotOf, onChange, drawParked, drawNear, drawHooks} = shared;
  const bar = () => document.getElementById('lecture-bar');
  const data = () => {
    const el = bar();
    try { return el ? JSON.parse(el.dataset.lecture) : null; } catch (e) { return null; }
  };
  const params = () => new URLSearchParams(location.search);
  const urlOf = (n) => {
    const now = params(), next = new URLSearchParams({lecture: '1', stop: String(n)});
    for (const keep of ['text', 'target', '__theme']) if (now.get(keep)) next.set(keep, now.get(keep));
    return `${location.pathname}?${next}`;
  };
  // A move: the stop's URL, its query to the server; the stop on its way (``target``) until its caption comes.
  const HOLD_MS = 3000;
  let target = null, release = null;
  const moves = window.attnLectureMoves = [];
  const open = (n) => {
    target = {stop: n, since: performance.now()};
    if (release) release();
    if (document.startViewTransition) {  // the stop shown kept on screen until the next one is drawn
      const swap = document.startViewTransition(() => new Promise((done) => {
        release = () => { release = null; done(); };
        setTimeout(() => { if (release) release(); }, HOLD_MS);
      }));
      // (a key pressed again before the swap skips this one for the next: said by rejecting its promises)
      for (const said of [swap.ready, swap.finished, swap.updateCallbackDone]) said.catch(() => {});
    }
    send('lecture-go', `${new URL(urlOf(n), location.href).search}&at=${Date.now()}`);
  };
  const go = (step) => {
    const d = data();
    if (!d) return false;
    const n = (target ? target.stop : d.stop) + step;  // keys pressed fast: from the stop on its way
    if (n < 1 || n > d.stops) return false;
    history[step ? 'pushState' : 'replaceState'](history.state, '', urlOf(n));  // (0: this stop again)
    open(n);
    return true;
  };
  window.addEventListener('popstate', () => {  // the browser's Back / Forward between the stops' URLs
    const n = Number(params().get('stop'));
    if (params().get('lecture') === '1' && n >= 1 && bar()) open(n);
  });

  // The entry: beside the page's title (Gradio places its block after the tabs); gone during the lecture.
  const placeEntry = () => {
    const entry = document.getElementById('lecture-entry'), header = document.getElementById('header');
    if (entry && header && entry.parentElement !== header) header.appendChild(entry);
    if (entry) entry.hidden = params().get('lecture') === '1';
  };

  document.addEventListener('click', (ev) => {
    const id = ev.target && ev.target.closest && ev.target.closest('#lecture-back, #lecture-next, #lecture-again');
    if (id) { ev.preventDefault(); go({'lecture-next': 1, 'lecture-back': -1}[id.id] || 0); }
  });
  document.addEventListener('keydown', (ev) => {
    if (!bar() || ev.altKey || ev.ctrlKey || ev.metaKey || ev.defaultPrevented) return;
    let step = {PageDown: 1, PageUp: -1}[ev.key];
    if (!step && (ev.key === 'ArrowRight' || ev.key === 'ArrowLeft')) {
      const field = 'input, textarea, select, [contenteditable="true"], [role=slider], [role=radio]';
      const tab = document.querySelector('[role=tablist] [role=tab][aria-selected=true][data-tab-id]');
      const inField = ev.target && ev.target.closest && ev.target.closest(field);
      const onCloseUp = document.activeElement === document.getElementById(page.detail);
      if (!inField && !onCloseUp && !(tab && tab.dataset.tabId === 'decoding')) step = ev.key === 'ArrowRight' ? 1 : -1;
    }
    if (step) { ev.preventDefault(); go(step); }
  });

  // The mark as a plotly shape on trace coordinates (a category axis counts its categories from 0).
  const shapeOf = (gd, m) => {
    const traces = gd._fullData || gd.data || [];  // (plotly's own copy: typed arrays decoded, axes named)
    let t;
    if (m.points) t = traces[m.points[0][0]];
    else if (m.trace !== undefined) t = traces[m.trace];
    else if (m.kind) t = traces.find((d) => d.type === 'heatmap' && d.customdata && d.customdata[0]
                                      && d.customdata[0][0] && d.customdata[0][0][0] === m.kind);
    else t = traces.find((d) => d.type === 'heatmap');
    if (!t) return null;
    const xa = (t.xaxis || 'x'), ya = (t.yaxis || 'y');
    const at = (values, i) => (values && typeof values[i] === 'number' ? values[i] : i);
    const frame = {type: 'rect', name: 'lecture-mark', layer: 'above', fillcolor: 'rgba(0,0,0,0)',
                   line: {color: '#ff2d55', width: 4}, xref: xa, yref: ya};
    if (m.points) {  // points of line traces (on the first one's axes), framed together with a little room around
      const xs = [], ys = [];
      for (const [i, p] of m.points) {
        const line = traces[i];
        if (!line || !line.x || !line.y || p >= line.x.length) return null;
        xs.push(line.x[p]); ys.push(line.y[p]);
      }
      // (kept inside the axes' ranges: plotly clips a shape at the plot's edge, where a run's last point lies)
      const fl = gd._fullLayout || {}, fit = (axis, lo, hi, pad) => {
        const ax = fl[axis.replace(/^([xy])/, '$1axis')] || {};
        if (!ax.range || ax.type === 'log') return [lo, hi];
        const [a, b] = [Math.min(...ax.range), Math.max(...ax.range)], d = pad * (b - a), edge = 0.004 * (b - a);
        return [Math.max(lo - d, a + edge), Math.min(hi + d, b - edge)];
      };
      const [x0, x1] = fit(xa, Math.min(...xs), Math.max(...xs), 0.03);
      const [y0, y1] = fit(ya, Math.min(...ys), Math.max(...ys), 0.06);
      return {...frame, x0, x1, y0, y1};
    }
    if (t.type === 'heatmap') {
      const cols = t.z && t.z[0] ? t.z[0].length : 0;
      const x = m.col === undefined ? [-0.5, cols - 0.5] : [at(t.x, m.col) - 0.5, at(t.x, m.col) + 0.5];
      return {...frame, x0: x[0], x1: x[1], y0: at(t.y, m.row) - 0.5, y1: at(t.y, m.row) + 0.5};
    }
    const x = at(t.x, m.col);  // a bar: its whole column
    return {...frame, x0: x - 0.5, x1: x + 0.5, yref: `${ya} domain`, y0: 0, y1: 1};
  };
  const markPlot = (m) => {
    const gd = plotOf(m.plot);
    if (!gd || !gd.data || !gd.data.length || !gd.layout || !window.Plotly) return false;
    const shapes = gd.layout.shapes || [];
    if (shapes.some((s) => s.name === 'lecture-mark')) return true;
    const shape = shapeOf(gd, m);
    if (!shape) return false;
    window.Plotly.relayout(gd, {shapes: [...shapes, shape]});
    return true;
  };
  // A figure of bands one under another (Inside a head's, laid out for a phone: each band its own axes x_i, y_i and a
  // title in the strip above it) taller than the screen above the bar (mark.columns): its bands drawn that many a row
  // (the titles go along: they are placed on their band's axes), all as tall, the strips above them kept, and the
  // bands as short as the screen needs (no shorter than MIN_BAND px): the whole figure on screen, its texts as large.
  const MIN_BAND = 80, MIN_COLUMN = 480;
  const fitFigure = (m) => {
    if (!m.columns) return true;
    const gd = plotOf(m.plot), fl = gd && gd._fullLayout;  // (plotly's drawn layout: the plot area's pixels)
    if (!gd || !gd.layout || !fl || !fl._size || !window.Plotly) return false;
    if (gd.attnLectureFit === gd.layout) return true;  // fitted (a figure drawn again has a new layout)
    const b = bar(), block = document.getElementById(m.plot);
    const room = innerHeight - (b ? b.getBoundingClientRect().height : 0) - 24
      - (block.getBoundingClientRect().height - gd.getBoundingClientRect().height);  // less the figure's label
    const plot = fl._size.h, fixed = fl.height - plot, key = (axis, i) => `${axis}axis${i > 1 ? i : ''}`;
    const bands = [];
    for (let i = 1; fl[key('y', i)] && fl[key('x', i)]; i++) bands.push({i, domain: fl[key('y', i)].domain});
    if (!bands.length) return true;
    bands.sort((p, q) => q.domain[1] - p.domain[1]);  // top to bottom, each with the strip above it
    let above = 1;
    for (const band of bands) {
      band.gap = (above - band.domain[1]) * plot;
      band.px = (band.domain[1] - band.domain[0]) * plot;
      above = band.domain[0];
    }
    // (a column no narrower than the phone the figure was laid out for, drawn at the presentation's scale)
    const cols = Math.max(1, Math.min(m.columns, bands.length, Math.floor(fl._size.w / MIN_COLUMN))), rows = [];
    for (let r = 0; r * cols < bands.length; r++) rows.push(bands.slice(r * cols, (r + 1) * cols));
    const gaps = rows.map((row) => Math.max(...row.map((band) => band.gap)));
    const strips = gaps.reduce((s, g) => s + g, 0), tallest = Math.max(...bands.map((band) => band.px));
    const px = Math.max(MIN_BAND, Math.min(tallest, (room - fixed - strips) / rows.length));
    const total = strips + px * rows.length;
    const update = {height: Math.round(fixed + total)};
    const gap = Math.min(0.1, 72 / Math.max(1, fl._size.w));  // between columns: the right band's y tick labels
    const width = (1 - gap * (cols - 1)) / cols;
    let y = 0;
    rows.forEach((row, r) => {
      y += gaps[r];
      row.forEach((band, c) => {
        update[`${key('y', band.i)}.domain`] = [1 - (y + px) / total, 1 - y / total];
        if (cols > 1) update[`${key('x', band.i)}.domain`] = [c * (width + gap), c * (width + gap) + width];
        if (r === rows.length - 1) update[`${key('x', band.i)}.showticklabels`] = true;  // the keys under each column
      });
      y += px;
    });
    if (cols > 1) {  // a shape over a whole column of bands (Inside a head's query key): over every column
      const shapes = gd.layout.shapes || [];
      const whole = shapes.filter((s) => s.yref === 'paper' && s.xref === 'x' && s.name !== 'lecture-mark');
      const copies = whole.flatMap((s) => rows[0].slice(1).map((band) => ({...s, xref: `x${band.i}`})));
      if (copies.length) update.shapes = [...shapes, ...copies];
    }
    window.Plotly.relayout(gd, update);
    gd.attnLectureFit = gd.layout;
    return true;
  };
  // A figure drawn narrower in the lecture than its tab draws it (Equation (1)'s four maps a row: app.css): a title
  // that runs past its right edge moved left, no further than the figure's left edge; slanted column labels too close
  // to each other for their size upright; too close even so (a long sentence), the maps two a row again (app.css).
  const fitNarrow = (m) => {
    const frame = m.frame ? [...document.querySelectorAll(m.frame)] : [];
    const figures = new Set([plotOf(m.plot), ...frame.flatMap((el) => [...el.querySelectorAll('.js-plotly-plot')])]);
    figures.delete(null);  // (Figures 1 and 2 are SVG)
    // first the layout (four maps a row, or two): the figures are fitted once it is settled, at the size it gives
    const dense = [...figures].some((gd) => {
      const x = gd._fullLayout && gd._fullLayout.xaxis, size = gd._fullLayout && gd._fullLayout._size;
      const n = x && x.showticklabels && x.tickfont && x.tickvals ? x.tickvals.length : 0;
      return n && size && size.w / n < x.tickfont.size && gd.closest('#in-m-stages');
    });
    if (dense && !document.body.classList.contains('attn-lecture-wide-maps')) {
      document.body.classList.add('attn-lecture-wide-maps');
      return false;  // (fitted after the figures are drawn at their new size)
    }
    let done = true;
    for (const gd of figures) {
      const fl = gd._fullLayout;
      if (!gd.layout || !fl || !fl._size || !window.Plotly) { done = false; continue; }
      if (gd.attnLectureNarrow === gd.layout) continue;
      const box = gd.getBoundingClientRect(), update = {}, w = fl._size.w;
      (gd.layout.annotations || []).forEach((a, i) => {
        const el = gd.querySelector(`.infolayer .annotation[data-index="${i}"]`);
        if (!el || a.xref !== 'paper' || a.xanchor !== 'left' || typeof a.x !== 'number') return;
        const r = el.getBoundingClientRect(), over = r.right - (box.right - 4);
        if (over <= 0) return;
        const left = Math.min(over, r.left - (box.left + 4));  // px it can move
        if (left > 0) update[`annotations[${i}].x`] = a.x - left / w;
      });
      const x = fl.xaxis, angle = Math.abs((x && x.tickangle) || 0);
      const n = x && x.showticklabels && x.tickfont && x.tickvals ? x.tickvals.length : 0;
      if (n && angle && angle !== 90 && (w / n) * Math.sin(angle * Math.PI / 180) < 1.25 * x.tickfont.size) {
        update['xaxis.tickangle'] = -90;
      }
      if (Object.keys(update).length) window.Plotly.relayout(gd, update);
      gd.attnLectureNarrow = gd.layout;
    }
    return done;
  };
  // (a figure in a hidden tab, which Gradio draws anew from what the server sent as its tab shows: once the page is
  // idle, not while the next stop is on its way)
  // The same, before a map is drawn, from a map beside it drawn already (the same sentence: the same plot area; the
  // titles measured on a canvas at the size drawn there): fitNarrow then finds nothing to change, and the map is
  // drawn once (each change is a whole draw: ~30 ms a map on a 2-core machine).
  const measure = document.createElement('canvas').getContext('2d');
  const textWidth = (text, font) => {
    measure.font = `${font.size || 12}px ${font.family || 'sans-serif'}`;
    return Math.max(...String(text).split(/<br>/i).map((line) => measure.measureText(line.replace(/<[^>]*>/g, '')).width));
  };
  drawHooks.push((gd, data, layout) => {
    if (!document.body.classList.contains('attn-lecture') || !gd.closest('#in-m-stages')) return null;
    const beside = [...document.querySelectorAll('#in-m-stages .js-plotly-plot')]
      .find((g) => g !== gd && g._fullLayout && g._fullLayout._size && g._fullLayout.xaxis);
    if (!beside || beside.clientWidth !== gd.clientWidth) return null;
    const fl = beside._fullLayout, {l, w} = fl._size, out = {...layout}, x = layout.xaxis || {};
    const n = (x.tickvals || []).length, angle = Math.abs(x.tickangle || 0), size = (fl.xaxis.tickfont || {}).size || 12;
    if (n && w / n < size) return null;  // (too close even upright: fitNarrow lays the maps two a row)
    if (n && angle && angle !== 90 && (w / n) * Math.sin(angle * Math.PI / 180) < 1.25 * size) {
      out.xaxis = {...x, tickangle: -90};
    }
    out.annotations = (layout.annotations || []).map((a, i) => {
      const drawn = (fl.annotations || [])[i];
      if (!drawn || a.xref !== 'paper' || a.xanchor !== 'left' || typeof a.x !== 'number') return a;
      const left = l + a.x * w, over = left + textWidth(a.text, drawn.font) + 8 - gd.clientWidth;
      const move = Math.min(over, left - 4);
      return move > 0 ? {...a, x: a.x - move / w} : a;
    });
    return {data, layout: out};
  });
  const unmark = () => {
    document.querySelectorAll('.lecture-mark').forEach((el) => el.classList.remove('lecture-mark'));
    const shapesOf = (gd) => (gd.layout && gd.layout.shapes) || [];
    const marked = (gd) => shapesOf(gd).some((s) => s.name === 'lecture-mark');
    document.querySelectorAll('.js-plotly-plot').forEach((gd) => {
      if (!marked(gd)) return;  // (measured only where there is a mark to take off: most figures have none)
      const clear = () => {
        if (gd.isConnected && marked(gd) && window.Plotly) {
          window.Plotly.relayout(gd, {shapes: shapesOf(gd).filter((s) => s.name !== 'lecture-mark')});
        }
      };
      if (gd.getClientRects().length) clear(); else (window.requestIdleCallback || setTimeout)(clear, {timeout: 2000});
    });
  };
  const markElement = (m) => {
    if (m.tile) {
      const gd = plotOf(m.plot);
      return !!(gd && gd.layout && (gd.layout.shapes || []).some((s) => s.name === 'chosen-tile'));
    }
    if (m.selector) {
      const el = document.querySelector(`#${m.plot} ${m.selector}`);
      if (el) el.classList.add('lecture-mark');
      return !!el;
    }
    return markPlot(m);
  };
  // The mark's box on screen: the shape's path, the SVG block, or the tile frame.
  const markBox = () => {
    const d = data(), m = d && d.mark;
    if (!m) return null;
    let el = null;
    if (m.selector) el = document.querySelector(`#${m.plot} ${m.selector}`);
    else {
      const gd = plotOf(m.plot), name = m.tile ? 'chosen-tile' : 'lecture-mark';
      const i = gd && gd.layout ? (gd.layout.shapes || []).findIndex((s) => s.name === name) : -1;
      if (i >= 0) el = gd.querySelector(`.shapelayer path[data-index="${i}"]`);
    }
    if (!el) return null;
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 ? {top: r.top, bottom: r.bottom, left: r.left, right: r.right} : null;
  };
  window.attnLectureMark = markBox;
  window.attnLectureMoving = () => target !== null;  // a stop on its way (tests, bench)

  // The figure in view: its top under the page's top, the mark above the bar. Again after each change of the page
  // (figures drawn late move what is below them) until the visitor scrolls, clicks or types.
  let moved = false;
  for (const type of ['wheel', 'touchstart', 'mousedown', 'keydown']) {
    window.addEventListener(type, () => { moved = true; }, {capture: true, passive: true});
  }
  // The part of the page the stop is about: the figure, or (the mark's frame) the union of what its selector finds.
  const frameBox = (m) => {
    const found = m.frame ? [...document.querySelectorAll(m.frame)] : [document.getElementById(m.plot)];
    const boxes = found.filter(Boolean).map((el) => el.getBoundingClientRect()).filter((r) => r.width && r.height);
    if (!boxes.length) return null;
    return {top: Math.min(...boxes.map((r) => r.top)), bottom: Math.max(...boxes.map((r) => r.bottom)),
            left: Math.min(...boxes.map((r) => r.left)), right: Math.max(...boxes.map((r) => r.right))};
  };
  window.attnLectureFrame = () => { const d = data(); return d && d.mark ? frameBox(d.mark) : null; };
  // A mark in a box that scrolls sideways (a figure wider than a phone: Figure 2's blocks), brought into its middle
  const sideways = (m) => {
    const el = m.selector && document.querySelector(`#${m.plot} ${m.selector}`);
    for (let box = el && el.parentElement; box; box = box.parentElement) {
      if (box.scrollWidth <= box.clientWidth + 1 || !/auto|scroll/.test(getComputedStyle(box).overflowX)) continue;
      const r = box.getBoundingClientRect(), at = el.getBoundingClientRect();
      if (at.left < r.left || at.right > r.right) box.scrollLeft += (at.left + at.right - r.left - r.right) / 2;
      return;
    }
  };
  const scrollTo = (m) => {
    sideways(m);
    const box = frameBox(m), mark = markBox(), b = bar();
    if (!box || !mark) return false;
    const room = window.innerHeight - (b ? b.getBoundingClientRect().height : 0);
    const top = box.top;
    if (top >= 0 && top <= 16 && mark.top >= 0 && mark.bottom <= room) return true;
    if (top >= 0 && mark.top >= 0 && mark.bottom <= room && window.scrollY + window.innerHeight
        >= document.documentElement.scrollHeight - 2) return true;  // as far as the page goes
    const bottom = box.bottom;
    // The figure's top at the screen's top; a figure taller than the room: its foot (its axis labels) just above the
    // bar, unless that hides the mark's top; a small mark (a cell, a row) in it: the mark in the room's middle (what
    // is above it, its column's heading, stays on screen), no lower than the foot's place.
    const small = mark.bottom - mark.top < 60, middle = (mark.top + mark.bottom - room) / 2;
    const dy = bottom - top <= room - 16 ? top - 8
      : small ? Math.max(top - 8, Math.min(bottom - room + 8, middle)) : Math.min(bottom - room + 8, mark.top - 8);
    window.scrollBy({top: dy, behavior: 'instant'});
    return true;
  };

  // The stop's action, once its view is drawn: Inside a head's query (the row the mark is on: the visitor's sentence
  // has its own), predict-then-reveal. (The link opens everything else, Inside a head's whole matrices included.)
  const clickInput = (selector) => {
    const input = document.querySelector(selector);
    if (!input || input.checked) return !!input;
    input.click();
    return true;
  };
  const act = (d) => {
    const m = d.mark || {};
    if (m.query !== undefined && !clickInput(`#in-query input[type=radio][value="${m.query}"]`)) return false;
    const block = document.getElementById(m.plot);  // (its view comes with the move: viz.ui.lecture)
    if (m.query !== undefined && !(block && block.getClientRects().length)) return false;
    if (d.action === 'predict') return !!plotOf('decode-cross') && clickInput('#predict-mode input[type=checkbox]');
    return true;
  };

  let done = {acted: false, stale: null}, shown = null, since = Date.now();
  shared.drawHeld = () => target !== null;  // (the figures the stop shows are drawn once it is scrolled to: draw.js)
  const drawn = () => {  // the stop on its way is drawn: the swap, and its time
    if (!target) return;
    moves.push({stop: target.stop, ms: Math.round(performance.now() - target.since)});
    target = null;
    if (release) release();
  };
  const update = () => {
    placeEntry();
    const d = data(), b = bar();
    document.body.classList.toggle('attn-lecture', !!d);
    if (!d) return;
    if (target && d.stop !== target.stop) {  // the stop shown stays as it is until the next one's caption comes
      if (performance.now() - target.since < 30000) return;
      target = null;  // (never came: a failed run; the page's message says why)
    }
    if (d.stop !== shown) {  // a new stop (a page load, or a move): its marks and its action anew
      if (shown !== null) unmark();
      document.body.classList.remove('attn-lecture-wide-maps');  // (fitNarrow: this stop's own sentence decides)
      done = {acted: false, stale: null};
      shown = d.stop;
      moved = false;
      since = Date.now();
    }
    document.body.style.setProperty('--lecture-bar-h', `${Math.ceil(b.getBoundingClientRect().height)}px`);
    const text = (params().get('text') || '').trim();
    const stale = !!text && text !== d.text.trim();  // the visitor's own sentence, not yet the stop's
    if (stale !== done.stale) {
      done.stale = stale;
      b.querySelector('.lecture-stale').hidden = !stale;
      b.querySelector('.lecture-pointer').classList.toggle('lecture-gone', stale);
      const again = document.getElementById('lecture-again');
      if (again) again.href = urlOf(d.stop);
      if (stale) unmark();
    }
    if (stale || !d.mark) { drawNear(); drawn(); return; }
    // (a figure off screen waits to be drawn, draw.js: drawn now, and measured once the page has laid it out)
    if (drawParked(`#${d.mark.plot}${d.mark.frame ? `, ${d.mark.frame}` : ''}`)) return;
    done.acted = done.acted || act(d);
    if (!done.acted || !fitFigure(d.mark) || !fitNarrow(d.mark) || !markElement(d.mark)) return;
    if (!moved) scrollTo(d.mark);
    drawNear();  // (the figures on screen with it, before the swap)
    drawn();
  };
  // At most once a frame: a page load changes the page's elements in hundreds of tasks, and each update reads the
  // layout (a forced layout per change: a quarter of a second of a stop's load, on a 2-core machine). (While a move
  // holds the previous stop on screen the browser runs no frames: then a timer.)
  let queued = false;
  const run = () => { queued = false; update(); };
  onChange(() => {
    if (queued) return;
    queued = true;
    if (target) setTimeout(run, 16); else requestAnimationFrame(run);
  });
  // Layout also moves without a change of the page's elements (a figure resized, a font loaded, a busy machine's late
  // styles): until the visitor moves, the mark is checked again a few times a second for a stop's first minute.
  setInterval(() => {
    if (target || (!moved && Date.now() - since < 60000 && bar())) update();
  }, 300);
}

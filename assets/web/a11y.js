/* Every figure speaks. Reads page.gridClicks (a figure walked cell by cell -> the hidden textbox a click on a cell
   writes to), page.mainFigures (per tab, its main figure's Plot id, the first shown of a list).

   A figure carries its description (viz/describe, in layout.meta.describe: name, summary, table, grid, lang), drawn
   with it, so each new figure brings its own. Once drawn ('attn-drawn', draw.js and inside.js):
   - its picture (the first svg.main-svg: role img) is named by the name and described by the summary, a paragraph
     beside it; plotly's other layers are hidden from the accessibility tree, and its toolbar's buttons take no Tab
     stop (the mouse keeps them; the keyboard has "As a table", the CSV and the page's own exports);
   - "As a table" beside it opens the table of the values it draws (th scope col / row) and a CSV download of them;
   - after the visitor's own action (a key, a click), the summaries of the figures it drew are announced once, politely
     (one live region for the page); a figure drawn without one (the page's first run, a time-lapse's tick) is not;
     a later action's figures replace an earlier one's not yet said, and a cell moved to with the keys (below) is its
     key's own answer: the figures of an earlier action, drawn or due after it, are not said over it;
   - a figure with a grid (the overview, the close-up, Head analysis's grid) is one Tab stop, a layer over it: the arrow
     keys (Home/End: the row's ends) move a cursor over its cells, each announced, and Enter (or Space) does what a
     click on that cell does (sends the cell's message, as overview.js, inside.js and heads.js send a click's).
   Radio groups become one Tab stop each, moved with the arrow keys (one name for their inputs); so does the row of
   tabs (the tab shown is its stop). Each tab with a figure starts with a skip link to its main figure. */
(page, {send, onChange}) => {
  const live = document.createElement('div');
  live.className = 'attn-sr';
  live.setAttribute('aria-live', 'polite');
  live.id = 'attn-announce';
  document.body.appendChild(live);
  const say = (text) => {  // a new text node each time: said again even when it is the same words
    live.textContent = '';
    window.setTimeout(() => { live.textContent = text; }, 30);
  };

  // The visitor's own action arms one announcement: the figures drawn within a moment of the first draw after it.
  // armed: the time of the visitor's last action (a key that does something by itself); heard: that of the last
  // action answered (its figures announced, or a cell moved to: ``answered``); action: the one the batch answers.
  // A figure drawn for a later action than the batch's: the batch, not said yet, gives way to the later action's.
  let armed = 0, heard = 0, action = 0, batch = new Map(), timer = null;  // batch: a block -> what it says (newest)
  const QUIET_KEYS = new Set(['Tab', 'Shift', 'Control', 'Alt', 'Meta']);
  const arm = (ev) => { if (ev.isTrusted !== false && !QUIET_KEYS.has(ev.key)) armed = Date.now(); };
  for (const type of ['keydown', 'click']) document.addEventListener(type, arm, true);
  const drop = () => { window.clearTimeout(timer); batch = new Map(); timer = null; };
  const announce = (gd, d) => {
    if (armed <= heard || Date.now() - armed > 20000 || gd.offsetParent === null) return;
    if (timer && action !== armed) drop();
    batch.set(gd.closest('.block') || gd, `${d.name}. ${d.summary}`);
    if (timer) return;
    action = armed;
    timer = window.setTimeout(() => {
      say([...batch.values()].slice(0, 2).join(' '));
      heard = action; drop();
    }, 400);
  };
  // The visitor's last action answered by what it says itself (a cell): the figures an earlier action drew, still
  // waiting to be said (the moment above) or drawn later, are not said over it
  const answered = () => { drop(); heard = armed; };

  let serial = 0;
  const uid = (what) => `attn-${what}-${++serial}`;
  const el = (tag, props = {}, text) => {
    const node = Object.assign(document.createElement(tag), props);
    if (text !== undefined) node.textContent = text;
    return node;
  };

  // A table's values: as sent, or a trace's z as drawn (a list of rows, or a typed array {dtype, bdata, shape})
  const DTYPES = {i1: Int8Array, u1: Uint8Array, i2: Int16Array, u2: Uint16Array, i4: Int32Array, u4: Uint32Array,
                  f4: Float32Array, f8: Float64Array};
  const rowsOf = (z) => {
    if (Array.isArray(z)) return z;
    if (z && z.bdata) {
      const bytes = Uint8Array.from(atob(z.bdata), (c) => c.charCodeAt(0));
      const flat = new DTYPES[z.dtype](bytes.buffer);
      const [n, m] = String(z.shape || `1,${flat.length}`).split(',').map(Number);
      return Array.from({length: n}, (_, i) => Array.from(flat.subarray(i * m, (i + 1) * m)));
    }
    if (ArrayBuffer.isView(z)) return [Array.from(z)];
    return [];
  };
  const valuesOf = (gd, table) => {
    if (Array.isArray(table.values)) return table.values;
    const trace = (gd.data || [])[table.values.trace] || {};
    return rowsOf(trace.z).map((row) => Array.from(row, (v) => (v === null || Number.isNaN(v) ? null
      : Number(Number(v).toPrecision(4)))));
  };
  const shown = (v) => (v === null || v === undefined ? '' : String(v));
  // ``text`` into ``node``, the German words it quotes (d.lang.words) in <span lang="de">: said as German
  const german = (node, text, words = []) => {
    const quoted = words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');
    const re = new RegExp(`(?<![\\p{L}\\p{N}])(?:${quoted})(?![\\p{L}\\p{N}])`, 'gu');
    let at = 0;
    node.replaceChildren();
    for (const m of words.length ? text.matchAll(re) : []) {
      node.append(text.slice(at, m.index), el('span', {lang: 'de'}, m[0]));
      at = m.index + m[0].length;
    }
    node.append(text.slice(at));
    return node;
  };

  const csvOf = (table, values) => {
    const cell = (v) => { const s = shown(v); return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s; };
    const lines = [[table.corner, ...table.columns], ...table.rows.map((r, i) => [r, ...(values[i] || [])])];
    return lines.map((line) => line.map(cell).join(',')).join('\r\n') + '\r\n';
  };
  // lang: the language of the row and column headers where it is not the page's (German tokens: d.lang)
  const buildTable = (table, values, lang = {}) => {
    const t = el('table', {className: 'attn-data'});
    t.appendChild(el('caption', {}, table.caption));
    const head = t.createTHead().insertRow();
    const th = (text, scope, language) => Object.assign(el('th', {scope}, text), language ? {lang: language} : {});
    head.appendChild(th(table.corner, 'col'));
    for (const text of table.columns) head.appendChild(th(text, 'col', lang.columns));
    const body = t.createTBody();
    table.rows.forEach((name, i) => {
      const row = body.insertRow();
      row.appendChild(th(name, 'row', lang.rows));
      for (const v of values[i] || []) row.appendChild(german(el('td'), shown(v), lang.words));
    });
    return t;
  };

  // The parts beside a figure, made once per Plot block: its summary, the toggle, the table's region, the CSV link.
  const partsOf = (block) => {
    if (block.attnParts && block.attnParts.panel.isConnected) return block.attnParts;
    const panel = el('div', {className: 'attn-figure-text'});
    const summary = el('p', {className: 'attn-sr', id: uid('summary')});
    const toggle = el('button', {type: 'button', className: 'attn-table-toggle'}, 'As a table');
    const region = el('div', {className: 'attn-table-region', id: uid('table'), tabIndex: 0, hidden: true});
    region.setAttribute('role', 'region');
    toggle.setAttribute('aria-expanded', 'false');
    toggle.setAttribute('aria-controls', region.id);
    panel.append(summary, toggle, region);
    block.appendChild(panel);
    const parts = {panel, summary, toggle, region, gd: null, url: null};
    toggle.addEventListener('click', () => {
      const open = toggle.getAttribute('aria-expanded') !== 'true';
      toggle.setAttribute('aria-expanded', String(open));
      region.hidden = !open;
      if (open) fillTable(parts);
    });
    block.attnParts = parts;
    return parts;
  };
  const fillTable = (parts) => {
    const d = parts.gd && describedBy(parts.gd);
    if (!d || parts.region.hidden) return;
    const values = valuesOf(parts.gd, d.table);
    if (parts.url) URL.revokeObjectURL(parts.url);
    parts.url = URL.createObjectURL(new Blob([csvOf(d.table, values)], {type: 'text/csv'}));
    const file = (((parts.gd._context || {}).toImageButtonOptions) || {}).filename || 'figure';
    const link = el('a', {href: parts.url, download: `${file}.csv`, className: 'attn-csv'}, 'Download CSV');
    parts.region.setAttribute('aria-label', d.table.caption);
    parts.region.replaceChildren(link, buildTable(d.table, values, d.lang || {}));
  };
  const describedBy = (gd) => (gd.layout && gd.layout.meta && gd.layout.meta.describe) || null;

  // ------------------------------------------------------------------------------------ a figure walked by keys
  const grids = new Map();  // Plot id -> {r, c}: the cursor, kept across new figures
  const cellsOf = (d) => {  // the grid's rows: [block, its row] in order, and the columns of each
    const rows = [];
    d.grid.blocks.forEach((b) => b.y.forEach((_, r) => rows.push([b, r])));
    return rows;
  };
  const labelOf = (d, b, r, c) => {
    if (b.labels) return b.labels[r][c];
    const v = d.table.values[r] && d.table.values[r][c];
    return `'${d.table.rows[r]}' → '${d.table.columns[c]}': ${shown(v)}`;
  };
  const layerOf = (block) => {
    if (block.attnLayer && block.attnLayer.isConnected) return block.attnLayer;
    const layer = el('div', {className: 'attn-grid', tabIndex: 0});
    layer.setAttribute('role', 'application');
    layer.appendChild(el('div', {className: 'attn-cursor'}));
    block.insertBefore(layer, block.attnParts ? block.attnParts.panel : null);  // its Tab stop before "As a table"
    block.attnLayer = layer;
    layer.addEventListener('focus', () => place(block));
    layer.addEventListener('keydown', (ev) => move(block, ev));
    return layer;
  };
  const place = (block) => {
    const layer = block.attnLayer, gd = block.attnParts && block.attnParts.gd, d = gd && describedBy(gd);
    const cursor = layer && layer.firstChild;
    if (!cursor || !d || !d.grid || !gd._fullLayout) return null;
    Object.assign(layer.style, {left: `${gd.offsetLeft}px`, top: `${gd.offsetTop}px`, width: `${gd.offsetWidth}px`,
                                height: `${gd.offsetHeight}px`});  // over the figure: its focus ring goes round it
    const rows = cellsOf(d), at = grids.get(block.id) || {r: 0, c: 0};
    at.r = Math.min(at.r, rows.length - 1);
    const [b, r] = rows[at.r];
    at.c = Math.min(at.c, b.x.length - 1);
    grids.set(block.id, at);
    const ax = (name) => gd._fullLayout[name.replace(/^([xy])/, '$1axis')];  // plotly's own axes: x -> xaxis
    const xa = ax(b.xaxis), ya = ax(b.yaxis);
    if (!xa || !ya) return null;
    const px = (a, v) => a._offset + a.l2p(v);
    const [x0, x1] = b.x[at.c].map((v) => px(xa, v)), [y0, y1] = b.y[r].map((v) => px(ya, v));
    const box = gd.getBoundingClientRect(), origin = layer.getBoundingClientRect();
    const left = box.left - origin.left + Math.min(x0, x1), top = box.top - origin.top + Math.min(y0, y1);
    Object.assign(cursor.style, {left: `${left}px`, top: `${top}px`, width: `${Math.abs(x1 - x0)}px`,
                                 height: `${Math.abs(y1 - y0)}px`});
    return {d, b, r, c: at.c, rows};
  };
  const KEYS = {ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0]};
  const move = (block, ev) => {
    if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const here = place(block);
    if (!here) return;
    const at = grids.get(block.id);
    if (ev.key === 'Enter' || ev.key === ' ') {
      ev.preventDefault();
      const sent = here.b.send && here.b.send[here.r];
      const message = Array.isArray(sent) ? sent[here.c] : sent;
      if (message !== undefined && message !== null && page.gridClicks[block.id]) {
        send(page.gridClicks[block.id], `${message},${Date.now()}`);
      }
      return;
    }
    const step = KEYS[ev.key];
    if (!step && ev.key !== 'Home' && ev.key !== 'End') return;
    ev.preventDefault();
    if (step) {
      at.r = Math.min(Math.max(at.r + step[0], 0), here.rows.length - 1);
      at.c = Math.max(at.c + step[1], 0);
    } else {
      at.c = ev.key === 'Home' ? 0 : Infinity;
    }
    const now = place(block);
    if (now) {
      answered();
      say(labelOf(now.d, now.b, now.r, now.c));
    }
  };

  // ------------------------------------------------------------------------------------------- a figure drawn
  const markTicks = (gd) => {  // German tick labels (d.lang: y, x; else those of the rows and columns: a heatmap's)
    const lang = (describedBy(gd) || {}).lang || {};
    for (const [axis, side] of [['.ytick text', lang.y ?? lang.rows], ['.xtick text', lang.x ?? lang.columns]]) {
      gd.querySelectorAll(axis).forEach((t) => (side ? t.setAttribute('lang', side) : t.removeAttribute('lang')));
    }
  };
  const hideToolbar = (gd) => gd.querySelectorAll('.modebar-btn').forEach((b) => { b.tabIndex = -1; });
  const speak = (gd) => {
    const block = gd.closest('.block');
    const d = describedBy(gd);
    if (!block || !d) return;
    const parts = partsOf(block);
    parts.gd = gd;
    german(parts.summary, d.summary, (d.lang || {}).words);
    const svgs = [...gd.querySelectorAll('svg.main-svg')];
    let named = svgs[0];
    if (d.grid) {
      named = layerOf(block);
      svgs.forEach((svg) => svg.setAttribute('aria-hidden', 'true'));
    } else {
      svgs.slice(1).forEach((svg) => svg.setAttribute('aria-hidden', 'true'));
      if (named) named.setAttribute('role', 'img');
    }
    if (named) {
      named.setAttribute('aria-label', d.name);
      named.setAttribute('aria-describedby', parts.summary.id);
    }
    hideToolbar(gd);
    markTicks(gd);
    if (!gd.attnSpeaks) {
      gd.attnSpeaks = true;
      const again = () => { hideToolbar(gd); markTicks(gd); };
      for (const name of ['plotly_afterplot', 'plotly_relayout']) gd.on(name, again);
    }
    fillTable(parts);
    if (d.grid) place(block);
    announce(gd, d);
  };
  document.addEventListener('attn-drawn', (ev) => {
    const gd = ev.target;
    if (gd && gd.classList && gd.classList.contains('js-plotly-plot')) speak(gd);
  });

  // Figures 1 and 2 (SVG drawn by the server, viz/architecture.py): named by their own label; their table is every
  // block's name and parameter count as the figure holds them (its title and data-params)
  const drawings = () => {
    document.querySelectorAll('.block:has(> * svg.tf-figure), .block:has(> svg.tf-figure)').forEach((block) => {
      const svg = block.querySelector('svg.tf-figure');
      if (!svg || block.attnSvg === svg) return;
      block.attnSvg = svg;
      const blocks = [...svg.querySelectorAll('g.tf-block[data-params]')];
      const rows = blocks.map((g) => (g.querySelector('title') || {}).textContent || '');
      const name = svg.getAttribute('aria-label') || '';
      const d = {name, summary: `${blocks.length} blocks with their parameter counts; As a table lists them.`,
                 table: {caption: `${name}: the blocks drawn and their parameters`, corner: 'block',
                         columns: ['parameters'], rows, values: blocks.map((g) => [Number(g.dataset.params)])}};
      const parts = partsOf(block);
      parts.gd = {layout: {meta: {describe: d}}, _context: {toImageButtonOptions: {filename: block.id || 'figure'}}};
      parts.summary.textContent = d.summary;
      svg.setAttribute('aria-describedby', parts.summary.id);
      fillTable(parts);
    });
  };

  // --------------------------------------------------------------------- radio groups, skip links (new elements)
  const radios = () => {
    document.querySelectorAll('.block:has(input[type=radio])').forEach((group) => {
      const inputs = group.querySelectorAll('input[type=radio]');
      if (!group.attnRadio) group.attnRadio = uid('radio');
      inputs.forEach((input) => { if (input.name !== group.attnRadio) input.name = group.attnRadio; });
    });
  };
  // A slider is one Tab stop, its track (arrow keys, Home, End, Page Up/Down): its number box and reset button are
  // the pointer's. A group of check boxes is one stop too, the arrow keys move between them and Space ticks one.
  // Buttons that repeat what a stop before them does with its keys (page.keyOnly: Decoding's ◀ ▶ beside the step's
  // slider) take no stop.
  const sliders = () => {
    document.querySelectorAll('.block:has(input[type=range])').forEach((block) => {
      block.querySelectorAll('input[type=number], button.reset-button').forEach((e) => {
        if (e.tabIndex !== -1) e.tabIndex = -1;
      });
    });
    for (const id of page.keyOnly) {
      const button = document.getElementById(id);
      if (button && button.tabIndex !== -1) button.tabIndex = -1;
    }
  };
  const boxGroups = () => {
    document.querySelectorAll('.block:has(input[type=checkbox] ~ *)').forEach((group) => {
      const boxes = [...group.querySelectorAll('input[type=checkbox]')];
      if (boxes.length < 2 || group.attnBoxes === boxes.length) return;
      group.attnBoxes = boxes.length;
      boxes.forEach((box, i) => { box.tabIndex = i === 0 ? 0 : -1; });
    });
  };
  document.addEventListener('keydown', (ev) => {
    const box = ev.target;
    if (!(box instanceof HTMLInputElement) || box.type !== 'checkbox' || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const group = box.closest('.block');
    const boxes = group ? [...group.querySelectorAll('input[type=checkbox]')] : [];
    const i = boxes.indexOf(box);
    const to = {ArrowRight: i + 1, ArrowDown: i + 1, ArrowLeft: i - 1, ArrowUp: i - 1, Home: 0, End: boxes.length - 1}[
      ev.key];
    if (boxes.length < 2 || to === undefined) return;
    ev.preventDefault();
    const next = boxes[(to + boxes.length) % boxes.length];
    box.tabIndex = -1;
    next.tabIndex = 0;
    next.focus();
  });
  const skipTarget = (ids) => {
    for (const id of ids) {
      const block = document.getElementById(id);
      if (!block || block.offsetParent === null) continue;
      // the layer of a figure walked by keys, Figures 1 and 2 themselves; else its block (Chromium focuses no
      // plotly svg), where the reading goes on with the figure
      return block.attnLayer || block.querySelector('svg.tf-figure') || block;
    }
    return null;
  };
  const skips = () => {
    for (const ids of Object.values(page.mainFigures)) {
      const first = document.getElementById(ids[0]);
      const panel = first && first.closest('[role=tabpanel], .tabitem');
      if (!panel || panel.querySelector(':scope > .attn-skip')) continue;
      const link = el('a', {href: `#${ids[0]}`, className: 'attn-skip'}, 'Skip to the figure');
      link.addEventListener('click', (ev) => {
        const target = skipTarget(ids);
        if (!target) return;
        ev.preventDefault();
        if (!target.hasAttribute('tabindex')) target.setAttribute('tabindex', '-1');  // (an svg's tabIndex = -1 sets none)
        target.focus();
        const block = target.closest('.block');
        if (document.activeElement !== target && block) {  // (an svg Chromium will not focus: its block)
          block.setAttribute('tabindex', '-1');
          block.focus();
        }
      });
      panel.prepend(link);
    }
  };
  // The tabs: one Tab stop (the tab shown), the arrow keys (Home, End) move between them, Enter or Space opens one
  // (a tab's opening may run the model: never on a mere move); Tab then goes into the tab shown.
  const tablists = () => {
    document.querySelectorAll('[role=tablist]').forEach((list) => {
      list.querySelectorAll('[role=tab]').forEach((tab) => {
        const stop = tab.getAttribute('aria-selected') === 'true' ? 0 : -1;
        if (tab.tabIndex !== stop && !(stop === -1 && tab === document.activeElement)) tab.tabIndex = stop;
      });
    });
  };
  // (a tab opened changes an attribute, which the page's observer of new elements does not see)
  document.addEventListener('click', (ev) => {
    if (ev.target && ev.target.closest && ev.target.closest('[role=tablist]')) window.requestAnimationFrame(tablists);
  });
  document.addEventListener('keydown', (ev) => {
    const tab = ev.target && ev.target.closest && ev.target.closest('[role=tablist] [role=tab]');
    if (!tab || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const all = [...tab.closest('[role=tablist]').querySelectorAll('[role=tab]')].filter((t) => t.offsetParent);
    const i = all.indexOf(tab);
    const to = {ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: all.length - 1}[ev.key];
    if (to === undefined) return;
    ev.preventDefault();
    const next = all[(to + all.length) % all.length];
    tab.tabIndex = -1;
    next.tabIndex = 0;
    next.focus();
  });

  let queued = false;
  onChange(() => {  // at most once a frame, however many changes the page makes
    if (queued) return;
    queued = true;
    window.requestAnimationFrame(() => {
      queued = false; radios(); sliders(); boxGroups(); skips(); tablists(); drawings();
    });
  });
}

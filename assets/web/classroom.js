/* Made for the classroom: the view in the URL, presentation mode, the Copy link button, the chosen tile framed in the
   overview (the keyboard walks the figures: a11y.js). Reads page.view (query parameter -> element id of each control
   that holds the view: viz.views.attention.share), page.views (the same for each other tab's own view), page.labels
   (a dropdown's label -> its value), page.detail (the close-up's element id), page.copyLink (the Copy link button's),
   page.overview and page.tileClick (the overview's tile message, see overview.js), page.linkFigures (each tab's main
   figure: a shared link opens scrolled to it), page.guide (an example's caption: brought on screen with the overview
   and the close-up under it).

   The view lives in the URL: page.view maps each query parameter to the element that holds its value (the server
   reads them back when a link is opened: viz.views.attention.share), and the tab shown writes its own view over it
   (page.views: Decoding's layer, head and step, Inside a head's query, …); another tab's own parameters go. Written
   only once the first view has come (the close-up's figure sent), so an opened link is read before it is rewritten;
   other parameters (Gradio's __theme) are kept. */
(page, {plotOf, layerOf, headOf, onChange, figureSent}) => {
  const viewValue = (id) => {
    const root = document.getElementById(id);
    if (!root) return null;
    const radio = root.querySelector('input[type=radio]:checked');
    if (radio) return radio.value;
    const group = root.querySelector('[data-testid=checkbox-group]');  // a CheckboxGroup: each box named by its value
    if (group) return [...group.querySelectorAll('input[type=checkbox]:checked')].map((box) => box.name).join(',');
    const check = root.querySelector('input[type=checkbox]');
    if (check) return check.checked ? '1' : '';
    const box = root.querySelector('textarea, input[type=number], input[type=text], input:not([type])');
    if (!box) return null;
    return box.type === 'text' && Object.hasOwn(page.labels, box.value) ? page.labels[box.value] : box.value;
  };
  const tabParams = new Set(Object.values(page.views).flatMap((view) => Object.keys(view)));
  let lastQuery = null, ready = false;
  const syncView = () => {
    document.body.classList.toggle('attn-present', viewValue(page.view.present) === '1');
    // (the close-up: sent with the page's first view, whichever tab shows; drawn as its tab shows: draw.js)
    ready = ready || figureSent(page.detail);
    if (!ready) return;
    const query = new URLSearchParams(location.search);
    const tab = document.querySelector('[role=tablist] [role=tab][aria-selected=true][data-tab-id]');
    const own = (tab && page.views[tab.dataset.tabId]) || {};
    for (const param of tabParams) if (!(param in page.view) && !(param in own)) query.delete(param);
    for (const [param, id] of [...Object.entries(page.view), ...Object.entries(own)]) {
      const v = viewValue(id);
      if (v === null) continue;
      const none = document.querySelector(`#${id} [data-testid=checkbox-group]`);  // no box checked: kept, as none
      if (v.trim() === '' && !none) query.delete(param); else query.set(param, v);
    }
    if (tab) query.set('tab', tab.dataset.tabId);
    const text = query.toString();
    if (text !== lastQuery) {
      lastQuery = text;
      history.replaceState(history.state, '', `${location.pathname}?${text}`);
    }
    frameTile();
  };
  setInterval(syncView, 300);
  for (const type of ['input', 'change', 'click', 'keyup']) {
    document.addEventListener(type, () => setTimeout(syncView, 0));
  }

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
    if (note) {  // shown over the page's foot (app.css), then gone
      note.textContent = ok ? 'Link copied.' : 'Copy the link from the address bar.';
      clearTimeout(note.hideTimer);
      note.hideTimer = setTimeout(() => { note.textContent = ''; }, 4000);
    }
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
    const gd = plotOf(page.overview);
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

  // An example's caption (or a link's notice) shown above the figures pushed the close-up's axis below a projector's
  // 720 px: once it shows, the page scrolls (for a few seconds, as the figures are drawn) until the caption and the
  // figures are on screen together, the caption at the top at most; not once the visitor scrolls, clicks or types,
  // and not in the lecture (lecture.js places its stops).
  let guideText = '', guideTimer = null;
  const toGuide = () => {
    const guide = document.getElementById(page.guide);
    const figures = [page.overview, page.detail].map((id) => document.getElementById(id)).filter(Boolean);
    if (!guide || !figures.length || !guide.offsetParent || document.body.classList.contains('attn-lecture')) return;
    let left = false;
    const leave = () => { left = true; };
    const events = ['wheel', 'touchstart', 'mousedown', 'keydown'];
    events.forEach((type) => window.addEventListener(type, leave, {capture: true, passive: true, once: true}));
    const started = Date.now();
    clearInterval(guideTimer);
    guideTimer = setInterval(() => {
      if (left || Date.now() - started > 4000 || !guide.offsetParent) {
        clearInterval(guideTimer);
        events.forEach((type) => window.removeEventListener(type, leave, {capture: true}));
        return;
      }
      const top = guide.getBoundingClientRect().top;
      const bottom = Math.max(...figures.map((e) => e.getBoundingClientRect().bottom));
      const by = Math.min(top - 8, bottom + 8 - innerHeight);
      if (by > 2) window.scrollBy({top: by, behavior: 'instant'});
    }, 200);
  };
  onChange(() => {
    const guide = document.getElementById(page.guide);
    const text = guide && guide.offsetParent ? guide.textContent.trim() : '';
    if (text === guideText) return;
    guideText = text;
    if (text) setTimeout(toGuide, 0);  // (after the click or key that chose it: not taken for the visitor's own)
  });

  // On a phone a shared link opens scrolled to the figure it is about (page.linkFigures: the tab's main figure), once
  // it is drawn, its top at the screen's top, unless it is on screen whole already: on a phone it lay two screens
  // down. Not when the visitor scrolled, clicked or typed first, and not in the lecture (lecture.js places its stops).
  const linked = new URLSearchParams(location.search);
  const about = linked.get('show') === 'matrix' && linked.get('tab') === 'inside' ? 'in-m-stages'
    : page.linkFigures[linked.get('tab') || 'attention'];
  const phone = matchMedia('(max-width: 640px)').matches;  // (a wide screen shows the figures under the choices)
  if (phone && about && linked.get('lecture') !== '1'
      && [...linked.keys()].some((k) => k in page.view || k === 'tab')) {
    let left = false;
    const leave = () => { left = true; };
    for (const type of ['wheel', 'touchstart', 'mousedown', 'keydown']) {
      window.addEventListener(type, leave, {capture: true, passive: true, once: true});
    }
    // (kept there for a few seconds: what is drawn above it late moves it)
    let first = null;
    const started = Date.now(), toFigure = setInterval(() => {
      const block = document.getElementById(about);  // drawn: a plotly figure, or an SVG figure's shapes
      const drawn = block && block.querySelector('.js-plotly-plot .main-svg, svg g');
      if (left || Date.now() - started > 30000 || (first && Date.now() - first > 4000)) {
        clearInterval(toFigure);
        return;
      }
      if (!drawn || !block.getClientRects().length) return;
      const box = block.getBoundingClientRect();
      if (!first && box.top >= 0 && box.bottom <= innerHeight) { clearInterval(toFigure); return; }  // on screen
      first = first || Date.now();
      if (Math.abs(box.top - 8) > 2) window.scrollBy({top: box.top - 8, behavior: 'instant'});
    }, 200);
  }
}

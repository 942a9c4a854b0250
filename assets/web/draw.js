/* Draw once: every figure drawn once, not twice, with the margins the server worked out. Reads no entry of the page
   contract.

   Gradio's Plot hands a new figure to its plotly element (Plotly.react), then replaces that element with a new one
   ({#key} on the figure) and draws the figure again there: the overview was drawn twice per run (~60 ms of a ~200 ms
   click on a 2-core machine). Plotly is wrapped once it is loaded (Gradio loads it with the first plot and sets
   window.Plotly): a draw waits one microtask, by when Svelte has swapped the elements (in the same task: no moment
   without a plot element), and is skipped if its element has left the page. A drawn figure tells the page with a
   bubbling 'attn-drawn' event on its element (the benchmark waits for it).

   A figure whose margins the server worked out (viz.margins: layout.meta.margins, the overview and the close-up) is
   drawn once: its column labels' angle for the plot's width (flat, slanted, upright: the first whose columns fit),
   those margins, and margin.autoexpand off (Gradio turns it on; then plotly draws, measures the labels, grows the
   margins and draws again). A plot whose width changes (a resize) gets its angle and margins again; a plot in a
   hidden tab (no width) keeps them.

   Presentation mode (body.attn-present, set by classroom.js from the page's present flag): every figure is drawn with
   every text at PRESENT_PX or more as seen (its font sizes in the figure itself: the default font, titles, tick
   labels, axis and colour-bar titles, legends, annotations, cell and bar texts, inline sizes, superscripts), in the
   page's text colour, with plotly's automatic margins so that plotly makes room for the larger labels. A figure
   laid out to the pixel by the server (Inside a head's) is drawn larger as a whole instead: its fonts, height,
   margins and pixel offsets times its --attn-present-scale (app.css). A figure the server already drew for a
   projector (the Attention tab's) keeps its sizes and margins. A change of the flag draws every shown figure again
   from what the server sent; a figure in a hidden tab, as its tab shows. So does a change of the theme while in
   presentation mode (the system's colour scheme switched with the page open: the texts' colour was the old theme's).

   Outside presentation mode too, a figure's own font is drawn in the page's text colour (the figures' #888 was 3.54:1
   on white), and drawn again as the theme changes; an export draws it dark on white (export.js). Where the visitor's
   system asks for reduced motion, plotly draws without transitions.

   A feature may draw another figure in a figure's place (shared.drawHooks): a hook(gd, data, layout, config) returns
   null, or the data and layout to draw (and to keep as sent) instead (inside.js: a figure it drew in place of
   the Plot's, which Gradio draws again). */
(page, shared) => {
  shared.drawHooks = [];
  const PRESENT_PX = 16, PRESENT_TITLE_PX = 20;
  const presenting = () => document.body.classList.contains('attn-present');
  const stillness = matchMedia('(prefers-reduced-motion: reduce)');
  const bigger = (font, px) => {  // a font at px or more (a size per point too)
    const size = font && font.size;
    if (Array.isArray(size)) {
      return size.every((s) => s >= px) ? font : {...font, size: size.map((s) => Math.max(s, px))};
    }
    return size >= px ? font : {...(font || {}), size: px};
  };
  // a text's inline sizes (<span style="font-size:12px">) at px or more, and its superscripts and subscripts (plotly
  // draws them at 70 %) at px
  const biggerText = (text, px) => (typeof text === 'string'
    ? text.replace(/font-size:\s*([\d.]+)px/g, (all, n) => (n >= px ? all : `font-size:${px}px`))
      .replace(/<(sup|sub)>(.*?)<\/\1>/g, `<$1><span style="font-size:${px}px">$2</span></$1>`) : text);
  const biggerTitle = (title, px) => {
    if (!title || typeof title !== 'object') return title ? {text: biggerText(title, px), font: {size: px}} : title;
    const out = {...title, text: biggerText(title.text, px), font: bigger(title.font, px)};
    if (title.subtitle) out.subtitle = biggerTitle(title.subtitle, px);
    return out;
  };
  const biggerBar = (bar, px) => bar && {...bar, tickfont: bigger(bar.tickfont, px), title: biggerTitle(bar.title, px)};
  // the figure for a projector: texts at px or more (the figure title at titlePx), and room made for them (grown)
  const presentFigure = (data, layout, px, titlePx, grown, color) => {
    // color: the page's text colour (plotly's default in Gradio is a grey of 3.5:1 on white)
    const font = {...bigger(layout.font, px), color};
    const out = {...layout, font, title: biggerTitle(layout.title, titlePx)};
    for (const key of Object.keys(out)) {
      const part = out[key];
      if (!part || typeof part !== 'object') continue;
      if (/^[xy]axis\d*$/.test(key)) {
        out[key] = {...part, tickfont: bigger(part.tickfont, px), title: biggerTitle(part.title, px)};
        if (grown) out[key].automargin = true;
        if (Array.isArray(part.ticktext)) out[key].ticktext = part.ticktext.map((t) => biggerText(t, px));
        // a log axis's powers of ten as 1e−5: a superscript would be drawn at 70 %
        if (part.type === 'log' && part.exponentformat !== 'none') out[key].exponentformat = 'e';
      } else if (/^coloraxis\d*$/.test(key) && part.colorbar) {
        out[key] = {...part, colorbar: biggerBar(part.colorbar, px)};
      }
    }
    if (out.legend) {
      out.legend = {...out.legend, font: bigger(out.legend.font, px), title: biggerTitle(out.legend.title, px)};
    }
    if (out.annotations) out.annotations = out.annotations.map((a) => ({...a, text: biggerText(a.text, px),
                                                                        font: bigger(a.font, px)}));
    if (out.hoverlabel) out.hoverlabel = {...out.hoverlabel, font: bigger(out.hoverlabel.font, px)};
    if (grown) out.margin = {...(out.margin || {}), autoexpand: true};
    const traces = (data || []).map((t) => {
      // a legend entry's sub- and superscripts written as the page's text writes them (α_j, W^O): plotly spaces
      // legend entries by their lines, and a full-size superscript ran into the entry above
      const name = typeof t.name === 'string'
        ? t.name.replace(/<sub>(.*?)<\/sub>/g, '_$1').replace(/<sup>(.*?)<\/sup>/g, '^$1') : t.name;
      const trace = {...t, textfont: bigger(t.textfont, px), name: biggerText(name, px)};
      if (t.colorbar) trace.colorbar = biggerBar(t.colorbar, px);
      return trace;
    });
    return [traces, out];
  };
  // the smallest font size a figure shows (its default font's included; a hover label's left out)
  const smallestFont = (data, layout) => {
    let least = (layout.font || {}).size || 12;  // plotly's default
    const shown = (part) => ({...part, hoverlabel: undefined});
    JSON.stringify([(data || []).map(shown), shown(layout)], (key, value) => {
      if (key === 'font' || key === 'tickfont' || key === 'textfont')
        for (const s of [].concat((value && value.size) || [])) least = Math.min(least, s);
      return ArrayBuffer.isView(value) ? undefined : value;
    });
    return least;
  };
  // A figure laid out to the pixel, drawn s times larger: its fonts, inline sizes, height, margins and pixel offsets
  // times s (what the server placed in fractions of the plot stays where it was)
  const times = (v, s) => (typeof v === 'number' ? v * s : v);
  const scaledFont = (font, s) => (font && font.size !== undefined
    ? {...font, size: Array.isArray(font.size) ? font.size.map((x) => x * s) : font.size * s} : font);
  const scaledText = (text, s) => (typeof text === 'string'
    ? text.replace(/font-size:\s*([\d.]+)px/g, (all, n) => `font-size:${(n * s).toFixed(1)}px`) : text);
  const scaledTitle = (title, s) => (title && typeof title === 'object'
    ? {...title, text: scaledText(title.text, s), font: scaledFont(title.font, s),
       standoff: times(title.standoff, s)} : scaledText(title, s));
  const scaleFigure = (data, layout, s) => {
    const margin = Object.fromEntries(Object.entries(layout.margin || {}).map(([k, v]) => [k, times(v, s)]));
    const out = {...layout, height: times(layout.height, s), margin, font: scaledFont(layout.font || {size: 12}, s),
                 title: scaledTitle(layout.title, s)};
    for (const key of Object.keys(out)) {
      const part = out[key];
      if (!part || typeof part !== 'object' || !/^[xy]axis\d*$/.test(key)) continue;
      out[key] = {...part, tickfont: scaledFont(part.tickfont, s), title: scaledTitle(part.title, s),
                  ticklen: times(part.ticklen, s)};
      if (Array.isArray(part.ticktext)) out[key].ticktext = part.ticktext.map((t) => scaledText(t, s));
    }
    if (out.legend) out.legend = {...out.legend, font: scaledFont(out.legend.font, s),
                                  tracegroupgap: times(out.legend.tracegroupgap, s)};
    if (out.annotations) out.annotations = out.annotations.map((a) => {
      const pixels = (ref) => !ref || ref === 'pixel';
      return {...a, text: scaledText(a.text, s), font: scaledFont(a.font, s), xshift: times(a.xshift, s),
              yshift: times(a.yshift, s), ax: pixels(a.axref) ? times(a.ax, s) : a.ax,
              ay: pixels(a.ayref) ? times(a.ay, s) : a.ay};
    });
    const traces = (data || []).map((t) => ({...t, textfont: scaledFont(t.textfont, s), name: scaledText(t.name, s)}));
    return [traces, out];
  };
  // A figure in presentation mode: enlarged by its --attn-present-scale (app.css) if it has one, and keeping its
  // margins; else its texts made larger and plotly's automatic margins, unless they are large enough already.
  const presentDraw = (gd, data, layout) => {
    const s = parseFloat(getComputedStyle(gd).getPropertyValue('--attn-present-scale')) || 1;
    if (s !== 1) [data, layout] = scaleFigure(data, layout, s);
    // (margins the server worked out for the figure's own sizes, viz.margins: kept)
    const grown = s === 1 && !(layout.meta && layout.meta.margins) && smallestFont(data, layout) < PRESENT_PX;
    const color = getComputedStyle(gd).color;  // the theme's text colour where the figure is
    return [...presentFigure(data, layout, PRESENT_PX, grown ? PRESENT_TITLE_PX : PRESENT_PX, grown, color), grown];
  };
  const fitMargins = (gd, layout) => {
    const m = layout && layout.meta && layout.meta.margins;
    if (!m || !Array.isArray(m.angles) || !m.angles.length) return false;
    const width = gd.clientWidth, top = (layout.margin || {}).t || 0;
    // plotly's resize drops layout.height: the drawn height is then only in plotly's _fullLayout (no public getter)
    const height = layout.height || (gd._fullLayout || {}).height || 0;
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
    if (!gd.clientWidth || !gd._fullLayout || !gd.layout) return;  // not drawn yet (the same private layout as above)
    const layout = {...gd.layout};
    const was = JSON.stringify([layout.margin, (layout.xaxis || {}).tickangle]);
    if (!fitMargins(gd, layout)) return;
    const now = [layout.margin, (layout.xaxis || {}).tickangle];
    if (JSON.stringify(now) !== was) window.Plotly.relayout(gd, {margin: now[0], 'xaxis.tickangle': now[1]});
  }));
  // Presentation mode switched, or the text colour (the theme): a shown figure is drawn again from what the server
  // sent, a hidden one as it shows
  const ink = (gd) => getComputedStyle(gd).color;  // the theme's text colour where the figure is
  const redraw = (gd) => {
    if (!gd.isConnected || !gd.clientWidth || !gd.attnSent) return;
    if (gd.attnPresent === presenting() && gd.attnInk === ink(gd)) return;
    window.Plotly.react(gd, gd.attnSentData, {...gd.attnSent}, gd.attnSentConfig);
  };
  const presentation = new ResizeObserver((entries) => entries.forEach(({target: gd}) => {
    if (!gd.isConnected) presentation.unobserve(gd); else redraw(gd);
  }));
  new MutationObserver(() => document.querySelectorAll('.js-plotly-plot').forEach(redraw))
    .observe(document.body, {attributes: true, attributeFilter: ['class']});
  // A figure in a hidden tab, which Gradio mounts anew and draws again as its tab shows, is drawn once it shows and
  // comes within a quarter of a screen of the view (an IntersectionObserver), or, shown, once the page is idle
  // (IDLE_MS at most); never while hidden (drawn there, it was drawn for nothing, ~50 ms a figure, and a lecture's
  // next key waited behind five of the Lab's). While a feature holds every draw (shared.drawHeld: the lecture, while
  // the next stop is on its way: what is on screen before its scroll is not what is on screen after it), a figure
  // waits too, and once the hold is over it is drawn the same way at the page's next change: a stop is on screen
  // without waiting for the figures below it (Inside a head's six panels: ~60 ms each on a 2-core machine). A figure
  // sent again before it was drawn is drawn once, the last. Whether it shows is checked after each change of the
  // page's elements (a tab shown: the browser may be running no frames while the lecture holds a stop on screen).
  // shared.drawParked(selector): those in what it finds, now (plotly marks its element .js-plotly-plot only as it
  // draws it), and how many; shared.drawNear(): those on screen now (the lecture, once it has scrolled to a stop,
  // before its swap); shared.drawHeld: a function a feature sets, true while every figure waits.
  const IDLE_MS = 1000;
  const parked = new Map();  // a plotly element -> {job: its draw, done: the promise's resolve}
  const onScreen = (gd) => {
    if (!gd.getClientRects().length) return false;
    const r = gd.getBoundingClientRect();
    return r.top < innerHeight && r.bottom > 0;
  };
  const unpark = (gd) => {
    const p = parked.get(gd);
    if (!p) return;
    parked.delete(gd);
    nearing.unobserve(gd);
    showing.unobserve(gd);
    p.done(gd.isConnected ? p.job() : gd);
  };
  const nearing = new IntersectionObserver((entries) => entries.forEach((e) => {
    if (e.isIntersecting) unpark(e.target);
  }), {rootMargin: '25% 0px'});
  const drawNear = () => [...parked.keys()].forEach((gd) => { if (!gd.isConnected || onScreen(gd)) unpark(gd); });
  const near = (gd) => {
    if (!gd.getClientRects().length) return false;
    const r = gd.getBoundingClientRect(), margin = innerHeight / 4;
    return r.top < innerHeight + margin && r.bottom > -margin;
  };
  // a parked figure drawn once the page is idle, if it shows then (a hidden one: as it shows, drawShown)
  const whenIdle = (gd) => {
    const p = parked.get(gd);
    if (!p || p.idle) return;
    p.idle = true;
    (window.requestIdleCallback || setTimeout)(() => {
      p.idle = false;
      if (parked.get(gd) !== p || (gd.isConnected && shared.drawHeld && shared.drawHeld())) return;
      if (!gd.isConnected || gd.getClientRects().length) unpark(gd);
    }, {timeout: IDLE_MS});
  };
  const drawIfShown = (gd) => {
    if (!gd.isConnected || near(gd)) unpark(gd);
    else if (gd.getClientRects().length) whenIdle(gd);
  };
  const drawShown = () => [...parked.keys()].forEach(drawIfShown);
  // a parked figure that comes to show (its size from 0: its tab or column shown) is drawn as drawShown would,
  // whether or not any element of the page changed with it
  const showing = new ResizeObserver((entries) => entries.forEach(({target: gd}) => {
    if (parked.has(gd) && !(gd.isConnected && shared.drawHeld && shared.drawHeld())) drawIfShown(gd);
  }));
  const drawParked = (selector) => {
    const blocks = [...document.querySelectorAll(selector)].map((el) => el.closest('[id]') || el);
    const found = [...parked.keys()].filter((gd) => blocks.some((block) => block.contains(gd)));
    found.forEach(unpark);
    return found.length;
  };
  // shared.drawWhenNear(gd, job): a drawn figure's change (inside.js's in-place draws) run now where the figure is
  // on screen, else parked like a hidden one: drawn as it comes within a quarter of a screen of the view (those
  // already there at the next frame, after the ones on screen), or once the page is idle; a later change of the same
  // figure replaces a parked one. Resolves with the job's result.
  const drawWhenNear = (gd, job) => {
    if (!onScreen(gd)) return park(gd, job);
    if (!parked.has(gd)) return Promise.resolve(job());
    const drawing = park(gd, job);  // (the last change, now)
    unpark(gd);
    return drawing;
  };
  // shared.figureSent(id): a figure was sent to the Plot with that element id (drawn, or waiting to be: a hidden one)
  const sentTo = new Set();
  const figureSent = (id) => sentTo.has(id);
  Object.assign(shared, {drawParked, drawNear, drawWhenNear, figureSent});
  let checking = false;
  shared.onChange(() => {
    if (checking || !parked.size || (shared.drawHeld && shared.drawHeld())) return;
    checking = true;
    setTimeout(() => { checking = false; if (!(shared.drawHeld && shared.drawHeld())) drawShown(); });
  });
  const park = (gd, job) => {
    const p = parked.get(gd);
    if (p) { p.job = job; return p.promise; }  // (the last figure sent)
    const next = {job};
    next.promise = new Promise((resolve) => { next.done = resolve; });
    parked.set(gd, next);
    nearing.observe(gd);
    showing.observe(gd);
    whenIdle(gd);
    return next.promise;
  };
  // Plotly.react itself is wrapped: plotly has no public hook that runs before a draw.
  const deferDraws = (plotly) => {
    if (!plotly || plotly.attnDeferred) return plotly;
    const react = plotly.react;
    const drawn = (gd) => { gd.dispatchEvent(new CustomEvent('attn-drawn', {bubbles: true})); return gd; };
    plotly.react = function (gd, ...rest) {
      if (!(gd instanceof HTMLElement) || !gd.isConnected) return react.call(this, gd, ...rest);
      const block = gd.closest('[id]');
      if (block) sentTo.add(block.id);
      return Promise.resolve().then(() => {
        if (!gd.isConnected) return gd;
        const held = shared.drawHeld && shared.drawHeld();
        if (held || parked.has(gd) || !gd.getClientRects().length) return park(gd, () => draw.call(this, gd, rest));
        return draw.call(this, gd, rest);
      });
    };
    const draw = function (gd, rest) {
      let [data, layout, ...more] = rest;
      for (const hook of layout ? shared.drawHooks : []) {
        const own = hook(gd, data, layout, more[0]);
        if (own) { ({data, layout} = own); break; }
      }
      if (gd.attnSent !== layout) Object.assign(gd, {attnSent: layout, attnSentData: data, attnSentConfig: more[0]});
      gd.attnPresent = presenting();
      gd.attnInk = ink(gd);
      let grown = false;
      if (gd.attnPresent && layout) [data, layout, grown] = presentDraw(gd, data, layout);
      else if (layout) layout = {...layout, font: {...(layout.font || {}), color: gd.attnInk}};
      if (layout && stillness.matches) layout = {...layout, transition: {duration: 0}};
      if (grown) refit.unobserve(gd);
      else if (fitMargins(gd, layout)) refit.observe(gd);
      presentation.observe(gd);
      return Promise.resolve(react.call(this, gd, data, layout, ...more)).then(drawn);
    };
    plotly.attnDeferred = true;
    return plotly;
  };
  // Gradio sets window.Plotly as it loads plotly and draws at once: its setter is the one moment before the first draw.
  let plotlyLoaded = deferDraws(window.Plotly);
  Object.defineProperty(window, 'Plotly', {configurable: true, get: () => plotlyLoaded,
                                           set: (p) => { plotlyLoaded = deferDraws(p); }});
}

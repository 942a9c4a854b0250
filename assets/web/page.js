/* The page script's shared part. The page script is assets/web/page.js and then one file per feature, joined in the
   order of viz.views.page.SCRIPTS into the one script Gradio runs once the page has loaded (launch(js=...)).

   Every file is one function. This one gets the page contract, written once in Python (viz.views.page.PAGE: element
   ids, label patterns, meta names), and returns what the features share; each feature file then gets the contract and
   that, and wires one feature of the page (its comment says which entries of the contract it reads).
     page.layerLabel, page.headLabel   regular expressions that read the layer and the head (1-based) from an
                                       overview cell's row and column labels (viz.heatmaps)

   Messages: a feature tells the server something by writing to a hidden Gradio textbox (send): its .change listener
   does the rest. Every message carries the time, so that a second click on the same thing is a change too. */
(page) => {
  // Plotly's module (~4.6 MB), fetched and compiled as the page loads: Gradio imports it with the first Plot it draws,
  // and a page that opens on a figure of its own (the lecture's stop 1, Figure 1) had its first key wait ~1 s for it.
  // The same module as Gradio's import (the same URL): loaded once.
  if (page.plotly && !window.Plotly) import(new URL(page.plotly, document.baseURI).href).catch(() => {});

  // Tell a hidden Gradio textbox something: its .change listener does the rest.
  const send = (id, value) => {
    const box = document.querySelector(`#${id} textarea, #${id} input`);
    if (!box) return;
    box.value = value;
    box.dispatchEvent(new Event('input', {bubbles: true}));
  };

  // The plotly element of a Plot (Gradio's Plot gives it the element id; each new figure comes in a new element).
  const plotOf = (id) => document.querySelector(`#${id} .js-plotly-plot`);

  // An overview cell's layer and head, read off its row and column labels.
  const layerOf = new RegExp(page.layerLabel), headOf = new RegExp(page.headLabel);

  // One MutationObserver for the page: Gradio draws plots late, and anew, so features hook their elements as they
  // appear. onChange(fn): fn runs after every change to the page's elements, in the order the features asked;
  // eachPlot(id, hook): hook(gd) runs once for each new plotly element of the Plot with that id, once plotly has set
  // it up (gd.on: its events).
  const watchers = [];
  new MutationObserver(() => watchers.forEach((watch) => watch()))
    .observe(document.body, {childList: true, subtree: true});
  const onChange = (fn) => { watchers.push(fn); };
  const eachPlot = (id, hook) => {
    const hooked = new WeakSet();
    onChange(() => {
      const gd = plotOf(id);
      if (!gd || !gd.on || hooked.has(gd)) return;
      hooked.add(gd);
      hook(gd);
    });
  };

  // SVG references that survive a change of the page's URL. Under a <base href> (Gradio's page has one) plotly writes
  // each gradient (a colour bar), pattern (the Decoding tab's hatching) and clip path as url('<the page's URL>#id'),
  // the URL read once per plot (its private gd._context._baseUrl, plotly 3.x: no public setting). Once the page
  // rewrites its URL (history.replaceState: the view in the link, classroom.js), that reference names another
  // document and the browser draws nothing (a colour bar without its colours, bars without hatching). So every change
  // of the URL, whoever makes it, points every plot's references, and plotly's own for later draws, at the URL now.
  const pageUrl = () => location.href.split('#')[0];
  const REFS = /url\((["']?)([^"')]*)#([^"')]+)\1\)/g;
  const REF_PROPS = ['fill', 'stroke', 'clip-path', 'mask', 'filter'];
  const repoint = () => {
    const now = pageUrl(), quoted = now.replace(/["\\]/g, '\\$&');
    const fix = (value) => value && value.replace(REFS, (ref, q, url, id) => (url && url !== now
      ? `url("${quoted}#${id}")` : ref));
    document.querySelectorAll('.js-plotly-plot').forEach((gd) => {
      const context = gd._context;
      if (!context || !context._baseUrl || context._baseUrl === now) return;
      context._baseUrl = now;
      gd.querySelectorAll(REF_PROPS.map((p) => `[${p}*="url("]`).concat('[style*="url("]').join(',')).forEach((el) => {
        for (const p of REF_PROPS) {
          const attr = el.getAttribute(p), style = el.style.getPropertyValue(p);
          if (attr && fix(attr) !== attr) el.setAttribute(p, fix(attr));
          if (style && fix(style) !== style) el.style.setProperty(p, fix(style));
        }
      });
    });
  };
  for (const name of ['pushState', 'replaceState']) {
    const change = history[name];
    history[name] = function (...args) {
      const result = change.apply(this, args);
      repoint();
      return result;
    };
  }
  window.addEventListener('popstate', repoint);

  // A view the server sent as its changes from another one the page holds (viz.views.outputs.changes): a copy of
  // base with each [path, value] set and each [path] deleted.
  const applyChanges = (base, changes) => {
    const root = {view: structuredClone(base)};
    for (const [path, ...value] of changes) {
      const keys = ['view', ...path], last = keys.pop();
      const at = keys.reduce((node, key) => node[key], root);
      if (value.length) at[last] = value[0]; else delete at[last];
    }
    return root.view;
  };

  return {send, plotOf, layerOf, headOf, onChange, eachPlot, applyChanges};
}

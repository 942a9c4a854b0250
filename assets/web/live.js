/* The Why tab's run (section 3): its three figures come as JSON in a hidden textbox (viz.views.scaling.live_frames),
   with the two maps' captions (written into their elements as the figures are drawn), not as three new Plot values
   (each drawn from scratch in a new element, ~1.7 times as long as in place). Each is drawn whole by Plotly.react in
   the figure shown (inside.js's shared.drawInPlace: the Plot keeps its own value, a blank figure,
   viz.views.scaling.live_waiting, and should Gradio draw that value again, the figure drawn in its place is drawn
   instead). A figure whose Plot has not drawn yet (the tab's first run, its Plots still being made) waits
   for the Plot's first draw.

   Drawn as Gradio writes the answer into the hidden textbox (its value set), with no change event on that box: one
   Gradio dispatch less per run (Gradio 6.31.0 updates the loading status of every component the page has run at each
   dispatch, main-thread work that grows as the page is used). */
(page, {plotOf, drawInPlace, onChange}) => {
  const waiting = new Map();  // a Plot's id -> the last answer's figure for it, until the Plot has drawn
  const shown = (id) => {
    const gd = plotOf(id);
    return Boolean(gd && gd.attnSent);
  };
  // Each map's caption (viz.views.scaling.page_map): [title, subtitle] into its two lines, by the caption's id
  const caption = (id, [title, subtitle]) => {
    const box = document.getElementById(id);
    const [top, sub] = box ? box.querySelectorAll('.attn-caption-title, .attn-caption-sub') : [];
    if (top && sub) {
      top.textContent = title;
      sub.textContent = subtitle;
    }
  };
  // A run's last part (viz.views.scaling.live_stream: the maps came first, from the encoder alone): each map's export
  // title, which names the translation, written into the figure drawn (or waiting): read when the map is saved.
  const exported = (exports) => {
    for (const [id, title] of Object.entries(exports)) {
      const gd = plotOf(id), layouts = [waiting.get(id)?.layout, gd?.attnSent && gd.layout, gd?.attnSent];
      layouts.forEach((layout) => { if (layout?.meta?.export) layout.meta.export.title = title; });
    }
  };
  const draw = ({figures, captions, exports}) => {
    if (exports) exported(exports);
    if (!figures) return;
    Object.entries(captions || {}).forEach(([id, lines]) => caption(id, lines));
    const now = {};
    for (const id of page.livePlots) {
      if (shown(id)) {
        now[id] = figures[id];
        waiting.delete(id);
      } else {
        waiting.set(id, figures[id]);
      }
    }
    drawInPlace(now, true);
  };
  document.addEventListener('attn-drawn', ({target}) => {
    for (const [id, figure] of waiting) {
      if (target.closest && target.closest(`#${id}`) && shown(id)) {
        waiting.delete(id);
        drawInPlace({[id]: figure}, true);
      }
    }
  });
  const {get, set} = Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, 'value');
  const hook = () => {
    const box = document.querySelector(`#${page.liveFrames} textarea`);
    if (!box || box.attnHooked) return;
    box.attnHooked = true;
    Object.defineProperty(box, 'value', {
      configurable: true,
      get() { return get.call(this); },
      set(text) {
        set.call(this, text);
        if (text) queueMicrotask(() => draw(JSON.parse(text)));
      },
    });
  };
  hook();
  onChange(hook);  // (the box made anew)
}

/* The Why tab's run (section 3): its three figures come as JSON in a hidden textbox (viz.views.scaling.live_frames),
   not as three new Plot values (each drawn from scratch in a new element, ~1.7 times as long as in place). Each is
   drawn whole by Plotly.react in the figure shown (inside.js's shared.drawInPlace: the Plot keeps its value, and
   should Gradio draw that value again, the figure drawn in its place is drawn instead). A figure not drawn yet (the
   tab's first run) becomes its Plot's value: window.attnLiveRun returns the three Plots' outputs, undefined (no
   change) for those drawn in place. */
(page, {plotOf, drawInPlace, onChange}) => {
  const shown = (id) => {
    const gd = plotOf(id);
    return Boolean(gd && gd.attnSent);
  };
  const draw = (figures) => drawInPlace(
    Object.fromEntries(page.livePlots.filter(shown).map((id) => [id, figures[id]])), true);
  let drawnText = null;  // the answer drawn as it came (below)
  window.attnLiveRun = (text) => {
    if (!text) return page.livePlots.map(() => undefined);
    const {figures} = JSON.parse(text);
    if (text !== drawnText) draw(figures);
    return page.livePlots.map((id) => (shown(id) ? undefined : {type: 'plotly', plot: JSON.stringify(figures[id])}));
  };
  // The figures shown are drawn as Gradio writes the answer into the hidden textbox (its value set), not a task later
  // when Gradio dispatches the box's change event to attnLiveRun (~13 ms later, measured on the bench's page).
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
        if (text) {
          queueMicrotask(() => {
            drawnText = text;
            draw(JSON.parse(text).figures);
          });
        }
      },
    });
  };
  hook();
  onChange(hook);  // (the box made anew)
}

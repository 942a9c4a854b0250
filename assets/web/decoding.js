/* Decoding tab: the left and right arrow keys press Previous and Next (page.stepPrev, page.stepNext: the buttons'
   element ids), unless focus is in a field (a slider or a radio keeps its own arrow keys) and only while the tab is
   shown.

   window.attnDecodeStep(frames, step, shown): a step drawn without a round trip. The server sends every step's view
   for the layer and head shown in one answer (viz.views.decode_steps.step_frames: JSON of step 1's view and each
   step's changes from it, revealed and hidden); this returns the step's outputs as the listener lists them
   (assets/web/events.js: decodeStep, decodeReveal): [revealed, Markdown, top 5, self row, cross row], each figure as
   the value of a Gradio Plot. */
(page, {applyChanges}) => {
  let held = {text: null, frames: null};  // the frames last parsed
  window.attnDecodeStep = (text, step, shown) => {
    if (held.text !== text) held = {text, frames: text ? JSON.parse(text) : null};
    const n = held.frames ? held.frames.steps.length : 0;
    if (!n) return [false, '', null, null, null];  // no sentence yet: nothing to draw
    const t = Math.min(Math.max(Math.round(Number(step)) || 1, 1), n);
    const [markdown, ...figures] = applyChanges(held.frames.base, held.frames.steps[t - 1][shown ? 0 : 1]);
    return [shown, markdown, ...figures.map((figure) => ({type: 'plotly', plot: JSON.stringify(figure)}))];
  };

  document.addEventListener('keydown', (ev) => {
    if ((ev.key !== 'ArrowLeft' && ev.key !== 'ArrowRight') || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const field = 'input, textarea, select, [contenteditable="true"]';
    if (ev.target && ev.target.closest && ev.target.closest(field)) return;
    const btn = document.getElementById(ev.key === 'ArrowLeft' ? page.stepPrev : page.stepNext);
    if (!btn || btn.offsetParent === null) return;
    ev.preventDefault();
    btn.click();
  });
}

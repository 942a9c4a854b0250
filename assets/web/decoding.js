/* Decoding tab: the left and right arrow keys press Previous and Next (page.stepPrev, page.stepNext: the buttons'
   element ids), unless focus is in a field (a slider or a radio keeps its own arrow keys) and only while the tab is
   shown.

   window.attnDecodeStep(frames, held, step, shown, head): a step drawn without a round trip. The server sends every
   step's view for the layer and head shown in one answer (viz.views.decode_steps.step_frames: JSON of step 1's view
   and each step's changes from it, revealed and hidden, and the head's rows and Markdown), and then, once those came,
   every head's for the same layer (held: decode_steps.held_heads, "" for a long sentence; asked for at page.decodeHold
   once the page is idle after a view's frames came: window.attnDecodeFrames). This returns the step's outputs as the
   listener lists them (assets/web/events.js: decodeStep, decodeReveal): [revealed, Markdown, top 5, self row, cross
   row], each figure as the value of a Gradio Plot, for the head chosen: from the frames held for every head where
   they are for the sentence and layer shown, else from the frames shown (their own head: a head's call to the server
   is on its way).

   window.attnDecodeHead(frames, held, step, predict, revealed, head): a head chosen, drawn from the frames held for
   every head (a reveal holds), without the top 5 (the same for every head); where none are held for the view shown,
   nothing is drawn here and the server is asked (page.decodeAsk: "head,time"), which draws it. */
(page, {send, applyChanges}) => {
  const parsed = new Map();  // JSON text -> its value (the frames shown and those held: the last few)
  const parse = (text) => {
    if (!text) return null;
    if (!parsed.has(text)) {
      if (parsed.size >= 4) parsed.delete(parsed.keys().next().value);
      parsed.set(text, JSON.parse(text));
    }
    return parsed.get(text);
  };
  // the frames to draw ``head`` from (and the head they draw), or null before the tab has a sentence
  const framesFor = (framesText, heldText, head) => {
    const shown = parse(framesText), held = parse(heldText), key = String(head);
    if (!shown) return null;
    if (held && held.text === shown.text && held.layer === shown.layer && held.heads[key]) return [held, key];
    return [shown, shown.heads[key] ? key : Object.keys(shown.heads)[0]];
  };
  const viewOf = ([frames, head], step, shown) => {
    const n = frames.steps.length;
    const t = Math.min(Math.max(Math.round(Number(step)) || 1, 1), n) - 1;
    let view = applyChanges(frames.base, frames.steps[t][0]);
    if (!shown) view = applyChanges(view, frames.steps[t][1]);
    const [rows, markdown, hidden] = frames.heads[head][t];
    view = applyChanges(view, rows);
    view[0] = shown ? markdown : hidden;
    const [text, ...figures] = view;
    return [text, ...figures.map((figure) => ({type: 'plotly', plot: JSON.stringify(figure)}))];
  };
  // A view's frames came (a sentence, a layer, a head the server drew): every head's frames for its sentence and
  // layer asked for once the page is idle (its figures drawn first), unless they were asked for already.
  let asked = null;
  window.attnDecodeFrames = (framesText) => {
    if (!framesText) return;
    (window.requestIdleCallback || setTimeout)(() => {
      const shown = parse(framesText), key = JSON.stringify([shown.text, shown.layer]);
      if (key === asked) return;
      asked = key;
      send(page.decodeHold, `${shown.layer},${Date.now()}`);
    }, {timeout: 1000});
  };
  window.attnDecodeStep = (framesText, heldText, step, shown, head) => {
    const found = framesFor(framesText, heldText, head);
    if (!found || !found[0].steps.length) return [false, '', null, null, null];  // no sentence yet: nothing to draw
    return [shown, ...viewOf(found, step, shown)];
  };
  window.attnDecodeHead = (framesText, heldText, step, predict, revealed, head) => {
    const found = framesFor(framesText, heldText, head);
    if (!found || found[1] !== String(head)) {  // none held for this head: the server draws it
      send(page.decodeAsk, `${head},${Date.now()}`);
      return [];
    }
    const [markdown, , selfRow, crossRow] = viewOf(found, step, !predict || revealed);
    return [markdown, undefined, selfRow, crossRow];  // (undefined: no change)
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

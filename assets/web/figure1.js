/* Architecture, Figure 1: an attention block opens its heatmaps. Reads page.figure1 (the element id of Figure 1) and
   page.blockClick (a hidden textbox): a click (or Enter, or Space) on a block sends "kind|time" there. Listened for on
   the document, so redraws need no new hook.

   Whole on a wide screen's first screen, legible: Figure 1 (890 × 442 in its viewBox, viz/architecture.py) is drawn
   at the page's width, or narrower where the room between its top (the page scrolled to the top) and the screen's
   foot is lower (--figure1-max-width, app.css; measured as the page changes and the window is resized), never under
   its own size (its smallest notes 9.5 px; tests/helpers/layout.py asks 890 px) nor, in presentation mode, under the
   scale that draws them at 16 px (12 px there, app.css). At 1280×720: ~1.33× its size, its notes ~12.5 px; in
   presentation mode ~1.34×, 16 px. On a phone it keeps its own size and scrolls sideways (app.css); in the lecture it
   takes the page's width (the lecture shows the part its stop is about). */
(page, {send, onChange}) => {
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

  // px: the gap left under it; a phone's width (app.css: scrolled sideways); presentation mode's least scale (its
  // notes at 12 px in the viewBox drawn at 16 px)
  const FOOT = 8, PHONE_PX = 640, PRESENT_SCALE = 16 / 12;
  const fit = () => {
    const figure = document.getElementById(page.figure1), svg = figure && figure.querySelector('svg.tf-figure');
    if (!svg || !svg.getClientRects().length || !svg.viewBox.baseVal || !svg.viewBox.baseVal.height) return;
    const {width, height} = svg.viewBox.baseVal, top = svg.getBoundingClientRect().top + scrollY;
    const least = width * (document.body.classList.contains('attn-present') ? PRESENT_SCALE : 1);
    const room = Math.max(least, Math.floor((innerHeight - top - FOOT) * width / height));
    const max = innerWidth > PHONE_PX ? `${room}px` : 'none';
    if (figure.style.getPropertyValue('--figure1-max-width') !== max) figure.style.setProperty('--figure1-max-width', max);
  };
  let queued = false;
  const later = () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; fit(); });
  };
  onChange(later);
  window.addEventListener('resize', later);
}

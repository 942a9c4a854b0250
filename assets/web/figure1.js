/* Architecture, Figure 1: an attention block opens its heatmaps. Reads page.figure1 (the element id of Figure 1),
   page.blockClick (a hidden textbox) and page.figure1Fit (a checkbox): a click (or Enter, or Space) on a block sends
   "kind|time" there. Listened for on the document, so redraws need no new hook.

   Figure 1 is drawn at the page's width (~1.37× its size at 1280 px: its notes ~14 px, ~1,180 px tall). Asked for
   (the checkbox), on a wide screen, it is drawn whole on the tab's first screen, the checkbox under it: no wider than
   the room between its top (the page scrolled to the top) and the checkbox allows at its shape (--figure1-max-width,
   app.css; measured as the page changes and the window is resized): ~0.46× its size at 1280×720, its notes ~5 px,
   its blocks' names ~6 px (a block's title says what it is). Not in presentation mode or the lecture (their texts
   at 16 px or more). */
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

  // px: the least height it is fitted to; the gap left under the checkbox; a phone's width (app.css: scrolled sideways)
  const MIN_ROOM = 320, FOOT = 12, PHONE_PX = 640;
  const fit = () => {
    const figure = document.getElementById(page.figure1), svg = figure && figure.querySelector('svg.tf-figure');
    const full = document.getElementById(page.figure1Fit), box = full && full.querySelector('input');
    document.body.classList.toggle('attn-figure1-fit', !!(box && box.checked));
    if (!svg || !svg.getClientRects().length || !svg.viewBox.baseVal || !svg.viewBox.baseVal.height) return;
    const {width, height} = svg.viewBox.baseVal, under = full ? full.getBoundingClientRect().height : 0;
    const drawn = svg.getBoundingClientRect(), below = (full ? full.getBoundingClientRect().top : drawn.bottom) - drawn.bottom;
    const room = Math.max(MIN_ROOM, innerHeight - (drawn.top + scrollY) - below - under - FOOT);
    const max = innerWidth > PHONE_PX ? `${Math.floor(room * width / height)}px` : 'none';  // (a phone: scrolled)
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
  document.addEventListener('change', (ev) => { if (ev.target.closest(`#${page.figure1Fit}`)) fit(); });
}

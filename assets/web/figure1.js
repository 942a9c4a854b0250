/* Architecture, Figure 1: an attention block opens its heatmaps. Reads page.figure1 (the element id of Figure 1) and
   page.blockClick (a hidden textbox): a click (or Enter, or Space) on a block sends "kind|time" there. Listened for on
   the document, so redraws need no new hook. */
(page, {send}) => {
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
}

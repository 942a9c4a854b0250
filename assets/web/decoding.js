/* Decoding tab: the left and right arrow keys press Previous and Next (page.stepPrev, page.stepNext: the buttons'
   element ids), unless focus is in a field (a slider or a radio keeps its own arrow keys) and only while the tab is
   shown. */
(page) => {
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

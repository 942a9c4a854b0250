/* Lab tab: the time-lapse's ▶ Play presses Next ▶ (page.labNext) once a second until the last training snapshot, or
   until it is pressed again (❚❚ Pause); from the last snapshot it starts over at the untrained model. It never starts
   by itself, and nothing moves but the slider and the map it draws (no transition: prefers-reduced-motion is met by
   design). Changing tab stops it. */
(page) => {
  let timer = null;
  const button = () => document.getElementById(page.labPlay);
  const slider = () => document.querySelector(`#${page.labStep} input[type=range]`);
  const stop = () => {
    clearInterval(timer);
    timer = null;
    const btn = button();
    if (btn) {
      btn.textContent = '▶ Play';
      btn.setAttribute('aria-pressed', 'false');
    }
  };
  const tick = () => {
    const s = slider(), next = document.getElementById(page.labNext);
    if (!s || !next || next.offsetParent === null) return stop();  // the tab was left
    const at = Number(s.value), last = Number(s.max);
    next.click();  // from the last snapshot: the first (assets/web/events.js, snapshotNext)
    if (at !== last && at + 1 >= last) stop();  // this press draws the last snapshot
  };
  document.addEventListener('click', (ev) => {
    const btn = ev.target && ev.target.closest && ev.target.closest(`#${page.labPlay}`);
    if (!btn) return;
    if (timer) return stop();
    btn.textContent = '❚❚ Pause';
    btn.setAttribute('aria-pressed', 'true');
    tick();
    if (timer === null && btn.getAttribute('aria-pressed') === 'true') timer = setInterval(tick, 1000);
  });
}

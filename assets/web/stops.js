/* Fewer Tab stops before a tab's main figure.
   - A row of buttons and choices that is one Tab stop, ARIA's toolbar (page.toolbars: element id -> its name). Tab
     enters it at the control used last (at first its first), the Left and Right arrow keys (Home, End) move between
     its controls, and each control keeps its own keys: Enter presses a button, Space ticks a box, Up and Down open a
     menu. A text field that can be typed in keeps Left and Right for its caret (the row's menu is a list, not typed).
   - Choices set rarely, folded under a button that names what they are set to (page.folds: button id -> the folded
     row's id, class attn-folded, a11y.css): the button shows or hides them (aria-expanded). Hidden, they take no Tab
     stop but stay in the page, so that a link still holds their values (a folded gr.Accordion leaves them out). */
(page, {onChange}) => {
  const ITEMS = 'button, input:not([type=hidden]), select, textarea, a[href]';
  const itemsOf = (bar) => [...bar.querySelectorAll(ITEMS)].filter((e) => !e.disabled && e.getClientRects().length);
  const typed = (e) => (e instanceof HTMLTextAreaElement || (e instanceof HTMLInputElement
    && !['checkbox', 'radio', 'button', 'range'].includes(e.type))) && !e.readOnly;
  const rove = (bar, to) => {  // ``to``: the control that is the row's Tab stop from now on (else the one it was)
    const items = itemsOf(bar);
    if (!items.length) return;
    if (to && items.includes(to)) bar.attnStop = to;
    const stop = items.includes(bar.attnStop) ? bar.attnStop : items[0];
    items.forEach((e) => { const want = e === stop ? 0 : -1; if (e.tabIndex !== want) e.tabIndex = want; });
  };
  const bars = () => Object.entries(page.toolbars).map(([id, name]) => {
    const bar = document.getElementById(id);
    if (bar && bar.getAttribute('role') !== 'toolbar') {
      bar.setAttribute('role', 'toolbar');
      bar.setAttribute('aria-label', name);
    }
    return bar;
  }).filter(Boolean);
  document.addEventListener('focusin', (ev) => {
    const bar = ev.target.closest && ev.target.closest('[role=toolbar]');
    if (bar) rove(bar, ev.target);
  });
  document.addEventListener('keydown', (ev) => {
    const bar = ev.target.closest && ev.target.closest('[role=toolbar]');
    if (!bar || ev.altKey || ev.ctrlKey || ev.metaKey || typed(ev.target)) return;
    const items = itemsOf(bar), i = items.indexOf(ev.target.closest(ITEMS));
    const to = {ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: items.length - 1}[ev.key];
    if (i < 0 || to === undefined) return;
    ev.preventDefault();
    items[(to + items.length) % items.length].focus();  // (focusin makes it the stop)
  });
  document.addEventListener('click', (ev) => {
    const button = ev.target.closest && ev.target.closest('button[id]');
    const row = button && page.folds[button.id] && document.getElementById(page.folds[button.id]);
    if (!row) return;
    const open = !row.classList.contains('attn-open');
    row.classList.toggle('attn-open', open);
    button.setAttribute('aria-expanded', String(open));
  });
  const folds = () => Object.entries(page.folds).forEach(([id, rowId]) => {
    const button = document.getElementById(id), row = document.getElementById(rowId);
    if (!button || !row || button.hasAttribute('aria-controls')) return;
    button.setAttribute('aria-controls', rowId);
    button.setAttribute('aria-expanded', String(row.classList.contains('attn-open')));
  });
  let queued = false;
  onChange(() => {
    if (queued) return;
    queued = true;
    window.requestAnimationFrame(() => { queued = false; bars().forEach((bar) => rove(bar)); folds(); });
  });
}

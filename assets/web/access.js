/* What Gradio's page (6.31.0) leaves out for assistive technology, added as its elements appear (shared.onChange):
   - the German text's language: lang="de" on the target box and the translation, so that a screen reader pronounces
     them as German (page.germanText: their element ids);
   - an empty plot's or file's placeholder (Gradio's Empty: a div with aria-label="Empty value" and no role, which
     ARIA forbids) gets role="img", so that its label is read;
   - a block that scrolls (a wide table on a phone: overflow auto, its content larger than its box) and holds nothing
     focusable takes a Tab stop (tabindex="0", a region named by its first line), so that it can be scrolled from the
     keyboard (WCAG 2.1.1); it gives the stop up once its content fits again. Checked as a block changes size; a
     few pixels over (a status line's rounding) are not a scroll region;
   - no motion for those who asked for none (prefers-reduced-motion): Gradio's transitions, spinners and its tabs'
     fade-in, Figure 1's fades (plotly draws without transitions: draw.js); a style of the page's own, since Gradio
     keeps app.css's @media rules inside its .contain, which the tabs are not;
   - a slider moved with the keys sends Gradio's "release" when the key is let go, as letting go of the pointer does
     (Gradio sends it only on pointerup, or as its number box loses the focus): a listener of release hears keys. */
(page, {onChange}) => {
  const german = page.germanText.map((id) => `#${id} textarea:not([lang]), #${id} input:not([lang])`).join(', ');
  const SLACK = 13;  // px over that hide nothing (a status line rounded up, room for a focus ring)
  const FOCUSABLE = 'a[href], button, input, select, textarea, [tabindex]:not([data-attn-scroll])';
  const scrolls = (e) => {
    const cs = getComputedStyle(e);
    const x = /auto|scroll/.test(cs.overflowX) && e.scrollWidth > e.clientWidth + SLACK;
    const y = /auto|scroll/.test(cs.overflowY) && e.scrollHeight > e.clientHeight + SLACK;
    return (x || y) && !e.querySelector(FOCUSABLE) ? (x ? 'x' : 'y') : '';  // which way it scrolls
  };
  const reachable = (e) => {
    if (e.querySelector('.progress-text, .eta-bar')) {  // Gradio's progress over it: measured once it has gone
      window.setTimeout(() => e.isConnected && reachable(e), 500);
      return;
    }
    const way = scrolls(e);
    if (way) {
      if (e.getAttribute('data-attn-scroll') === way) return;
      e.setAttribute('data-attn-scroll', way);  // (x: app.css says "scroll sideways" on a narrow screen)
      e.setAttribute('tabindex', '0');
      e.setAttribute('role', 'region');
      e.setAttribute('aria-label', `${(e.innerText || '').trim().split('\n')[0].slice(0, 60)} (scrolls)`);
    } else if (e.hasAttribute('data-attn-scroll')) {
      for (const name of ['data-attn-scroll', 'tabindex', 'role', 'aria-label']) e.removeAttribute(name);
    }
  };
  document.head.appendChild(Object.assign(document.createElement('style'), {textContent: `
    @media (prefers-reduced-motion: reduce) { *, *::before, *::after { animation-duration: 0.01ms !important;
      animation-iteration-count: 1 !important; transition-duration: 0.01ms !important;
      scroll-behavior: auto !important; } }`}));
  const KEYS = new Set(['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown', 'Home', 'End', 'PageUp', 'PageDown']);
  document.addEventListener('keyup', (ev) => {
    const range = ev.target;
    if (range instanceof HTMLInputElement && range.type === 'range' && KEYS.has(ev.key)) {
      range.dispatchEvent(new PointerEvent('pointerup', {bubbles: true}));
    }
  });
  const sized = new ResizeObserver((entries) => entries.forEach(({target}) => target.isConnected && reachable(target)));
  const watched = new WeakSet();
  // Once per burst of changes (a task's), not once per change: each pass queries the whole page three times.
  let queued = false;
  onChange(() => {
    if (queued) return;
    queued = true;
    setTimeout(mark);
  });
  const mark = () => {
    queued = false;
    for (const box of document.querySelectorAll(german)) box.setAttribute('lang', 'de');
    for (const empty of document.querySelectorAll('.empty[aria-label]:not([role])')) empty.setAttribute('role', 'img');
    for (const block of document.querySelectorAll('.block, .prose table')) {
      if (watched.has(block)) continue;
      watched.add(block);
      sized.observe(block);
    }
  };
}

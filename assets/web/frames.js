/* Before Gradio's own script (viz.ui.guards puts it first in the page's <head>): Gradio 6.31.0's loading screen
   starts a status tracker's timer, a requestAnimationFrame loop, and removes the tracker while the loop runs: the
   loop never stops, so every open page asks for 60 frames a second for as long as it is open (~6 % of a core for an
   idle page; a phone's battery). A status tracker's frames wait a quarter of a second instead while no timer is
   shown (Gradio shows one in .progress-text or .eta-bar while an answer is awaited; looked up at most every 100 ms):
   a timer on screen still runs at every frame. Every other caller of requestAnimationFrame (plotly, Gradio's
   transitions, many a frame) is told apart by its callback's short source alone, and goes on untouched. */
(() => {
  const frame = window.requestAnimationFrame.bind(window);
  let shown = false, lookedAt = -Infinity;
  const timerShown = () => {
    const now = performance.now();
    if (now - lookedAt > 100) {
      shown = document.querySelector('.progress-text, .eta-bar') !== null;
      lookedAt = now;
    }
    return shown;
  };
  const trackerLoop = (callback) => {  // the timer's step: ()=>{…(performance.now()-…)/1e3…}, from statustracker
    if (typeof callback !== 'function') return false;
    const source = Function.prototype.toString.call(callback);
    return source.length < 200 && source.includes('performance.now()') && /statustracker/.test(new Error().stack || '');
  };
  window.requestAnimationFrame = (callback) => {
    if (trackerLoop(callback) && !timerShown()) return window.setTimeout(() => callback(performance.now()), 250);
    return frame(callback);
  };
})();

/* Before Gradio's own script (viz.ui.guards puts it first in the page's <head>): Gradio 6.31.0's loading screen
   starts a status tracker's timer, a requestAnimationFrame loop, and removes the tracker while the loop runs: the
   loop never stops, so every open page asks for 60 frames a second for as long as it is open (~6 % of a core for an
   idle page; a phone's battery). A status tracker's frames wait a quarter of a second instead while no timer is
   shown (Gradio shows one in .progress-text or .eta-bar while an answer is awaited): a timer on screen still runs
   at every frame, and every other caller of requestAnimationFrame (plotly, Gradio's transitions) is untouched. */
(() => {
  const frame = window.requestAnimationFrame.bind(window);
  window.requestAnimationFrame = (callback) => {
    if (!document.querySelector('.progress-text, .eta-bar') && /statustracker/.test(new Error().stack || '')) {
      return window.setTimeout(() => callback(performance.now()), 250);
    }
    return frame(callback);
  };
})();

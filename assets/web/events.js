/* What some listeners do in the browser alone, with no round trip to the server: a listener's js= is one of these
   functions, picked by name in Python (viz.ui.wiring.in_browser, which reads this file: one entry a line,
   "  name: function,"). Each gets the values Python bound to it, then the listener's input values, and returns its
   output values. Gradio runs it before the listener's Python function, if it has one. */
({
  // The Decoding tab's ◀ Previous and Next ▶ (and the arrow keys, assets/web/decoding.js): one step back or on.
  stepPrev: (step) => Math.max(1, step - 1),
  stepNext: (step) => Math.min(Number(document.querySelector('#decode-step input[type=range]').max), step + 1),
  // The Lab's time-lapse: the next training snapshot (after the last: the first again, so ▶ Play starts over).
  snapshotNext: (step) => (step >= Number(document.querySelector('#lab-step input[type=range]').max) ? 0 : step + 1),
  // A step, its Reveal, or a head, drawn from every step's view the page holds (assets/web/decoding.js): no round trip.
  decodeStep: (frames, held, step, predict, head) => window.attnDecodeStep(frames, held, step, !predict, head),
  decodeReveal: (frames, held, step, head) => window.attnDecodeStep(frames, held, step, true, head).slice(0, 3),
  decodeHead: (...inputs) => window.attnDecodeHead(...inputs),
  // … and every head's view of the layer shown asked for once the page is idle (assets/web/decoding.js).
  decodeFrames: (frames) => window.attnDecodeFrames(frames),
  // Head analysis: the statistic's grid drawn from every statistic's grid the page holds (assets/web/heads.js).
  headsStat: (frames, stat) => window.attnHeadsStat(frames, stat),
  // Inside a head: a new query's figures drawn in the figures shown (assets/web/inside.js).
  insideQuery: (frames) => window.attnInsideQuery(frames),
  // Inside a head: every query's figures of the head shown, held; a new query drawn from them before its call is sent.
  insideHold: (held) => window.attnInsideHold(held),
  insideHeld: (...inputs) => window.attnInsideHeld(...inputs),
  // A message shown at once: a sentence typed but not yet run (the figures still show the last run).
  show: (message) => message,
  // A lecture's move on its way: the listener's first input replaced by the marker (viz.ui.wiring.unless_moving).
  whileMoving: (marker, ...inputs) => (window.attnLectureMoving && window.attnLectureMoving() ? [marker, ...inputs.slice(1)] : inputs),
  // The alignment view is out of date: assets/web/lines.js asks for it again once it is on screen.
  linesStale: () => window.attnLinesStale(),
  // The Attention tab's "Copy link to this view" and its figures' downloads (assets/web/export.js).
  copyLink: () => window.attnCopyLink(),
  download: (plotId, format) => window.attnDownload(plotId, format),
})

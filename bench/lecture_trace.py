"""Where a lecture move's time goes: the page's own timeline of each move of ``bench.lecture_walk``'s walk — the key,
each event sent (its name), each answer's arrival (its size), each ``Plotly.react`` (the figure, its time), the
browser's long tasks — until the stop is drawn.

    python -m bench.lecture_trace [--walks 1] [--url http://127.0.0.1:7860/]

A tool for reading, not a row of the bench: the page is wrapped (``fetch``, the answers' stream, ``Plotly.react``),
which costs a little itself.
"""

from __future__ import annotations

import argparse
from urllib.parse import urlencode

from bench.browser import CHROMIUM, CHROMIUM_ARGS
from bench.common import app_process
from bench.lecture_walk import DRAWN
from viz.views import lecture

# Installed before the page's own scripts: fetch (the events sent, the answers' stream), Plotly.react, long tasks,
# the keys. Each entry: {t: performance.now(), k: kind, ...}.
TRACE = r"""(() => {
  const T = window.benchTrace = [], now = () => performance.now();
  const fetch0 = window.fetch;
  window.fetch = async function (input, init) {
    const url = typeof input === 'string' ? input : (input && input.url) || String(input);
    let fn = null;
    if (url.includes('queue/join') || url.includes('/run/')) {
      try { fn = JSON.parse(init.body).fn_index; } catch (e) { /* not an event */ }
      T.push({t: now(), k: 'send', fn, bytes: init && init.body ? init.body.length : 0});
    }
    const res = await fetch0.apply(this, arguments);
    if (url.includes('queue/data') && res.body) {
      const [mine, theirs] = res.body.tee(), reader = theirs.getReader(), dec = new TextDecoder();
      let buf = '';
      (async () => {
        for (;;) {
          const {value, done} = await reader.read();
          if (done) break;
          buf += dec.decode(value, {stream: true});
          let i;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            const line = buf.slice(0, i).split('\n').find((l) => l.startsWith('data:'));
            buf = buf.slice(i + 2);
            if (!line) continue;
            try {
              const m = JSON.parse(line.slice(5));
              if (m.msg !== 'heartbeat') T.push({t: now(), k: m.msg, id: m.event_id, bytes: line.length});
            } catch (e) { /* a partial message */ }
          }
        }
      })();
      return new Response(mine, {status: res.status, statusText: res.statusText, headers: res.headers});
    }
    if (url.includes('/run/')) T.push({t: now(), k: 'ran', fn});
    if (url.includes('queue/join')) res.clone().json().then((j) => T.push({t: now(), k: 'joined', fn, id: j.event_id}));
    return res;
  };
  const wrap = (p) => {
    if (p && !p.benchTraced) {
      for (const name of ['react', 'newPlot', 'relayout', 'restyle', 'update']) {
        const f = p[name];
        if (typeof f !== 'function') continue;
        p[name] = function (gd, ...rest) {
          const at = now(), el = gd && gd.closest && gd.closest('[id]');
          const shown = !!(gd && gd.getClientRects && gd.getClientRects().length);
          const top = shown ? Math.round(gd.getBoundingClientRect().top) : null;  // (before the draw)
          const entry = {t: at, k: name, plot: el ? el.id : '?', top, shown};
          if (name === 'relayout' && rest[0] && typeof rest[0] === 'object') entry.keys = Object.keys(rest[0]);
          const out = f.call(this, gd, ...rest);
          entry.sync = Math.round(now() - at);
          T.push(entry);
          if (out && out.then) out.then(() => { entry.done = Math.round(now() - at); }, () => {});
          return out;
        };
      }
      if (p.Plots && p.Plots.resize) {
        const resize = p.Plots.resize;
        p.Plots.resize = function (gd) {
          const at = now(), el = gd && gd.closest && gd.closest('[id]'), out = resize.call(this, gd);
          T.push({t: at, k: 'resize', plot: el ? el.id : '?', sync: Math.round(now() - at)});
          return out;
        };
      }
      p.benchTraced = true;
    }
    return p;
  };
  let plotly;  // (the page's draw.js puts a setter of its own on window.Plotly: this one runs first)
  Object.defineProperty(window, 'Plotly', {configurable: true, get: () => plotly, set: (p) => { plotly = wrap(p); }});
  const define = Object.defineProperty;
  Object.defineProperty = function (target, key, desc) {
    if (target === window && key === 'Plotly' && desc && desc.set) {
      const theirs = desc.set;
      desc = {...desc, set: (p) => theirs(wrap(p))};
    }
    return define.call(this, target, key, desc);
  };
  new PerformanceObserver((list) => list.getEntries().forEach((e) => T.push({t: e.startTime, k: 'longtask',
    ms: Math.round(e.duration)}))).observe({type: 'longtask', buffered: true});
  window.addEventListener('keydown', (ev) => T.push({t: now(), k: 'key', key: ev.key}), {capture: true});
})();"""

NAMES = """() => {
  const c = window.gradio_config, ids = {};
  for (const comp of c.components) ids[comp.id] = (comp.props && comp.props.elem_id) || comp.type + comp.id;
  return Object.fromEntries(c.dependencies.map((d, i) => [d.id ?? i, (d.api_name || '') + ' ← '
    + d.targets.map(([id, ev]) => `${ids[id] || id}.${ev}`).join(',') + (d.js ? ' (js)' : '')
    + ` [${d.outputs.length} out]`]));
}"""


def trace(url: str, walks: int, text: str = "", timeout_ms: float = 90_000, transitions: bool = True,
          pause_ms: int = 400) -> None:
    from playwright.sync_api import sync_playwright  # a test requirement only

    stops = len(lecture.STOPS)
    query = {"lecture": "1", "stop": "1", **({"text": text} if text else {})}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 720})
            context.add_init_script(TRACE)
            if not transitions:  # what the view transition (the stop shown held until the next is drawn) costs
                context.add_init_script("delete Document.prototype.startViewTransition;")
            page = context.new_page()
            page.goto(f"{url}?{urlencode(query)}")
            page.wait_for_function(DRAWN, arg=1, timeout=timeout_ms)
            page.wait_for_timeout(1500)
            page.evaluate("() => { window.benchTrace.length = 0; }")
            n, keys = 1, []
            for _ in range(walks):
                for step in [1] * (stops - 1) + [-1] * (stops - 1):
                    tab = lecture.STOPS[n - 1].tab
                    page.keyboard.press(("PageDown" if step > 0 else "PageUp") if tab == "decoding"
                                        else ("ArrowRight" if step > 0 else "ArrowLeft"))
                    keys.append((n, n + step))
                    n += step
                    page.wait_for_function(DRAWN, arg=n, timeout=timeout_ms)
                    page.wait_for_timeout(pause_ms)  # what a move leaves running after the stop is drawn
            events = page.evaluate("() => window.benchTrace")
            moves = page.evaluate("() => window.attnLectureMoves")
            names = page.evaluate(NAMES)
        finally:
            browser.close()
    key_at = [e["t"] for e in events if e["k"] == "key"]
    moves = moves[-len(keys):]
    fn_of = {}
    for i, (start, (a, b)) in enumerate(zip(key_at, keys, strict=False)):
        end = key_at[i + 1] if i + 1 < len(key_at) else float("inf")
        print(f"\nstop {a} → {b}: drawn at {moves[i]['ms']} ms")
        for e in events:
            if not start <= e["t"] < end or e["k"] == "key":
                continue
            t = f"{e['t'] - start:7.0f}"
            if e["k"] == "send":
                print(f"{t}  send {names.get(str(e['fn']), e['fn'])} ({e['bytes'] // 1000} kB sent)")
            elif e["k"] == "ran":
                print(f"{t}  answer (unqueued) {names.get(str(e['fn']), e['fn'])[:60]}")
            elif e["k"] == "joined":
                fn_of[e["id"]] = e["fn"]
            elif e["k"] in ("process_starts", "estimation", "progress", "process_generating"):
                continue
            elif e["k"] == "process_completed":
                print(f"{t}  answer {names.get(str(fn_of.get(e['id'])), '?')[:60]} ({e['bytes'] // 1000} kB)")
            elif e["k"] == "longtask":
                print(f"{t}  long task {e['ms']} ms")
            elif e["k"] in ("react", "newPlot"):
                print(f"{t}  {e['k']} {e['plot']}@{e.get('top')}{'' if e['shown'] else ' (hidden)'} {e['sync']} ms"
                      f" (done {e.get('done', '?')})")
            elif e["k"] in ("relayout", "restyle", "update", "resize"):
                print(f"{t}  {e['k']} {e['plot']} {e['sync']} ms {' '.join(e.get('keys', []))}")
            else:
                print(f"{t}  {e['k']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--walks", type=int, default=1)
    parser.add_argument("--text", default="", help="the sentence (default: the lecture's own)")
    parser.add_argument("--url", default="", help="an app already running (default: start one)")
    parser.add_argument("--without-transitions", action="store_true", help="the page without view transitions")
    parser.add_argument("--pause", type=int, default=400,
                        help="ms after each stop is drawn before the next key (0: at once, as bench.lecture_walk)")
    args = parser.parse_args()
    if args.url:
        trace(args.url, args.walks, args.text, transitions=not args.without_transitions, pause_ms=args.pause)
        return
    with app_process(("-m", "bench.serve")) as app:
        trace(app.url, args.walks, args.text, transitions=not args.without_transitions, pause_ms=args.pause)


if __name__ == "__main__":
    main()

"""Screenshots of every stop of the lecture (viz.views.lecture) at a projector's 1280×720, light and dark, to look at
(they are not tests; tests/test_browser_lecture.py walks the lecture and measures it).

    python -m bench.lecture_shots                                # starts `python app.py` on a free loopback port
    python -m bench.lecture_shots --out /tmp/lecture-shots --only 3 --only 10
    python -m bench.lecture_shots --url http://127.0.0.1:7860/   # an app already running (loopback only)
    python -m bench.lecture_shots --text "A man in a blue shirt is playing the guitar on the street."
    python -m bench.lecture_shots --size 390x844                 # a phone's screen

Each stop is opened by its link (``?lecture=1&stop=N``, ``&__theme=dark``), as Next opens it; the shot is taken once
the stop's mark and its figure (or the part of it the stop names) are on screen and the page keeps still:
``stop-NN-<theme>.png`` (the screen, what a class sees; ``stop-NN-<theme>-<size>.png`` at another size). Printed
for each: the file, and where the mark, that figure and the caption bar are (what lies below the bar's top is not
seen). Anything the page did that it never should (a console error other than a stream cut by leaving a page, a request
off loopback) is printed too, and the exit status is then 1.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlencode

from bench.browser import CHROMIUM, CHROMIUM_ARGS
from bench.common import is_loopback
from bench.screenshots import SETTLED, TIMEOUT_MS, app_url
from viz.views import lecture

OUT = Path("/tmp/lecture-shots")
WIDTH, HEIGHT = 1280, 720
LEFT_BEHIND = re.compile(r"AbortError|Connection errored out")  # a page left while its stream was open
# The stop's mark on screen above the caption bar, and the figure it marks (or the part its frame names) with it: then
# the page has opened the stop's view and fitted the screen to it.
SHOWN = """(n) => {
  const bar = document.getElementById('lecture-bar');
  if (!bar || JSON.parse(bar.dataset.lecture).stop !== n || !window.attnLectureMark) return false;
  const b = bar.getBoundingClientRect(), inside = (r) => !!r && r.top >= 0 && r.bottom <= b.top;
  const frame = window.attnLectureFrame();  // (a frame taller than the screen above the bar: the mark alone)
  return inside(window.attnLectureMark()) && (inside(frame) || (!!frame && frame.bottom - frame.top > b.top));
}"""
WHERE = """() => {
  const bar = document.getElementById('lecture-bar').getBoundingClientRect(), mark = window.attnLectureMark();
  const r = (b) => b && [Math.round(b.top), Math.round(b.bottom)];
  return {mark: r(mark), figure: r(window.attnLectureFrame()), bar: r(bar), scrollY: Math.round(scrollY)};
}"""


def shoot(page, n: int, theme: str, out: Path, text: str = "", size: str = "") -> Path:
    query = {"lecture": "1", "stop": str(n), **({"text": text} if text else {}),
             **({"__theme": "dark"} if theme == "dark" else {})}
    page.goto(f"?{urlencode(query)}")
    page.wait_for_function(SHOWN, arg=n)
    page.evaluate(SETTLED)
    path = out / f"stop-{n:02d}-{theme}{f'-{size}' if size else ''}.png"
    page.screenshot(path=str(path))
    print(path, page.evaluate(WHERE), flush=True)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.lecture_shots", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", type=int, default=[], metavar="N", help="stop N only; repeatable")
    parser.add_argument("--theme", action="append", choices=("light", "dark"), default=[], help="default: both")
    parser.add_argument("--out", type=Path, default=OUT, help=f"the folder to write to (default: {OUT})")
    parser.add_argument("--url", help="an app already running on loopback (default: start `python app.py`)")
    parser.add_argument("--text", default="", help="a visitor's own sentence (default: the lecture's)")
    parser.add_argument("--size", default=f"{WIDTH}x{HEIGHT}", help="the screen, WIDTHxHEIGHT (default: a projector's)")
    args = parser.parse_args(argv)
    stops = args.only or range(1, len(lecture.STOPS) + 1)
    width, height = (int(v) for v in args.size.split("x"))
    size = "" if (width, height) == (WIDTH, HEIGHT) else args.size
    args.out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright  # a test requirement only

    problems: list[str] = []
    with app_url(args.url) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for theme in args.theme or ("light", "dark"):
                context = browser.new_context(viewport={"width": width, "height": height}, base_url=url)
                context.set_default_timeout(TIMEOUT_MS)
                page = context.new_page()
                page.on("console", lambda m: m.type == "error" and not LEFT_BEHIND.search(m.text)
                        and problems.append(f"console: {m.text}"))
                page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
                page.on("request", lambda r: None if is_loopback(r.url) else problems.append(f"off loopback: {r.url}"))
                try:
                    for n in stops:
                        shoot(page, n, theme, args.out, args.text, size)
                finally:
                    context.close()
        finally:
            browser.close()
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())

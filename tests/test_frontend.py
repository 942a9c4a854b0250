"""Gradio's page script as the app serves it (viz.ui.frontend): the installed Gradio's file, patched so that a status
message writes back only the loading statuses it changes — the patch applies to this Gradio, the app serves it
(plain, Brotli, 304 for the same ETag), and the patched methods, run in Chromium, write what changed and only that."""

from __future__ import annotations

import urllib.request

import brotli
import pytest

from viz.ui import frontend

# The patched methods in a stand-in for Gradio's dispatcher: a record of each write of a component's state
HARNESS = """([method]) => {
  const C = eval(`(class {
    constructor() { this.loading_stati = {current: {}}; this.writes = []; }
    update_state_cb(e, t, n) { this.writes.push([e, JSON.stringify(t)]); return Promise.resolve(); }
    ${method}
  })`);
  window.C = C;
  return true;
}"""


@pytest.fixture(scope="module")
def script() -> tuple[str, bytes, str]:
    found = frontend.patched_script()
    assert found is not None, "the installed Gradio's Blocks-*.js is not the one viz.ui.frontend patches"
    return found


def test_the_patch_applies_to_the_installed_gradio_and_changes_only_the_status_writes(script):
    path, body, _ = script
    original = frontend.script_path().read_bytes()
    assert path == f"/assets/{frontend.script_path().name}"
    assert body.count(b"update_loading_stati_state(){") == 1 and b"this.__statuses" in body
    # every other write goes through __written (which forgets the status written); two calls stay Gradio's own
    assert body.count(b"this.update_state_cb(") == 2 and body.count(b"this.__written(") == original.count(
        b"this.update_state_cb(") - 1
    assert body.replace(frontend._WRITE.encode(), frontend._REFRESH.encode()).replace(
        frontend.WRITTEN, frontend.CALL) == original


def test_the_app_serves_the_patched_script_plain_compressed_and_not_again(serve, script):
    url = serve("tiny").url.rstrip("/")
    path, body, etag = script
    with urllib.request.urlopen(urllib.request.Request(url + path, headers={"Accept-Encoding": "identity"}),
                                timeout=60) as answer:
        assert answer.read() == body and answer.headers["ETag"] == etag
        assert answer.headers["Content-Type"].startswith("text/javascript")
    with urllib.request.urlopen(urllib.request.Request(url + path, headers={"Accept-Encoding": "gzip, br"}),
                                timeout=60) as answer:
        assert answer.headers["Content-Encoding"] == "br" and brotli.decompress(answer.read()) == body
    again = urllib.request.Request(url + path, headers={"If-None-Match": etag})
    with pytest.raises(urllib.error.HTTPError) as seen:
        urllib.request.urlopen(again, timeout=60)
    assert seen.value.code == 304


@pytest.mark.browser
def test_a_status_is_written_once_until_it_changes_or_another_write_touches_its_component(browser):
    page = browser.new_page()
    try:
        page.evaluate(HARNESS, [frontend._WRITE])
        writes = page.evaluate("""async () => {
          const c = new C(), rounds = [];
          const refresh = async () => { c.writes = []; await c.update_loading_stati_state();
                                        rounds.push(c.writes.map(([e]) => e)); };
          c.loading_stati.current = {1: {status: 'pending'}, 2: {status: 'complete'}, 3: {}};
          await refresh();                                      // all three, the first time
          await refresh();                                      // nothing changed: none
          c.loading_stati.current[2] = {status: 'pending', eta: 1};
          await refresh();                                      // the one that changed
          await c.__written(3, {loading_status: {validation_error: null}}, false);
          await refresh();                                      // 3 again: another write changed its state
          c.loading_stati.current[4] = {status: 'pending'};
          await refresh();                                      // a new one
          return rounds; }""")
    finally:
        page.close()
    assert writes == [[1, 2, 3], [], [2], [3], [4]]

"""The page rendered once per way of asking and kept (viz.ui.page_cache.PageCache), and as the served app sends it."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import anyio
import brotli

from viz.ui.page_cache import PageCache


def _page(scope) -> bytes:
    headers = dict(scope["headers"])
    return (b"<html><head></head><body>" + headers.get(b"host", b"?") + headers.get(b"x-forwarded-proto", b"")
            + scope["path"].encode() + b"x" * 2000 + b"</body></html>")


def _serve(cache: PageCache, rendered: list, status: int = 200):
    async def render(scope, receive, send):
        rendered.append(scope)
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"text/html; charset=utf-8")]})
        await send({"type": "http.response.body", "body": _page(scope)[:1000], "more_body": True})
        await send({"type": "http.response.body", "body": _page(scope)[1000:]})

    def get(path="/", query=b"", **headers) -> tuple[int, dict, bytes]:
        sent = []

        async def send(message):
            sent.append(message)

        scope = {"type": "http", "method": "GET", "path": path, "query_string": query, "scheme": "http",
                 "headers": [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]}
        with ThreadPoolExecutor(1) as thread:  # (a loop of its own: Playwright's may run in this thread)
            thread.submit(anyio.run, cache.answer, scope, None, send, render).result()
        head = {k.decode(): v.decode() for k, v in sent[0]["headers"]}
        return sent[0]["status"], head, b"".join(m.get("body", b"") for m in sent[1:])

    return get


def test_a_page_is_rendered_once_per_way_of_asking_and_sent_compressed_to_who_takes_it():
    rendered, cache = [], PageCache(limit=2)
    get = _serve(cache, rendered)
    scope = {"path": "/", "headers": [(b"host", b"hall")]}
    status, head, body = get(host="hall")
    assert status == 200 and body == _page(scope) and head["content-length"] == str(len(body))
    status, head, packed = get(host="hall", accept_encoding="gzip, br", query=b"lecture=1&stop=3")
    assert head["content-encoding"] == "br" and head["vary"] == "Accept-Encoding" and len(packed) < len(body) / 5
    assert brotli.decompress(packed) == body and int(head["content-length"]) == len(packed)
    assert len(rendered) == 1  # the lecture link's query says nothing Gradio renders
    assert get(host="hall", x_forwarded_proto="https")[2] == _page({"path": "/", "headers": [
        (b"host", b"hall"), (b"x-forwarded-proto", b"https")]})  # the public URL Gradio writes in differs
    assert len(rendered) == 2
    get(host="other")  # a third way: the first, used longest ago, goes (at most 2 kept)
    get(host="hall", x_forwarded_proto="https")
    assert len(rendered) == 3 and len(cache.kept) == 2
    get(host="hall")
    assert len(rendered) == 4


def test_a_deep_link_and_an_answer_that_is_no_page_are_not_kept():
    rendered, cache = [], PageCache()
    get = _serve(cache, rendered)
    for _ in range(2):
        get(query=b"deep_link=abc", host="hall")
    assert len(rendered) == 2 and not cache.kept
    failing = _serve(cache, rendered, status=500)
    for _ in range(2):
        assert failing(host="hall")[0] == 500
    assert len(rendered) == 4 and not cache.kept


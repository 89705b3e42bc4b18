"""app/serve.py's middleware: the server's root goes into every HTML page, plain or compressed, and nothing else
is touched. Driven as ASGI directly (no server), against pages written here."""

import asyncio
import gzip

from app.serve import ServerRootInPage, base_url_script

PAGE = b"<!doctype html><html><head><title>lab</title></head><body></body></html>"


def _answer(body: bytes, content_type: bytes, encoding: bytes | None = None, chunks: int = 1):
    async def app(scope, receive, send):
        headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
        if encoding:
            headers.append((b"content-encoding", encoding))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        step = -(-len(body) // chunks)
        for i in range(chunks):
            part = body[i * step : (i + 1) * step]
            await send({"type": "http.response.body", "body": part, "more_body": i < chunks - 1})

    return app


def _serve(app, method: str = "GET", kind: str = "http"):
    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request"}

    asyncio.run(ServerRootInPage(app)({"type": kind, "method": method, "path": "/lessons"}, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return dict(start["headers"]), body


def test_the_line_goes_right_after_head_and_the_length_follows():
    headers, body = _serve(_answer(PAGE, b"text/html; charset=utf-8", chunks=3))
    line = base_url_script("")
    assert body == PAGE.replace(b"<head>", b"<head>" + line)
    assert int(headers[b"content-length"]) == len(PAGE) + len(line)
    assert b'new URL("/", window.location.origin)' in line


def test_a_compressed_page_is_opened_and_compressed_again():
    headers, body = _serve(_answer(gzip.compress(PAGE), b"text/html", encoding=b"gzip"))
    assert gzip.decompress(body) == PAGE.replace(b"<head>", b"<head>" + base_url_script(""))
    assert headers[b"content-encoding"] == b"gzip" and int(headers[b"content-length"]) == len(body)


def test_scripts_heads_and_unknown_encodings_pass_untouched():
    script = b"let head = '<head>';"
    assert _serve(_answer(script, b"text/javascript"))[1] == script
    assert _serve(_answer(PAGE, b"text/html"), method="HEAD")[1] == PAGE
    assert _serve(_answer(PAGE, b"text/html"), method="POST")[1] == PAGE
    assert _serve(_answer(PAGE, b"text/html", encoding=b"br"))[1] == PAGE


def test_a_base_url_path_is_the_root_named():
    assert b'new URL("/lab", window.location.origin)' in base_url_script("lab/")
    assert b'new URL("/", window.location.origin)' in base_url_script("")

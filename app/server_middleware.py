"""Two ASGI middlewares around Streamlit's own server (app/serve.py puts them in front of it).

``ServerRootInPage``: opened at a page's own address (/lessons, /plan), Streamlit's front end does not know
whether the app is served at / or under /lessons, so it asks /lessons/_stcore/health and
/lessons/_stcore/host-config first, gets two 404s (two errors in the browser's console on every deep link), then
tries / (streamlit/streamlit#7074). The front end skips that guess when the page defines
``window.__streamlit.BACKEND_BASE_URL`` before its script loads; this middleware puts that line into the HTML
of every page, pointing at the server's root (and its ``server.baseUrlPath``, where one is set).

``CompressedScripts``: Streamlit sends its own scripts uncompressed (compressing at a Python origin costs CPU on
every request: streamlit/web/server/starlette/starlette_gzip_middleware.py). Its files are immutable (their names
carry a hash), so each is compressed once per process and kept: a first visit moves about a third of the bytes,
which a class on one Wi-Fi feels 30 times over, for one compression per file.
"""

from __future__ import annotations

import asyncio
import functools
import gzip
import json
from collections.abc import Callable
from typing import Any

from streamlit import config

MARK = b"<head>"
# Streamlit compresses its answers for a browser that accepts gzip; the page is a few kilobytes
ENCODINGS: dict[bytes, tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]]] = {
    b"identity": (bytes, bytes),
    b"gzip": (gzip.decompress, gzip.compress),
}


def base_url_script(base_path: str) -> bytes:
    """The line the page runs before Streamlit's own script: the server's root as an absolute address."""
    root = "/" + base_path.strip("/")
    return (
        f"<script>window.__streamlit = Object.assign({{}}, window.__streamlit, "
        f"{{BACKEND_BASE_URL: new URL({json.dumps(root)}, window.location.origin).href}});</script>"
    ).encode()


async def answer(send: Any, start: dict, body: bytes) -> None:
    """Send ``start`` with its length set to ``body``'s, then ``body``."""
    kept = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
    headers = [*kept, (b"content-length", str(len(body)).encode())]
    await send({**start, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class ServerRootInPage:
    """An ASGI middleware: in an HTML answer to a GET, the base-URL line goes right after ``<head>`` (the length
    header follows; a compressed page is opened and compressed again). Everything else — the websocket, scripts,
    uploads — passes through untouched."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "GET":
            await self.app(scope, receive, send)
            return
        held: dict[str, Any] = {}  # the page's start message and encoding, until its whole body is here
        body: list[bytes] = []

        async def send_with_root(message: dict) -> None:
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers", []))
                encoding = headers.get(b"content-encoding", b"identity")
                if headers.get(b"content-type", b"").startswith(b"text/html") and encoding in ENCODINGS:
                    held.update(start=message, encoding=encoding)
                    return
            if "start" not in held or message["type"] != "http.response.body":
                await send(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body"):
                return
            decode, encode = ENCODINGS[held["encoding"]]
            line = base_url_script(config.get_option("server.baseUrlPath"))
            page = encode(decode(b"".join(body)).replace(MARK, MARK + line, 1))
            await answer(send, held["start"], page)

        await self.app(scope, receive, send_with_root)


SCRIPT_TYPES = (b"application/javascript", b"text/javascript", b"text/css", b"application/json", b"image/svg+xml")
"""What Streamlit's static folder holds that compresses well (its fonts and images are compressed already)."""
KEPT_BYTES = 64 * 1024 * 1024
"""The compressed copies one process keeps, at most (Streamlit's static folder compresses to about 12 MB)."""
LEVEL = 6
GZIP_HEADERS = ((b"content-encoding", b"gzip"), (b"vary", b"Accept-Encoding"))


class CompressedScripts:
    """An ASGI middleware: a GET of ``/static/…`` from a browser that accepts gzip is answered with the file
    compressed, from this process's copy after the first time. A conditional or ranged request, another method,
    an answer other than 200 or one already encoded pass through as they are."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.copies: dict[str, tuple[dict, bytes]] = {}
        self.locks: dict[str, asyncio.Lock] = {}
        self.kept = 0

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if not self._wanted(scope):
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        # a class arriving at once asks for the same files together: one compresses, the others wait for its copy
        async with self.locks.setdefault(path, asyncio.Lock()):
            if path not in self.copies:
                await self._compress(scope, receive, send)
                return
        start, body = self.copies[path]
        await answer(send, start, body)

    async def _compress(self, scope: dict, receive: Any, send: Any) -> None:
        """The app's answer, compressed when it is a script that went well, and kept while there is room."""
        first: dict = {}
        parts: list[bytes] = []

        async def keep(message: dict) -> None:
            if message["type"] == "http.response.start":
                first.update(message)
            elif message["type"] == "http.response.body":
                parts.append(message.get("body", b""))
            else:
                await send(message)

        await self.app(scope, receive, keep)
        body = b"".join(parts)
        headers = dict(first.get("headers", []))
        fresh = first.get("status") == 200 and b"content-encoding" not in headers
        if not fresh or not headers.get(b"content-type", b"").startswith(SCRIPT_TYPES):
            await answer(send, first, body)
            return
        # off the event loop (zlib lets go of the GIL): Streamlit's 4.6 MB chart script takes about 0.1 s
        compressed = await asyncio.to_thread(functools.partial(gzip.compress, body, compresslevel=LEVEL, mtime=0))
        encoded = {**first, "headers": [*first.get("headers", []), *GZIP_HEADERS]}
        if self.kept + len(compressed) <= KEPT_BYTES:
            self.copies[scope["path"]] = (encoded, compressed)
            self.kept += len(compressed)
        await answer(send, encoded, compressed)

    @staticmethod
    def _wanted(scope: dict) -> bool:
        if scope["type"] != "http" or scope.get("method") != "GET":
            return False
        base = "/" + config.get_option("server.baseUrlPath").strip("/")
        if not scope.get("path", "").startswith(base.rstrip("/") + "/static/"):
            return False
        headers = dict(scope.get("headers", []))
        if b"range" in headers or b"if-none-match" in headers or b"if-modified-since" in headers:
            return False
        return b"gzip" in headers.get(b"accept-encoding", b"").lower()

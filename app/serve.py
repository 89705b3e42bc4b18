"""What `streamlit run app/serve.py` serves: the lab's pages (app/streamlit_app.py) as an ``st.App``, with one
change to the page Streamlit sends — it says where the server is.

Why: opened at a page's own address (/lessons, /plan), Streamlit's front end does not know whether the app is
served at / or under /lessons, so it asks /lessons/_stcore/health and /lessons/_stcore/host-config first, gets
two 404s (two errors in the browser's console on every deep link), then tries / (streamlit/streamlit#7074).
The front end skips that guess when the page defines ``window.__streamlit.BACKEND_BASE_URL`` before its
script loads; this middleware puts that line into the HTML of every page, pointing at the server's root (and
its ``server.baseUrlPath``, where one is set)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from typing import Any

import streamlit as st
from starlette.middleware import Middleware
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
            start = held["start"]
            kept = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
            await send({**start, "headers": [*kept, (b"content-length", str(len(page)).encode())]})
            await send({"type": "http.response.body", "body": page})

        await self.app(scope, receive, send_with_root)


app = st.App("streamlit_app.py", middleware=[Middleware(ServerRootInPage)])

"""Three ASGI middlewares around Streamlit's own server (app/serve.py puts them in front of it).

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

``ChartLibrary``: serves the Plotly bundle the lab's own chart element draws with (``charts/live_chart.py``).

What a stranger sends grows nothing and costs no compression per request. A copy is kept per FILE, not per
address: ``static_name`` names the file Streamlit's server answers a path with (``//``, ``./`` and percent-encoding
folded as that server folds them; a path it refuses or answers with its page names none), and a path that names
no script file leaves no trace here (no lock, no entry). The copies are bounded by their bytes (``KEPT_BYTES``);
past that bound a file goes out as Streamlit sends it, uncompressed, rather than compressed again per request. The
table of compressions under way holds a file only while it is being compressed. ``Accept-Encoding`` is read with
its weights (RFC 9110 §12.5.3), and a HEAD answers the headers its GET would, without the body.

Slow headers (slow-loris): not bounded in this process. uvicorn 0.55 has no timeout for reading a request's head
(its ``timeout_keep_alive`` is armed only once a response is complete and cancelled by the next request's first
byte), and Streamlit 1.67 builds uvicorn's ``Config`` itself (``starlette_server._get_uvicorn_config_kwargs``) with
no option to pass one, so app/serve.py cannot set one. The deployment that faces strangers is nginx in front
(deploy/nginx-two-processes.conf, docs/deploy.md): nginx reads a whole request before it opens a connection to
this process, and its ``client_header_timeout`` and ``client_body_timeout`` (not set there, so nginx's default of
60 s each) end a client that sends its head, or its body between two reads, too slowly, with a 408; its
``large_client_header_buffers`` (default 4 × 8 KB) refuse a longer request line with a 414. A process reached
directly (``make run`` on a port open to strangers) has no such bound.
"""

from __future__ import annotations

import asyncio
import functools
import gzip
import json
import logging
import mimetypes
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import streamlit
from streamlit import config

from app.server.http_rules import accepts_gzip, static_name

LOGGER = logging.getLogger(__name__)
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


async def answer(send: Any, start: dict, body: bytes, head: bool = False) -> None:
    """Send ``start`` with its length set to ``body``'s, then ``body`` (nothing, for a HEAD: the length stays the
    one its GET would be sent with)."""
    kept = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
    headers = [*kept, (b"content-length", str(len(body)).encode())]
    await send({**start, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else body})


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
"""The compressed copies one process keeps, at most (Streamlit's 320 scripts compress from 22.9 to 6.9 MB)."""
LEVEL = 6
GZIP_HEADERS = ((b"content-encoding", b"gzip"), (b"vary", b"Accept-Encoding"))
STATIC = Path(streamlit.__file__).parent / "static"
VALIDATORS = (b"range", b"if-none-match", b"if-modified-since")
"""A request with one of these is answered by Streamlit (a part of the file, or 304), as it asked."""


def first_visit_first() -> list[str]:
    """Streamlit's scripts under /static/, those its page names first (what every first visit loads), then the
    rest (the chunks a page loads when it needs them), largest first — the order a server compresses them in at
    start."""
    named = re.findall(r'"\./(static/[^"]+\.(?:js|css))"', (STATIC / "index.html").read_text())
    every = sorted(
        str(path.relative_to(STATIC)) for kind in ("js", "css") for path in STATIC.glob(f"static/**/*.{kind}")
    )
    return [*named, *(name for name in every if name not in named)]


def weak_etag(header: tuple[bytes, bytes]) -> tuple[bytes, bytes]:
    """A compressed copy is not byte-for-byte the file its ETag names: the tag becomes weak (RFC 9110 §8.8.1)."""
    name, value = header
    if name.lower() == b"etag" and not value.startswith(b"W/"):
        return name, b"W/" + value
    return name, value


def empty_request() -> Callable:
    """A ``receive`` for a request made here: its empty body, then nothing (a disconnect would make Starlette stop
    sending the file)."""
    sent = False

    async def receive() -> dict:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()  # never set: the response is sent, and this waiter cancelled, first
        raise AssertionError("unreachable")

    return receive


class CompressedScripts:
    """An ASGI middleware: a GET (or HEAD) of one of Streamlit's scripts under ``/static/…`` from a browser that
    accepts gzip is answered with the file compressed, from this process's copy after the first time, whichever
    spelling of its path was asked (``static_name``). A conditional or ranged request, another method, a path that
    names no script file, an answer other than 200 or one already encoded pass through as they are.

    ``copies``: the compressed copies, by the file's name in ``directory`` (Streamlit's static folder), at most
    ``KEPT_BYTES`` of them. ``compressing``: the files being compressed right now, each with the event its other
    askers wait on; a file leaves it once compressed (or not), so it is empty between requests."""

    def __init__(self, app: Any, warm: Callable[[], list[str]] = first_visit_first, directory: Path = STATIC):
        self.app = app
        self.warm = warm
        self.directory = directory
        self.copies: dict[str, tuple[dict, bytes]] = {}
        self.compressing: dict[str, asyncio.Event] = {}
        self.kept = 0
        self.warmed = False

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, self._warm_once_started(scope, send))
            return
        name = self._script(scope)
        if name is None:
            await self.app(scope, receive, send)
            return
        head = scope["method"] == "HEAD"
        if name not in self.copies:
            # a class arriving at once asks for the same files together: one compresses, the others wait for its copy
            under_way = self.compressing.get(name)
            if under_way is not None:
                await under_way.wait()
            elif not self._is_file(name):  # no script file: Streamlit answers (its page, a 404), nothing is kept
                await self.app(scope, receive, send)
                return
            else:
                self.compressing[name] = under_way = asyncio.Event()
                try:
                    await self._compress(name, scope, receive, send)
                finally:
                    del self.compressing[name]
                    under_way.set()
                return
        copy = self.copies.get(name)
        if copy is None:  # its compression made no copy (not a fresh script, no room, cut short): as Streamlit sends it
            await self.app(self._canonical(scope, name, scope["method"]), receive, send)
            return
        await answer(send, *copy, head=head)

    @staticmethod
    def _canonical(scope: dict, name: str, method: str) -> dict:
        """``scope`` asking for ``name`` by its plain path: Streamlit answers such a path with the file itself, never
        compressed by Streamlit's own gzip middleware (which lets only a plain ``/static/`` path by)."""
        base = "/" + config.get_option("server.baseUrlPath").strip("/")
        path = base.rstrip("/") + "/" + name
        return {**scope, "method": method, "path": path, "raw_path": path.encode()}

    async def _compress(self, name: str, scope: dict, receive: Any, send: Any) -> None:
        """The app's answer, compressed when it is a script that went well and there is room to keep it, and kept."""
        first: dict = {}
        parts: list[bytes] = []

        async def keep(message: dict) -> None:
            if message["type"] == "http.response.start":
                first.update(message)
            elif message["type"] == "http.response.body":
                parts.append(message.get("body", b""))
            else:
                await send(message)

        head = scope["method"] == "HEAD"
        await self.app(self._canonical(scope, name, "GET"), receive, keep)  # a HEAD's GET: its length
        body = b"".join(parts)
        headers = dict(first.get("headers", []))
        whole = headers.get(b"content-length", str(len(body)).encode()) == str(len(body)).encode()
        fresh = first.get("status") == 200 and b"content-encoding" not in headers and whole
        script = headers.get(b"content-type", b"").startswith(SCRIPT_TYPES)
        if not fresh or not script or self.kept + len(body) > KEPT_BYTES:  # the copy could not be kept
            await answer(send, first, body, head=head)
            return
        # off the event loop (zlib lets go of the GIL): Streamlit's 4.6 MB chart script takes about 0.1 s
        compressed = await asyncio.to_thread(functools.partial(gzip.compress, body, compresslevel=LEVEL, mtime=0))
        encoded = {**first, "headers": [*map(weak_etag, first.get("headers", [])), *GZIP_HEADERS]}
        if self.kept + len(compressed) <= KEPT_BYTES:
            self.copies[name] = (encoded, compressed)
            self.kept += len(compressed)
        await answer(send, encoded, compressed, head=head)

    def _is_file(self, name: str) -> bool:
        """Whether ``name`` is a file in the static folder (followed through links, as Streamlit serves it)."""
        try:
            return stat.S_ISREG(os.stat(self.directory / name).st_mode)
        except (OSError, ValueError):  # too long a name, a NUL, no such file
            return False

    def _warm_once_started(self, lifespan: dict, send: Any) -> Callable:
        """The lifespan's ``send``: once Streamlit has started, compress the scripts, then say the server has
        started, so it listens only once they are ready (health about 1 s later here: 2.6–2.8 s after start
        against 1.6–1.7 s). Done in the background after listening, the compression shared the CPU with the
        first visitor, who could also ask for a script before its copy was made (Streamlit's chart script: 0.17–0.19
        s to fetch then, 0.006 s now)."""

        async def started(message: dict) -> None:
            if message["type"] == "lifespan.startup.complete" and not self.warmed:
                self.warmed = True
                await self._compress_all(lifespan)
            await send(message)

        return started

    async def _compress_all(self, lifespan: dict) -> None:
        """Ask for every script as a browser would, through the app; a visitor asking meanwhile waits for the
        same file's compression or has its own answered."""
        base = "/" + config.get_option("server.baseUrlPath").strip("/")

        async def dropped(message: dict) -> None:
            pass

        for name in self.warm():
            path = base.rstrip("/") + "/" + name
            scope = {
                "type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "root_path": "",
                "query_string": b"", "headers": [(b"host", b"127.0.0.1"), (b"accept-encoding", b"gzip")],
                "http_version": "1.1", "scheme": "http", "server": ("127.0.0.1", 0), "client": ("127.0.0.1", 0),
                "app": lifespan.get("app"), "state": dict(lifespan.get("state") or {}),
            }  # fmt: skip
            try:
                await self(scope, empty_request(), dropped)
            except Exception as error:  # a file that cannot be read now is compressed when a visitor asks
                LOGGER.warning("compressing %s ahead of visitors failed: %s", name, error)

    @staticmethod
    def _script(scope: dict) -> str | None:
        """The script file a request is for, where it is a GET or HEAD from a browser that takes gzip, asking for
        the whole file; else None. Said by its path and type alone (what Starlette's file answer would say)."""
        if scope["type"] != "http" or scope.get("method") not in ("GET", "HEAD"):
            return None
        headers = scope.get("headers", [])
        if any(key.lower() in VALIDATORS for key, _ in headers) or not accepts_gzip(headers):
            return None
        name = static_name(scope.get("path", ""), config.get_option("server.baseUrlPath"))
        if name is None or not (mimetypes.guess_type(name)[0] or "").encode().startswith(SCRIPT_TYPES):
            return None
        return name


CHART_LIBRARY = Path(__file__).resolve().parents[1] / "static" / "plotly-cartesian-4.1.1.min.js"
"""Plotly's cartesian bundle (npm ``plotly.js-cartesian-dist-min`` 4.1.1, MIT, its licence beside it): the bar,
scatter and heatmap traces the Gantt (Playground, lessons) draws, 1.5 MB where Streamlit's chart script carries
every trace in 4.6 MB. A cold browser evaluates it in about 0.45 s against 1.0 s on this host, time the first chart of
a visit waits for."""
CHART_LIBRARY_SHA256 = "79542150855a52c567260e3137095dbe2b744e6d702a5cabe67da246942fba7a"
CHART_LIBRARY_PATH = "/pplab/" + CHART_LIBRARY.name
"""Where it is served, under the server's base path; the version in the name, so a browser may keep it."""


def chart_library_url(base_path: str) -> str:
    return "/" + "/".join(part for part in (base_path.strip("/"), CHART_LIBRARY_PATH.strip("/")) if part)


class ChartLibrary:
    """An ASGI middleware that answers a GET or HEAD of ``CHART_LIBRARY_PATH`` with the bundle (compressed for a
    browser that accepts gzip, compressed once, on first use; a HEAD gets the same headers and no body);
    everything else passes through."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.plain: bytes | None = None
        self.compressed: bytes | None = None
        self.loading = asyncio.Lock()  # visitors at once on first use: one reads and compresses, the others wait

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        wanted = chart_library_url(config.get_option("server.baseUrlPath"))
        if scope["type"] != "http" or scope.get("method") not in ("GET", "HEAD") or scope.get("path") != wanted:
            await self.app(scope, receive, send)
            return
        plain, compressed = await self._bundle()
        accepts = accepts_gzip(scope.get("headers", []))
        headers = [
            (b"content-type", b"application/javascript; charset=utf-8"),
            (b"cache-control", b"public, max-age=31536000, immutable"),
            (b"vary", b"Accept-Encoding"),
        ]
        if accepts:
            headers.append((b"content-encoding", b"gzip"))
        start = {"type": "http.response.start", "status": 200, "headers": headers}
        await answer(send, start, compressed if accepts else plain, head=scope["method"] == "HEAD")

    async def _bundle(self) -> tuple[bytes, bytes]:
        """The bundle, plain and compressed: read and compressed on first use, once."""
        async with self.loading:
            if self.plain is None or self.compressed is None:
                plain = await asyncio.to_thread(CHART_LIBRARY.read_bytes)
                self.compressed = await asyncio.to_thread(
                    functools.partial(gzip.compress, plain, compresslevel=LEVEL, mtime=0)
                )
                self.plain = plain
        return self.plain, self.compressed

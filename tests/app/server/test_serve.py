"""app/server/middleware.py: the server's root goes into every HTML page, plain or compressed, and nothing else is
touched; Streamlit's scripts go out compressed, each compressed once. Driven as ASGI directly (no server),
against answers written here."""

import asyncio
import functools
import gzip

import pytest

from app.server.middleware import KEPT_BYTES, CompressedScripts, ServerRootInPage, base_url_script

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


def _serve(app, method: str = "GET", kind: str = "http", middleware=ServerRootInPage, path="/lessons", headers=()):
    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request"}

    wrapped = middleware(app) if isinstance(middleware, type) else middleware
    scope = {"type": kind, "method": method, "path": path, "headers": list(headers)}
    asyncio.run(wrapped(scope, receive, send))
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


SCRIPT = b"function lab() { return 'pipeline'; }\n" * 2000
GZIP = ((b"accept-encoding", b"gzip, deflate, br"),)
NAMES = ("static/js/index.abc.js", "static/js/chart.def.js", "static/js/late.js", "static/js/cut.js")


@pytest.fixture
def folder(tmp_path):
    """A static folder holding the scripts these tests ask for (a path naming no file is not compressed)."""
    for name in NAMES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"on disk; the app answers")
    return tmp_path


class Counted:
    """An app that answers ``body`` and counts how often it was asked."""

    def __init__(self, body: bytes, content_type: bytes = b"text/javascript", status: int = 200) -> None:
        self.body, self.content_type, self.status, self.calls = body, content_type, status, 0

    async def __call__(self, scope, receive, send):
        self.calls += 1
        assert (await receive())["type"] == "http.request"  # Starlette stops sending a file on a disconnect
        headers = [(b"content-type", self.content_type), (b"content-length", str(len(self.body)).encode())]
        headers.append((b"etag", b'"abc123"'))
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": self.body})


def test_a_script_goes_out_compressed_and_is_compressed_once(folder):
    app = Counted(SCRIPT)
    middleware = CompressedScripts(app, directory=folder)
    for _ in range(3):
        headers, body = _serve(app, middleware=middleware, path="/static/js/index.abc.js", headers=GZIP)
        assert gzip.decompress(body) == SCRIPT and headers[b"content-encoding"] == b"gzip"
        assert int(headers[b"content-length"]) == len(body) < len(SCRIPT) / 10 and headers[b"vary"]
        assert headers[b"etag"] == b'W/"abc123"'  # not the uncompressed file's strong tag
    assert app.calls == 1 and middleware.kept == len(body)


def test_what_is_not_a_fresh_script_for_a_gzip_browser_passes_as_it_is(folder):
    (folder / "static" / "media").mkdir()
    (folder / "static" / "media" / "x.png").write_bytes(b"on disk")
    compressed_scripts = functools.partial(CompressedScripts, directory=folder)
    cases = [
        dict(path="/static/js/index.abc.js", headers=()),  # the browser does not take gzip
        dict(path="/static/js/index.abc.js", headers=(*GZIP, (b"range", b"bytes=0-10"))),
        dict(path="/static/js/index.abc.js", headers=(*GZIP, (b"if-none-match", b'"abc"'))),
        dict(path="/lessons", headers=GZIP),  # not under /static/
        dict(path="/static/js/index.abc.js", headers=GZIP, method="POST"),
        dict(path="/static/js/absent.js", headers=GZIP),  # no such file: Streamlit answers with its page
    ]
    for case in cases:
        middleware = compressed_scripts(Counted(SCRIPT))
        headers, body = _serve(middleware.app, middleware=middleware, **case)
        assert body == SCRIPT and b"content-encoding" not in headers, case
        assert middleware.copies == {} and middleware.compressing == {}, case
    for app, path in (
        (Counted(b"\x89PNG" * 500, b"image/png"), "/static/media/x.png"),
        (Counted(b"gone", status=404), "/static/js/index.abc.js"),
    ):
        headers, body = _serve(app, middleware=compressed_scripts(app), path=path, headers=GZIP)
        assert body == app.body and b"content-encoding" not in headers


def test_the_copies_kept_are_bounded(folder):
    """Nearly full, the next file goes out as the app sends it, every time: no compression that is not kept."""
    middleware = CompressedScripts(Counted(SCRIPT), directory=folder)
    middleware.kept = KEPT_BYTES - 10
    for _ in range(2):
        headers, body = _serve(middleware.app, middleware=middleware, path="/static/js/late.js", headers=GZIP)
        assert body == SCRIPT and b"content-encoding" not in headers
    assert middleware.copies == {} and middleware.compressing == {} and middleware.kept == KEPT_BYTES - 10


def test_a_class_asking_at_once_is_compressed_for_once(folder):
    """Thirty first visits at the same moment: the app is asked once, every visitor gets the compressed file; the
    table of compressions under way is empty once it is done."""
    app = Counted(SCRIPT)
    middleware = CompressedScripts(app, directory=folder)
    bodies: list[bytes] = []

    async def visit():
        parts: list[bytes] = []

        async def send(message):
            if message["type"] == "http.response.body":
                parts.append(message["body"])

        async def receive():
            return {"type": "http.request"}

        scope = {"type": "http", "method": "GET", "path": "/static/js/index.abc.js", "headers": list(GZIP)}
        await middleware(scope, receive, send)
        bodies.append(b"".join(parts))

    async def class_of_thirty():
        await asyncio.gather(*(visit() for _ in range(30)))

    asyncio.run(class_of_thirty())
    assert app.calls == 1 and len(bodies) == 30 and all(gzip.decompress(body) == SCRIPT for body in bodies)
    assert middleware.compressing == {} and list(middleware.copies) == ["static/js/index.abc.js"]


class Started(Counted):
    """An app that also speaks ASGI's lifespan: it starts, then waits for the server to stop."""

    async def __call__(self, scope, receive, send):
        if scope["type"] != "lifespan":
            await super().__call__(scope, receive, send)
            return
        assert (await receive())["type"] == "lifespan.startup"
        await send({"type": "lifespan.startup.complete"})
        assert (await receive())["type"] == "lifespan.shutdown"
        await send({"type": "lifespan.shutdown.complete"})


def test_a_starting_server_compresses_its_scripts_before_it_says_it_has_started(folder):
    app = Started(SCRIPT)
    names = ["static/js/index.abc.js", "static/js/chart.def.js"]
    middleware = CompressedScripts(app, warm=lambda: names, directory=folder)

    async def server_starts_then_stops():
        events = asyncio.Queue()
        await events.put({"type": "lifespan.startup"})
        sent = []

        async def send(message):
            sent.append(message["type"])
            if message["type"] == "lifespan.startup.complete":
                made.extend(middleware.copies)  # made before the server says it has started
                await events.put({"type": "lifespan.shutdown"})

        await middleware({"type": "lifespan", "app": None}, events.get, send)
        return sent

    made: list[str] = []
    assert asyncio.run(server_starts_then_stops()) == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert sorted(made) == sorted(middleware.copies)
    assert sorted(middleware.copies) == sorted(names) and app.calls == 2
    headers, body = _serve(app, middleware=middleware, path="/static/js/chart.def.js", headers=GZIP)
    assert gzip.decompress(body) == SCRIPT and app.calls == 2  # the first visitor gets the copy


def test_the_scripts_named_by_streamlits_page_come_first():
    from app.server.middleware import STATIC, first_visit_first

    names = first_visit_first()
    page = (STATIC / "index.html").read_text()
    first = [name for name in names if f'"./{name}"' in page]
    assert first and names[: len(first)] == first and len(names) == len(set(names))
    assert all((STATIC / name).is_file() for name in names) and any("PlotlyChart" in name for name in names)


def test_a_body_shorter_than_its_length_is_neither_compressed_nor_kept(folder):
    class Cut(Counted):
        async def __call__(self, scope, receive, send):
            headers = [(b"content-type", b"text/javascript"), (b"content-length", b"999999")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": b""})

    middleware = CompressedScripts(Cut(b""), directory=folder)
    headers, body = _serve(middleware.app, middleware=middleware, path="/static/js/cut.js", headers=GZIP)
    assert body == b"" and b"content-encoding" not in headers and middleware.copies == {}


def test_the_chart_library_is_the_pinned_bundle_and_is_served_compressed_once():
    """app/static/ holds npm's plotly.js-cartesian-dist-min 4.1.1 unchanged (its SHA-256 recorded where it is
    served), with its MIT licence; a gzip browser gets it compressed, another plainly; other paths pass."""
    import hashlib

    from app.server.middleware import CHART_LIBRARY, CHART_LIBRARY_SHA256, ChartLibrary, chart_library_url

    text = CHART_LIBRARY.read_bytes()
    assert hashlib.sha256(text).hexdigest() == CHART_LIBRARY_SHA256
    assert text.startswith(b"/**\n* plotly.js (cartesian - minified) v4.1.1")
    assert b"MIT" in CHART_LIBRARY.with_name(CHART_LIBRARY.name.replace(".min.js", ".LICENSE")).read_bytes()
    library = ChartLibrary(Counted(b"not the library"))
    path = chart_library_url("")
    headers, body = _serve(library, path=path, headers=GZIP)
    assert gzip.decompress(body) == text and headers[b"content-encoding"] == b"gzip"
    assert headers[b"content-type"].startswith(b"application/javascript")
    assert int(headers[b"content-length"]) == len(body)
    first = library.compressed
    assert _serve(library, path=path, headers=GZIP)[1] == body and library.compressed is first  # compressed once
    assert _serve(library, path=path)[1] == text  # no gzip asked
    assert _serve(library, path="/static/js/other.js")[1] == b"not the library" and library.app.calls == 1
    assert chart_library_url("lab/") == "/lab" + path

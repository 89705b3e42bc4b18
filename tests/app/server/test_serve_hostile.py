"""app/server/middleware.py against what a stranger may send: thousands of distinct long paths leave nothing behind,
every spelling of a script's path shares its one compressed copy (checked against Streamlit's own static handler,
which says what each spelling is answered with), ``Accept-Encoding`` is read with its weights, and a HEAD answers
what its GET would, without the body. Driven as ASGI directly, in this process; benchmarks/hostile_paths.py does
the first against a whole server."""

import asyncio
import gc
import gzip
import os
import tracemalloc
from urllib.parse import unquote

import pytest

from app.server.http_rules import accepts_gzip, static_name
from app.server.middleware import (
    CHART_LIBRARY,
    STATIC,
    ChartLibrary,
    CompressedScripts,
    ServerRootInPage,
    chart_library_url,
    first_visit_first,
)

GZIP = ((b"accept-encoding", b"gzip, deflate, br"),)
PAGE = b"<!doctype html><html><head><title>lab</title></head><body>" + b"<div></div>" * 300 + b"</body></html>"
SCRIPT = b"function lab() { return 'pipeline'; }\n" * 2000


def scope_for(raw: str, method: str = "GET", headers=GZIP) -> dict:
    """The scope uvicorn makes of a request line's target ``raw``: its path percent-decoded once."""
    path, _, query = raw.partition("?")
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
        "path": unquote(path), "raw_path": path.encode(), "query_string": query.encode(), "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), *headers], "server": ("127.0.0.1", 8501), "client": ("127.0.0.1", 50000),
    }  # fmt: skip


async def ask(app, scope: dict) -> tuple[int, dict, bytes]:
    """Status, headers and body of ``app``'s answer to ``scope`` (a request with an empty body)."""
    sent: list[dict] = []
    asked = False

    async def receive():  # the body once, then nothing (a disconnect would make Starlette stop sending a file)
        nonlocal asked
        if not asked:
            asked = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()

    async def send(message):
        sent.append(message)

    await app(scope, receive, send)
    start = next(message for message in sent if message["type"] == "http.response.start")
    body = b"".join(message.get("body", b"") for message in sent if message["type"] == "http.response.body")
    return start["status"], dict(start["headers"]), body


def serve(app, scope: dict) -> tuple[int, dict, bytes]:
    return asyncio.run(ask(app, scope))


class Answers:
    """An app that answers every request with ``body`` (Streamlit's page, by default, as it answers a path that
    names no file) and counts what it was asked."""

    def __init__(self, body: bytes = PAGE, content_type: bytes = b"text/html; charset=utf-8") -> None:
        self.body, self.content_type, self.asked = body, content_type, 0

    async def __call__(self, scope, receive, send):
        self.asked += 1
        headers = [(b"content-type", self.content_type), (b"content-length", str(len(self.body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": self.body if scope["method"] != "HEAD" else b""})


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "static" / "js").mkdir(parents=True)
    (tmp_path / "static" / "js" / "index.abc.js").write_bytes(SCRIPT)
    return tmp_path


def test_three_thousand_long_paths_leave_nothing_behind():
    """3,000 distinct 15 KB paths under /static/ (a script's name or not, spelled with ./ and //, too long for a
    file name or a path) through the three middlewares as app/serve.py stacks them: each is answered with the
    app's page, no table keeps an entry, and the memory traced grows by under 20 MB (before round three, 45 MB of
    keys alone)."""
    app = Answers()
    scripts = CompressedScripts(ChartLibrary(app), warm=list)
    stack = ServerRootInPage(scripts)

    async def strangers() -> None:
        for i in range(3000):
            noise = os.urandom(7_480).hex()  # 14,960 characters
            spelling = ("/static/js/", "/./static//js/", "/static/media/")[i % 3]
            segmented = "/".join(noise[j : j + 200] for j in range(0, len(noise), 200)) if i % 2 else noise
            status, headers, body = await ask(stack, scope_for(f"{spelling}{segmented}-{i}.js"))
            assert status == 200 and body.startswith(b"<!doctype html><html><head><script>"), i

    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        asyncio.run(strangers())
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert app.asked == 3000 and scripts.copies == {} and scripts.compressing == {} and scripts.kept == 0
    assert grown < 20 * 1024 * 1024, f"{grown / 1e6:.1f} MB"


def streamlit_static():
    """Streamlit's own answer to a path at the server's root: its middlewares (path security, sessions, its gzip
    that lets plain /static/ paths by) over its static handler, as its server stacks them."""
    from starlette.applications import Starlette
    from streamlit.web.server.starlette.starlette_app import create_streamlit_middleware
    from streamlit.web.server.starlette.starlette_static_routes import create_streamlit_static_assets_routes

    return Starlette(routes=create_streamlit_static_assets_routes(""), middleware=create_streamlit_middleware())


class Counting:
    def __init__(self, app) -> None:
        self.app, self.asked = app, 0

    async def __call__(self, scope, receive, send):
        self.asked += 1
        await self.app(scope, receive, send)


def a_script() -> str:
    """One of Streamlit's scripts, a small one (its compression is quick)."""
    names = [
        name
        for name in first_visit_first()
        if name.endswith(".js") and 10_000 < (STATIC / name).stat().st_size < 200_000
    ]
    return names[0]


def test_every_spelling_of_a_scripts_path_shares_its_one_copy():
    """Each spelling Streamlit answers with the same file (``./``, ``//``, ``%2e``, an encoded letter, a query) is
    answered from one compressed copy, the file asked of Streamlit once; a spelling Streamlit refuses, redirects
    or answers with its page is answered as Streamlit answers it, and keeps nothing."""
    name = a_script()
    folder, file = name.rsplit("/", 1)
    text = (STATIC / name).read_bytes()
    streamlit = streamlit_static()
    counting = Counting(streamlit)
    scripts = CompressedScripts(counting, warm=list)
    same = [
        f"/{name}", f"/./{name}", f"/{folder}/./{file}", f"/{folder}//{file}", f"/static/%2e/{name[7:]}",
        f"/%73tatic/{name[7:]}", f"/{name}?v=2", f"/static/js/.//./{file}",
    ]  # fmt: skip
    for raw in same:
        scope = scope_for(raw)
        assert static_name(scope["path"], "") == name, raw
        status, headers, body = serve(scripts, scope)
        assert status == 200 and headers[b"content-encoding"] == b"gzip" and gzip.decompress(body) == text, raw
        assert serve(streamlit, scope_for(raw, headers=()))[2] == text, raw  # Streamlit serves this very file
    assert counting.asked == 1 and list(scripts.copies) == [name] and scripts.compressing == {}
    other = [
        (f"//{name}", 400), (f"/static/../{name}", 400), (f"/static/%2e%2e/{name}", 400), (f"/{name}/", 301),
        (f"/static/%252e/{name[7:]}", 200), (f"/{name}%00", 400), (f"/{name}.missing.js", 200),
    ]  # fmt: skip
    for raw, expected in other:
        scope = scope_for(raw)
        assert static_name(scope["path"], "") in (None, scope["path"][1:]), raw
        ours, theirs = serve(scripts, scope), serve(streamlit, scope)
        assert ours[0] == theirs[0] == expected and ours[2] == theirs[2] and ours[2] != text, raw
    assert list(scripts.copies) == [name] and scripts.compressing == {}


def test_static_names_under_a_base_path():
    assert static_name("/lab/static/js/a.js", "lab") == "static/js/a.js"
    assert static_name("/lab//static/./js/a.js", "/lab/") == "static/js/a.js"
    assert static_name("/static/js/a.js", "lab") is None  # outside the base path: not Streamlit's file
    assert static_name("/lab/static/js/../js/a.js", "lab") is None  # refused (400)
    assert static_name("/lab/index.html", "lab") is None and static_name("/lab/", "lab") is None


CASES = [
    (None, False),  # no field: identity
    (b"", False),
    (b"gzip", True),
    (b"GZip", True),
    (b"gzip;q=0", False),
    (b"gzip ; q=0.000", False),
    (b"gzip;Q=0", False),
    (b"x-gzip", True),
    (b"notgzipreally", False),
    (b"gzipx, xgzip, gzip-not", False),
    (b"*", True),
    (b"*;q=0", False),
    (b"identity", False),
    (b"identity, *;q=0", False),
    (b"gzip;q=0, *", False),  # named: the wildcard does not speak for it
    (b"br, *;q=0.1", True),
    (b"gzip;q=0.5, identity", False),  # identity preferred
    (b"gzip, identity;q=0.5", True),
    (b"deflate, br, zstd", False),
    (b"gzip;q=1.5", False),  # a malformed weight: as if not named
    (b"gzip;q=abc", False),
    (b"gzip;q=0.0001", False),
    (b" gzip ; q=0.8 , br", True),
    (b"\xff\xfe;;,,q=,=;q", False),
    (b"," * 5000 + b"gzip;q=0.001", True),
]


LIBRARY = ChartLibrary(Answers())  # one for every case: the bundle is compressed once


@pytest.mark.parametrize(("field", "gzipped"), CASES)
def test_accept_encoding_is_read_with_its_weights(folder, field, gzipped):
    headers = () if field is None else ((b"accept-encoding", field),)
    assert accepts_gzip(headers) is gzipped
    scripts = CompressedScripts(Answers(SCRIPT, b"text/javascript"), warm=list, directory=folder)
    for app, path, text in ((scripts, "/static/js/index.abc.js", SCRIPT), (LIBRARY, chart_library_url(""), None)):
        status, answered, body = serve(app, scope_for(path, headers=headers))
        assert status == 200 and (answered.get(b"content-encoding") == b"gzip") is gzipped, (field, path)
        assert (gzip.decompress(body) if gzipped else body) == (text or CHART_LIBRARY.read_bytes())


def test_accept_encoding_fields_are_read_together():
    assert accepts_gzip([(b"accept-encoding", b"br"), (b"accept-encoding", b"gzip")])
    assert not accepts_gzip([(b"accept-encoding", b"br"), (b"accept-encoding", b"gzip;q=0")])


def test_a_head_of_the_chart_library_answers_its_gets_headers_without_the_body():
    """Through the three middlewares as app/serve.py stacks them (a HEAD used to reach Streamlit's page)."""
    library = ChartLibrary(Answers())
    stack = ServerRootInPage(CompressedScripts(library, warm=list))
    path = chart_library_url("")
    for headers in (GZIP, ()):
        got = serve(stack, scope_for(path, headers=headers))
        head = serve(stack, scope_for(path, method="HEAD", headers=headers))
        assert head[0] == got[0] == 200 and head[1] == got[1] and head[2] == b"", headers
        assert head[1][b"content-type"].startswith(b"application/javascript")
        assert int(head[1][b"content-length"]) == len(got[2]) > 0
        assert (head[1].get(b"content-encoding") == b"gzip") is bool(headers) and head[1][b"vary"]
    assert library.app.asked == 0


def test_a_head_of_a_script_answers_its_gets_headers_without_the_body(folder):
    """A HEAD first (the copy is made for it), then a GET, then a HEAD from the copy: the same headers, the length
    of the compressed file, no body; the app asked once."""
    app = Answers(SCRIPT, b"text/javascript")
    scripts = CompressedScripts(app, warm=list, directory=folder)
    path = "/static/js/index.abc.js"
    cold = serve(scripts, scope_for(path, method="HEAD"))
    got = serve(scripts, scope_for(path))
    warm = serve(scripts, scope_for("/static/./js/index.abc.js", method="HEAD"))
    assert cold == warm and cold[0] == got[0] == 200 and cold[1] == got[1] and cold[2] == b""
    assert cold[1][b"content-encoding"] == b"gzip" and int(cold[1][b"content-length"]) == len(got[2])
    assert gzip.decompress(got[2]) == SCRIPT and app.asked == 1 and scripts.compressing == {}


def test_the_chart_library_is_compressed_once_for_visitors_at_once(monkeypatch):
    library = ChartLibrary(Answers())
    path = chart_library_url("")
    made: list[bytes] = []
    compress = gzip.compress

    def counted(*args, **kwargs):
        made.append(b"")
        return compress(*args, **kwargs)

    async def at_once():
        return await asyncio.gather(*(ask(library, scope_for(path)) for _ in range(5)))

    monkeypatch.setattr(gzip, "compress", counted)
    answers = asyncio.run(at_once())
    assert len(made) == 1 and all(answer[2] == answers[0][2] for answer in answers)

"""app/server/nodelay.py: connections on a socket bound the way Streamlit binds its own (protocol 0) send at once."""

import asyncio
import asyncio.base_events
import http.client
import socket
import statistics
import time

import pytest

from app.server.nodelay import send_at_once, set_nodelay


def nodelay_of_accepted(listener: socket.socket) -> int:
    """TCP_NODELAY on the connection an asyncio server accepts from ``listener``."""
    found: list[int] = []

    async def main() -> None:
        accepted = asyncio.Event()

        async def on_connection(reader, writer) -> None:
            found.append(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()
            accepted.set()

        server = await asyncio.start_server(on_connection, sock=listener)
        _, writer = await asyncio.open_connection(*listener.getsockname())
        await accepted.wait()
        writer.close()
        server.close()
        await server.wait_closed()

    asyncio.run(main())
    return found[0]


def streamlit_like_listener() -> socket.socket:
    listener = socket.socket(family=socket.AF_INET)  # as starlette_server._bind_socket: no protocol named
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    assert listener.proto == 0
    return listener


def test_a_connection_on_a_socket_bound_without_a_protocol_sends_at_once(monkeypatch):
    monkeypatch.setattr(asyncio.base_events, "_set_nodelay", asyncio.base_events._set_nodelay)
    assert nodelay_of_accepted(streamlit_like_listener()) == 0  # asyncio's own check leaves Nagle on
    send_at_once()
    assert asyncio.base_events._set_nodelay is set_nodelay
    assert nodelay_of_accepted(streamlit_like_listener()) == 1


def test_only_internet_stream_sockets_are_touched():
    pair = socket.socketpair()  # AF_UNIX: no TCP options
    set_nodelay(pair[0])
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as datagram:
        set_nodelay(datagram)  # would raise if it tried
    for end in pair:
        end.close()


@pytest.mark.slow
@pytest.mark.timing
def test_the_served_app_answers_a_keep_alive_request_without_nagles_wait():
    """44 ms a file before (the acknowledgement a receiver delays); a few ms now, on a busy host too."""
    from browser_support import serve_app

    with serve_app() as url:
        host, port = url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=10)
        times = []
        for _ in range(30):
            started = time.perf_counter()
            connection.request("GET", "/_stcore/health")
            connection.getresponse().read()
            times.append(time.perf_counter() - started)
        connection.close()
    assert statistics.median(times) < 0.02, times

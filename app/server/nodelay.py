"""The server's connections send at once (TCP_NODELAY), as asyncio means its connections to.

Streamlit binds its listening socket itself (``starlette_server._bind_socket``: ``socket.socket(family=…)``,
whose ``proto`` is 0), and asyncio sets TCP_NODELAY on a connection only when its socket's ``proto`` is
``IPPROTO_TCP`` (``asyncio.base_events._set_nodelay``), so every connection kept Nagle's algorithm. An answer
goes out as two writes (its headers, then its body): the body waited for the browser to acknowledge the
headers, which a receiver may delay by up to 500 ms and Linux does by about 40 ms (RFC 1122 §4.2.3.2).
Measured here: every static file on one keep-alive connection took 44 ms, a first visit's 120 scripts over six
connections 0.85 s of the page frame. The listening socket is bound before ``app/serve.py`` is imported
(uvicorn imports it by name), so the fix is asyncio's check: a stream socket of the Internet families whose
``proto`` is 0 is a TCP socket (0 asks the kernel for the family's stream protocol, TCP).
"""

from __future__ import annotations

import asyncio.base_events
import socket
from typing import Any

INTERNET = (socket.AF_INET, socket.AF_INET6)


def set_nodelay(sock: Any) -> None:
    """asyncio's ``_set_nodelay``, also for a TCP socket made without naming its protocol."""
    if sock.family in INTERNET and sock.type == socket.SOCK_STREAM and sock.proto in (0, socket.IPPROTO_TCP):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def send_at_once() -> None:
    """From now on, every connection asyncio makes or accepts sends without waiting (app/serve.py)."""
    asyncio.base_events._set_nodelay = set_nodelay  # type: ignore[attr-defined]

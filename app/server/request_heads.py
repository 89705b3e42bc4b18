"""A request's head is read whole however the network cuts it, so a long link gets the same answer every time.

uvicorn reads HTTP/1.1 with h11 here (httptools is not installed), and h11 refuses a head that is still incomplete
once more than ``max_incomplete_event_size`` bytes of it are buffered: 16 KiB by default
(``h11._connection.DEFAULT_MAX_INCOMPLETE_EVENT_SIZE``). A complete head is never measured. So a link of 40 KB was
answered with the page when it came in one read, and with "400 Bad Request" when it came in two (measured on a
served app: one piece 200, two pieces 400), as a busy machine cuts it; the lab's long-link test failed that way
with both cores held busy.

The bound is raised to what asyncio reads at once (``_SelectorSocketTransport.max_size``, 256 KiB): a head up to
that size is now read whole however it arrives. What a connection may buffer is no more than one read could already
hand h11 in one piece. A head over that size is still answered as the network cuts it (h11 measures only what is
incomplete); only a hand-made request gets there, as a browser's link does not (the lab's own links are a few
hundred bytes). A stranger who sends a head slowly is not bounded in time here (app/server/middleware.py's note on
slow headers); the deployment that faces strangers is nginx in front, whose 8 KB request-line buffers answer a
longer link with a 414 every time.

Streamlit 1.67 builds uvicorn's ``Config`` itself, with no ``h11_max_incomplete_event_size``; uvicorn's h11
protocol reads the default from its module for each connection, so setting it there before the first connection
(app/serve.py) serves every one.
"""

from __future__ import annotations

import asyncio.selector_events

HEAD_BYTES: int = asyncio.selector_events._SelectorSocketTransport.max_size  # type: ignore[attr-defined]
"""The longest head read whole however it arrives: what one read of a connection hands over."""


def read_heads_whole() -> None:
    """From now on, uvicorn's h11 connections wait for a head of up to ``HEAD_BYTES``, in any number of reads."""
    import uvicorn.protocols.http.h11_impl as h11_impl

    h11_impl.DEFAULT_MAX_INCOMPLETE_EVENT_SIZE = HEAD_BYTES

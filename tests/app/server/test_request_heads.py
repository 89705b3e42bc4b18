"""app/server/request_heads.py: a served app answers a long link the same way whether its request arrives in one
piece or in several."""

import socket
import time

import pytest

from app.server.request_heads import HEAD_BYTES

pytestmark = pytest.mark.slow


def _status(url: str, target: str, pieces: int) -> bytes:
    """The status line the server at ``url`` answers a GET of ``target`` with, its request sent in ``pieces`` writes
    20 ms apart (each a read of its own at the server)."""
    host, port = url.removeprefix("http://").split(":")
    request = f"GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
    step = -(-len(request) // pieces)
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        try:
            for start in range(0, len(request), step):
                connection.sendall(request[start : start + step])
                time.sleep(0.02)
        except (BrokenPipeError, ConnectionResetError):  # refused before the whole head was sent
            pass
        answer = connection.recv(200)
    return answer.split(b"\r\n", 1)[0]


def test_a_long_link_gets_the_page_in_one_piece_or_several():
    from browser_support import serve_app

    long_link = "/?schedule=" + "x" * 40_000  # over h11's 16 KiB
    longest = "/?schedule=" + "x" * (HEAD_BYTES - 1_000)  # the longest head read whole, with room for the rest
    with serve_app() as url:
        answers = {
            (len(target), pieces): _status(url, target, pieces)
            for target in (long_link, longest)
            for pieces in (1, 2, 8)
        }
        assert set(answers.values()) == {b"HTTP/1.1 200 OK"}, answers  # before: 200 in one piece, 400 in several

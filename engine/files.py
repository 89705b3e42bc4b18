"""Files the user names, and values the user typed, on their way back into messages.

Reading (``read_regular_file``): only a regular file is read. A named pipe (FIFO), socket, device or folder
is refused at once, from ``stat`` before the open; the open itself is non-blocking, so a file swapped for a
FIFO in between cannot hang it either. At most ``limit + 1`` bytes are read.

Writing (``output_file``, ``write_text``), [Note: output rules]:

* a regular file, new or existing, is written to a temporary file in the same folder and renamed into place
  (``os.replace``), so an interrupted or failed write leaves the old file whole and no temporary file
  behind. An existing file keeps its permission bits; a read-only one is refused, as ``open`` would.
* a symbolic link is followed: the file it points to is replaced and the link stays a link.
* an output that is the same file as one of the inputs (``os.path.samefile``: also through a hard or
  symbolic link) is refused before anything is written, so a schedule is never overwritten by its trace.
* a character device (``/dev/null``, ``/dev/full``, a terminal, ``/dev/stdout`` on a terminal) is written in
  place, opened without blocking: there is no file to lose. A failed write (``/dev/full``) is one
  ``ValueError`` ("cannot write the trace to /dev/full: No space left on device").
* a named pipe (FIFO), socket, block device or folder is refused at once: writing to a FIFO nobody reads
  would block forever (so ``--trace /dev/stdout`` works on a terminal or a file, not into ``| …``).

Messages (``quoted``, ``shown``): a user value is echoed with at most ``QUOTE_LIMIT`` of its characters,
then "…" and its length, so an 8 MiB CSV cell or a 100,000-character option makes a one-line error, not a
wall of text. Invisible characters are escaped (``'0F\\u200b3'``).
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import TextIO

QUOTE_LIMIT = 200
"""The most characters of a user value a message shows."""

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def quoted(value: str, limit: int = QUOTE_LIMIT) -> str:
    """``value`` in single quotes with invisible characters escaped, like ``repr``; a value longer than
    ``limit`` characters shows its first ``limit``, then "…" and its length: ``'((((…' (8,388,608 characters)``.
    """
    pieces, used = [], 0
    for char in value[:limit]:
        if char in "'\\":
            piece = "\\" + char
        elif char.isprintable():
            piece = char
        else:
            piece = repr(char)[1:-1]  # '\u200b', '\xa0', '\n'
        used += len(piece)
        if used > limit:  # escapes take several characters each: the budget is characters shown
            break
        pieces.append(piece)
    text = "".join(pieces)
    if len(pieces) == len(value):
        return f"'{text}'"
    return f"'{text}…' ({len(value):,} characters)"


def shown(value: str, limit: int = QUOTE_LIMIT) -> str:
    """``value`` as typed when it is short and plainly printable (a file name, a number), else ``quoted``."""
    if len(value) <= limit and value.isprintable() and value == value.strip():
        return value
    return quoted(value, limit)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_regular_file(path: str, limit: int) -> bytes:
    """Up to ``limit + 1`` bytes of the regular file ``path`` (one more than ``limit`` says "too large").

    ValueError, at once, for anything else: "cannot read x.csv: it is a pipe (FIFO), not a regular file".
    """
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):  # before the open: opening a FIFO waits for a writer
            raise ValueError(f"cannot read {shown(path)}: it is {_kind(mode)}, not a regular file")
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with open(descriptor, "rb") as handle:
            mode = os.fstat(descriptor).st_mode
            if not stat.S_ISREG(mode):  # swapped between the stat and the open
                raise ValueError(f"cannot read {shown(path)}: it is {_kind(mode)}, not a regular file")
            return handle.read(limit + 1)
    except OSError as error:
        raise ValueError(f"cannot read {shown(path)}: {error.strerror}") from None


def _same_file(path: str, inputs: Iterable[str]) -> str | None:
    """The first input that ``path`` is (through any link), or None."""
    for name in inputs:
        try:
            if os.path.samefile(path, name):
                return name
        except OSError:  # one of them does not exist: not the same file
            continue
    return None


def _target(path: str, inputs: Iterable[str], what: str) -> tuple[str, os.stat_result | None]:
    """Where to write ``path`` (symbolic links followed) and its status (None: a new file), or ValueError
    under the rules of [Note: output rules]."""
    cannot = f"cannot write the {what} to {shown(path)}"
    if not path.strip():  # '' would otherwise mean "no file" to some callers and the current folder to others
        raise ValueError(f"cannot write the {what}: its file name is empty")
    same = _same_file(path, inputs)
    if same is not None:
        raise ValueError(f"{cannot}: it is the same file as the input {shown(same)}, which would be lost")
    try:
        status: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        status = None
    except OSError as error:
        raise ValueError(f"{cannot}: {error.strerror}") from None
    if status is None or stat.S_ISREG(status.st_mode):
        if status is not None and not os.access(path, os.W_OK):
            raise ValueError(f"{cannot}: Permission denied")
        return os.path.realpath(path), status
    if stat.S_ISCHR(status.st_mode):
        if not os.access(path, os.W_OK):
            raise ValueError(f"{cannot}: Permission denied")
        return path, status
    raise ValueError(f"{cannot}: it is {_kind(status.st_mode)}; give the name of a regular file")


def _create_temporary(real_path: str) -> tuple[str, int]:
    """A new empty file next to ``real_path`` (mode 0o666 less the umask, as ``open`` would make it)."""
    folder, name = os.path.split(real_path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        temporary = os.path.join(folder, f".{name[:200]}.{secrets.token_hex(4)}.tmp")
        try:
            return temporary, os.open(temporary, flags, 0o666)
        except FileExistsError:
            continue


def check_output(path: str, *, inputs: Iterable[str] = (), what: str = "output") -> None:
    """Fail before the work, not after it: ValueError if ``output_file(path, ...)`` would be refused or
    its folder takes no new file. Writes nothing (a probe file is made and removed at once)."""
    real_path, status = _target(path, inputs, what)
    if status is not None and stat.S_ISCHR(status.st_mode):
        return
    try:
        temporary, descriptor = _create_temporary(real_path)
    except OSError as error:
        raise ValueError(f"cannot write the {what} to {shown(path)}: {error.strerror}") from None
    os.close(descriptor)
    os.remove(temporary)


@contextmanager
def output_file(path: str, *, inputs: Iterable[str] = (), what: str = "output") -> Iterator[TextIO]:
    """A text handle whose content becomes the file ``path`` when the ``with`` block ends without error,
    under the rules of [Note: output rules]. Every failure is a one-line ValueError naming ``what``; on any
    exception (Ctrl-C included) an existing file keeps its old content and no temporary file remains."""
    cannot = f"cannot write the {what} to {shown(path)}"
    real_path, status = _target(path, inputs, what)
    if status is not None and stat.S_ISCHR(status.st_mode):
        with _written_in_place(path, cannot) as handle:
            yield handle
        return
    try:
        temporary, descriptor = _create_temporary(real_path)
    except OSError as error:
        raise ValueError(f"{cannot}: {error.strerror}") from None
    try:
        with open(descriptor, "w", encoding="utf-8") as handle:
            if status is not None:
                os.fchmod(descriptor, stat.S_IMODE(status.st_mode))
            yield handle
            handle.flush()
            os.fsync(descriptor)
        os.replace(temporary, real_path)
    except OSError as error:
        _discard(temporary)
        raise ValueError(f"{cannot}: {error.strerror}") from None
    except BaseException:
        _discard(temporary)
        raise


def _discard(temporary: str) -> None:
    with suppress(OSError):  # the folder went away: nothing left to clean
        os.remove(temporary)


@contextmanager
def _written_in_place(path: str, cannot: str) -> Iterator[TextIO]:
    """A character device, opened without blocking and without becoming the controlling terminal."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise ValueError(f"{cannot}: {error.strerror}") from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISCHR(mode):  # swapped between the stat and the open
            raise ValueError(f"{cannot}: it is {_kind(mode)}; give the name of a regular file")
        os.set_blocking(descriptor, True)
        with open(descriptor, "w", encoding="utf-8", closefd=False) as handle:
            yield handle
    except OSError as error:  # /dev/full: the open worked, the write did not
        raise ValueError(f"{cannot}: {error.strerror}") from None
    finally:
        os.close(descriptor)


def write_text(path: str, text: str, *, inputs: Iterable[str] = (), what: str = "output") -> None:
    """Write ``text`` to ``path`` under the rules of [Note: output rules] (see ``output_file``)."""
    with output_file(path, inputs=inputs, what=what) as handle:
        handle.write(text)

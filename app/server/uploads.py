"""A visitor's uploaded traces, moved out of the server's memory into a private folder of their own.

Streamlit keeps an uploaded file in the server's memory for as long as its widget holds it: four visitors'
87 MB uploads left the server 354 MB larger after their readings had ended (``benchmarks/trace_uploads.py``). So once
a visitor's files are checked against the page's limits they are written to a folder that
belongs to that visitor's session, the uploader is given a new key (dropping the files it held), and every later
reading (another step, another pattern) reads the folder. The folder goes when the visitor uploads other files,
forgets these, or their session ends (its last reference dropped: ``weakref.finalize``).
"""

from __future__ import annotations

import hashlib
import shutil
import weakref
from pathlib import Path
from typing import BinaryIO

from streamlit import config

from engine.runtime.workdirs import make
from engine.traces import TraceError

MAX_UPLOAD_FILES = 64


def max_upload_bytes() -> int:
    """All of a visitor's uploaded traces together: the server's ``maxUploadSize`` (``.streamlit/config.toml``,
    512 MiB; Streamlit's own cap on one file), the one place the cap is set (the command line reads up to 2 GiB a
    file)."""
    return int(config.get_option("server.maxUploadSize")) * 1024**2


COPY_CHUNK = 1024**2
"""Bytes copied at a time from an upload to its file: the copy never holds a second whole file in memory."""


class StoredUpload:
    """One visitor's traces on disk: each file's path, its name as uploaded, and a digest of both (names and
    contents), which identifies the reading for the cache.

    The folder is an ``upload-…`` folder of ``engine.runtime.workdirs``, named after the server process: it goes
    when this object does, and a server stopped before that (SIGTERM, SIGKILL) leaves it to the next server's
    sweep at start-up (``app/streamlit_app.py``), which removes the folders of processes no longer running."""

    def __init__(self, files: list[tuple[str, BinaryIO]]) -> None:
        sizes = [_size(data) for _, data in files]
        check_limits(len(files), sum(sizes))
        self.folder = make("upload")
        self._remove = weakref.finalize(self, shutil.rmtree, self.folder, ignore_errors=True)
        self.paths: tuple[str, ...] = ()
        self.names: tuple[str, ...] = ()
        digest = hashlib.sha256()
        for index, (name, data) in enumerate(files):  # an index keeps two files of one name apart
            path = Path(self.folder) / f"{index:03d}.trace"
            contents = hashlib.sha256()
            data.seek(0)
            with open(path, "wb") as out:
                while chunk := data.read(COPY_CHUNK):
                    out.write(chunk)
                    contents.update(chunk)
            self.paths += (str(path),)
            self.names += (Path(name).name,)
            digest.update(name.encode() + b"\0" + contents.digest())
        self.digest = digest.hexdigest()

    def remove(self) -> None:
        """Delete the folder now (also done when this object is dropped)."""
        self._remove()


def _size(data: BinaryIO) -> int:
    """A stream's length in bytes, its position left where it was."""
    here = data.tell()
    end = data.seek(0, 2)
    data.seek(here)
    return end


def check_limits(files: int, size: int) -> None:
    """TraceError with the arithmetic when the uploads pass the page's limits."""
    cap = max_upload_bytes()
    if files > MAX_UPLOAD_FILES or size > cap:
        raise TraceError(
            f"{files} files of {size / 2**20:,.1f} MiB in all; this page reads up to {MAX_UPLOAD_FILES} files and "
            f"{cap // 2**20} MiB (python -m engine trace reads up to 2 GiB a file)"
        )

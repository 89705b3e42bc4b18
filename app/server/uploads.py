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
import tempfile
import weakref
from pathlib import Path

from engine.traces import TraceError

MAX_UPLOAD_FILES = 64
MAX_UPLOAD_BYTES = 512 * 1024**2
"""All uploaded traces together: 512 MiB (the command line reads up to 2 GiB a file)."""


class StoredUpload:
    """One visitor's traces on disk: each file's path, its name as uploaded, and a digest of both (names and
    contents), which identifies the reading for the cache."""

    def __init__(self, files: list[tuple[str, bytes]]) -> None:
        check_limits(len(files), sum(len(data) for _, data in files))
        self.folder = tempfile.mkdtemp(prefix="pplab-traces-")
        self._remove = weakref.finalize(self, shutil.rmtree, self.folder, ignore_errors=True)
        self.paths: tuple[str, ...] = ()
        self.names: tuple[str, ...] = ()
        digest = hashlib.sha256()
        for index, (name, data) in enumerate(files):  # an index keeps two files of one name apart
            path = Path(self.folder) / f"{index:03d}.trace"
            path.write_bytes(data)
            self.paths += (str(path),)
            self.names += (Path(name).name,)
            digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
        self.digest = digest.hexdigest()

    def remove(self) -> None:
        """Delete the folder now (also done when this object is dropped)."""
        self._remove()


def check_limits(files: int, size: int) -> None:
    """TraceError with the arithmetic when the uploads pass the page's limits."""
    if files > MAX_UPLOAD_FILES or size > MAX_UPLOAD_BYTES:
        raise TraceError(
            f"{files} files of {size / 2**20:,.1f} MiB in all; this page reads up to {MAX_UPLOAD_FILES} files and "
            f"{MAX_UPLOAD_BYTES // 2**20} MiB (python -m engine trace reads up to 2 GiB a file)"
        )

"""app/server/uploads.py: a visitor's traces go to a folder of the server process in pieces (never a second whole
copy in memory), named by content and name, with the cap read from the server's one upload setting."""

import io
import os

import pytest
from streamlit import config

from app.server.uploads import COPY_CHUNK, StoredUpload, check_limits, max_upload_bytes
from engine.traces import TraceError


class CountingStream(io.BytesIO):
    """An upload that remembers the largest piece read from it."""

    largest = 0

    def read(self, size=-1):
        piece = super().read(size)
        self.largest = max(self.largest, len(piece))
        return piece


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("PPLAB_RUN_DIR", str(tmp_path / "runs"))
    return tmp_path / "runs"


def test_uploads_are_copied_in_pieces_to_a_folder_of_this_server(home):
    data = os.urandom(3 * COPY_CHUNK + 17)
    upload = CountingStream(data)
    upload.seek(5)  # wherever the uploader left it
    stored = StoredUpload([("rank0.json", upload), ("rank0.json", io.BytesIO(b"{}"))])
    assert upload.largest == COPY_CHUNK
    assert open(stored.paths[0], "rb").read() == data and stored.names == ("rank0.json", "rank0.json")
    assert os.path.basename(stored.folder).startswith(f"upload-{os.getpid()}-")
    assert os.path.dirname(stored.folder) == str(home)
    same = StoredUpload([("rank0.json", io.BytesIO(data)), ("rank0.json", io.BytesIO(b"{}"))])
    other = StoredUpload([("rank1.json", io.BytesIO(data)), ("rank0.json", io.BytesIO(b"{}"))])
    assert stored.digest == same.digest != other.digest
    stored.remove()
    assert not os.path.exists(stored.folder)


def test_the_cap_is_the_servers_one_upload_setting_with_the_arithmetic(monkeypatch):
    monkeypatch.setattr(config, "get_option", lambda name: 64 if name == "server.maxUploadSize" else None)
    assert max_upload_bytes() == 64 * 2**20
    check_limits(3, 64 * 2**20)
    with pytest.raises(TraceError, match=r"^3 files of 90\.0 MiB in all; this page reads up to 64 files and 64 MiB"):
        check_limits(3, 90 * 2**20)

"""A real job's profiler traces, read into the lab's measured timeline (no torch here).

``import_traces(paths, ImportOptions(...)) -> ImportedRun``; ``read_traces`` also reads one rank's overlapped
chunks (``OverlappedChunks``, DeepSeek's profile of DualPipe); ``python -m engine trace rank*.json.gz``.
"""

from .check import check_order
from .chunks import OverlappedChunks
from .imported import ImportedRun, ImportOptions, import_traces, read_traces
from .reading import TraceError

__all__ = ["ImportOptions", "ImportedRun", "OverlappedChunks", "TraceError", "check_order", "import_traces",
           "read_traces"]  # fmt: skip

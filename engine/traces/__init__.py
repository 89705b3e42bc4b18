"""A real job's profiler traces, read into the lab's measured timeline (no torch here).

``import_traces(paths, ImportOptions(...)) -> ImportedRun``; ``python -m engine trace rank*.json.gz``.
"""

from .check import check_order
from .imported import ImportedRun, ImportOptions, import_traces
from .reading import TraceError

__all__ = ["ImportOptions", "ImportedRun", "TraceError", "check_order", "import_traces"]

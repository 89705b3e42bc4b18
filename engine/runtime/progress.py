"""The progress callback every backend reports through (torch-free)."""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[int, int, str], None]
"""``progress(done, total, note)``: the CLI draws it with tqdm, the app with ``st.progress``."""


def no_progress(done: int, total: int, note: str) -> None:
    """The default: report nothing."""

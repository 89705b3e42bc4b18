"""Showing a visitor's text safely (pure: no Streamlit here). Streamlit renders warnings and errors as
Markdown, so every value that came from a visitor is quoted with ``shown`` (a code span) or passed through
``plain`` (every punctuation character escaped) before it goes into a message: a link, an image, bold or
``$math$`` typed into a URL must come out as plain text. Both live with the settings declarations
(``engine.options``), whose problem lines use them; reading values is the declarations' job.
"""

from __future__ import annotations

from engine.options import code_span as shown
from engine.options import plain, read_number

__all__ = ["numbers", "plain", "shown"]


def numbers(text: str) -> tuple[float, ...]:
    """Comma-separated numbers (ASCII, finite); ValueError when any part is not one."""
    return tuple(read_number(part) for part in text.split(","))

"""HTTP's rules as the middlewares need them, pure (no ASGI here): which content coding a request accepts
(RFC 9110 §12.5.3, q-values included) and which file of Streamlit's static folder a path names (Streamlit's own
rules, so that every spelling of one file is one file)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from streamlit.path_security import is_unsafe_path_pattern

QVALUE = re.compile(r"0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?")
"""A weight as RFC 9110 §12.4.2 writes it: 0 to 1, at most three decimals."""


def coding_weights(headers: Iterable[tuple[bytes, bytes]]) -> dict[str, float] | None:
    """The content codings a request's ``Accept-Encoding`` fields name, each with its weight (``x-gzip`` read as
    ``gzip``, RFC 9110 §8.4.1.3; a coding named twice keeps its higher weight); None where the request has no such
    field. An entry whose weight is malformed is left out, as if not named."""
    values = [value for name, value in headers if name.lower() == b"accept-encoding"]
    if not values:
        return None
    weights: dict[str, float] = {}
    for entry in b",".join(values).decode("latin-1").split(","):
        coding, *parameters = entry.split(";")
        coding = coding.strip().lower()
        weight: float | None = 1.0
        for parameter in parameters:
            key, _, value = parameter.partition("=")
            if key.strip().lower() == "q":
                value = value.strip()
                weight = float(value) if QVALUE.fullmatch(value) else None
        if not coding or weight is None:
            continue
        coding = "gzip" if coding == "x-gzip" else coding
        weights[coding] = max(weight, weights.get(coding, 0.0))
    return weights


def accepts_gzip(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """Whether a request is to be answered with gzip (RFC 9110 §12.5.3): gzip (or ``*``, where gzip is not named)
    has a weight above 0, and at least identity's where identity is weighed (named, or by ``*``). No field, or an
    empty one, asks for identity; identity, always acceptable unless named with weight 0 or left to a ``*;q=0``,
    is what a request gets where gzip is not acceptable."""
    weights = coding_weights(headers)
    if not weights:
        return False
    wildcard = weights.get("*")
    gzip_weight = weights.get("gzip", 0.0 if wildcard is None else wildcard)
    identity_weight = weights.get("identity", 0.0 if wildcard is None else wildcard)
    return gzip_weight > 0 and gzip_weight >= identity_weight


def static_name(path: str, base_path: str) -> str | None:
    """The file in Streamlit's static folder its server answers a GET of ``path`` with, named as below that folder
    (``static/js/index.abc.js``), where that is a file under ``static/``; else None. What Streamlit 1.67's server
    does, in its order: a path starting ``//`` (or ``\\\\``), or whose rest holds a ``..`` segment, a NUL or a
    drive is refused (400: ``PathSecurityMiddleware`` and the static handler); one ending in ``/`` is redirected;
    the mount at the base path hands on what follows it, and Starlette's ``StaticFiles.get_path`` joins its
    segments and normalises them (``//`` and ``./`` fold away). Percent-encoding is undone once, by uvicorn, before
    ``scope["path"]``; Streamlit does not undo it again, so neither does this (``%252e`` stays a name of its own)."""
    prefix = "/" + base_path.strip("/")
    prefix = prefix.rstrip("/")
    if path.startswith(("//", "\\\\")) or not path.startswith(prefix + "/") or path.endswith("/"):
        return None
    if is_unsafe_path_pattern(path.lstrip("/")):
        return None
    name = os.path.normpath(os.path.join(*path[len(prefix) :].split("/")))
    return name if name.startswith("static/") else None

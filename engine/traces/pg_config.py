"""The process groups a Kineto trace lists (``distributedInfo.pg_config``): each group's ranks, and its name and
description, which say what a group is for (``mesh_dp``, ``mesh_pp``: ``engine.traces.groups``).

Kineto writes ``[{"pg_name": "1", "pg_desc": "mesh_dp", "backend_config": "cpu:gloo", "pg_size": 2, "ranks": [0,
2]}, …]``; what is not that shape is left out, never refused (the groups only add evidence).
"""

from __future__ import annotations

from typing import Any

from ..codecs import escaped
from .values import whole

MAX_NAME_CHARACTERS = 100
"""The most of a group's name and description kept to show."""


def _shown(text: str) -> str:
    text = escaped(text)
    return text if len(text) <= MAX_NAME_CHARACTERS else text[:MAX_NAME_CHARACTERS] + "…"


def group_names(config: Any) -> tuple[tuple[tuple[int, ...], str], ...]:
    """Each listed group's ranks with its ``pg_desc`` and ``pg_name`` (shown in messages: escaped, cut short)."""
    if not isinstance(config, list):
        return ()
    named = []
    for group, ranks in zip(config[:1000], _listed_ranks(config), strict=True):
        words = [group.get(key) for key in ("pg_desc", "pg_name")] if ranks else []
        text = " ".join(word for word in words if isinstance(word, str) and word)
        if ranks and text:
            named.append((ranks, _shown(text)))
    return tuple(named)


def _listed_ranks(config: list) -> list[tuple[int, ...] | None]:
    """Each of the first 1000 groups' ranks, None where they are not a list of whole numbers."""
    found: list[tuple[int, ...] | None] = []
    for group in config[:1000]:
        ranks = group.get("ranks") if isinstance(group, dict) else None
        if isinstance(ranks, list) and ranks and all(whole(rank) and rank >= 0 for rank in ranks):
            found.append(tuple(ranks))
        else:
            found.append(None)
    return found


def process_groups(config: Any) -> tuple[tuple[int, ...], ...]:
    """Each listed process group's ranks (Kineto: ``[{"pg_name": …, "ranks": [0, 2, 4, 6]}, …]``); what is not
    a list of whole numbers is left out."""
    if not isinstance(config, list):
        return ()
    return tuple(ranks for ranks in _listed_ranks(config) if ranks is not None)

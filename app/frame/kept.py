"""Results kept once per server, bounded by the bytes they hold rather than by their count.

A count does not bound memory when one entry can be a thousand times another: a 4 × 8 Playground figure is
tens of kilobytes, a 32 × 256 interleaved zero-bubble one with its simulation about 36 MB, so sixteen "entries"
were anything from 1 MB to 600 MB. Here every kept value is weighed (``kept_bytes``) and the least recently used
go first once the server's budget (``BUDGET_BYTES``) is passed; a value heavier than a quarter of the budget is
returned and not kept, so one visitor's largest configuration cannot push out everyone else's.

Like ``st.cache_resource``, a value is shared by every visitor and must never be changed; two visitors asking
for the same key at once wait for one computation (a lock that exists only while that key is being made).
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import streamlit as st

from app.server.admission import give_memory_back

BUDGET_BYTES = 256 * 1024**2
"""What a server keeps of its visitors' engine results and figures, all caches together."""
LARGEST_SHARE = 4
"""A value above ``BUDGET_BYTES / LARGEST_SHARE`` is not kept."""

Result = TypeVar("Result")


def kept_bytes(value: object) -> int:
    """The memory ``value`` holds, counting each object once: numpy arrays by their buffers, pandas frames by
    ``memory_usage(deep=True)``, containers, dataclasses and plain objects by what they reach (classes,
    functions and modules are shared by all, so they are not counted)."""
    seen: set[int] = set()
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if id(item) in seen or isinstance(item, type | Callable | type(sys)):
            continue
        seen.add(id(item))
        if isinstance(item, np.ndarray):
            total += sys.getsizeof(item)  # with its buffer when it owns one; a view's buffer is its base's
            if item.base is not None:
                stack.append(item.base)
            if item.dtype == object:
                stack.extend(item.ravel().tolist())
        elif isinstance(item, pd.DataFrame | pd.Series | pd.Index):
            usage = item.memory_usage(deep=True)
            total += int(usage.sum()) if isinstance(usage, pd.Series) else int(usage)
        elif isinstance(item, str | bytes | bytearray | int | float | complex | bool) or item is None:
            total += sys.getsizeof(item)
        elif isinstance(item, dict):
            total += sys.getsizeof(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            total += sys.getsizeof(item)
            stack.extend(item)
        else:
            total += sys.getsizeof(item)
            attributes = getattr(item, "__dict__", None)
            if attributes is not None:
                stack.append(attributes)
            for slot in getattr(type(item), "__slots__", ()):
                if hasattr(item, slot):
                    stack.append(getattr(item, slot))
    return total


class KeptResults:
    """Values by key, least recently used first, with their weights; thread-safe."""

    def __init__(self, budget_bytes: int = BUDGET_BYTES) -> None:
        self.budget_bytes = budget_bytes
        self._values: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._making: dict[Hashable, threading.Lock] = {}
        """Keys being made now, each with the lock its other askers wait on (removed once made)."""

    @property
    def bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._values)

    def get(self, key: Hashable, make: Callable[[], Result]) -> Result:
        """The value kept for ``key``, or ``make()``'s, kept if it fits."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key][0]
            making = self._making.setdefault(key, threading.Lock())
        with making:
            with self._lock:
                if key in self._values:  # made meanwhile by the visitor this one waited for
                    self._values.move_to_end(key)
                    return self._values[key][0]
            try:
                value = make()
                self._keep(key, value, kept_bytes(value))
            finally:
                with self._lock:
                    self._making.pop(key, None)
        return value

    def _keep(self, key: Hashable, value: object, weight: int) -> None:
        if weight * LARGEST_SHARE > self.budget_bytes:
            return
        dropped: list[object] = []
        with self._lock:
            self._values[key] = (value, weight)
            self._bytes += weight
            while self._bytes > self.budget_bytes:
                _, (old, old_weight) = self._values.popitem(last=False)
                dropped.append(old)
                self._bytes -= old_weight
        if dropped:  # once they are gone, their pages go back to the system (glibc would keep them)
            dropped.clear()
            give_memory_back()

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._bytes = 0


@st.cache_resource(show_spinner=False)
def server_results() -> KeptResults:
    """The server's one store (``st.cache_resource`` makes it once per server process)."""
    return KeptResults()


def kept(spinner: str | None = None) -> Callable[[Callable[..., Result]], Callable[..., Result]]:
    """Keep a pure function's results in the server's store, keyed by the function and its arguments (those whose
    names start with "_" left out of the key, as ``st.cache_resource`` does: they are named by another
    argument). ``spinner``: what the page says while a value is made."""

    def decorate(function: Callable[..., Result]) -> Callable[..., Result]:
        signature = inspect.signature(function)
        name = f"{function.__module__}.{function.__qualname__}"

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Result:
            bound = signature.bind(*args, **kwargs)
            key = (name, tuple((k, v) for k, v in bound.arguments.items() if not k.startswith("_")))

            def make() -> Result:
                if spinner is None:
                    return function(*args, **kwargs)
                with st.spinner(spinner):
                    return function(*args, **kwargs)

            return server_results().get(key, make)

        return wrapper

    return decorate

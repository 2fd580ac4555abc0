"""The compiled callables alive in this process, and the settings they share (``ember.compiler``/``_dynamo``)."""

from __future__ import annotations

import weakref
from typing import Any

#: programs kept per compiled function before calls that match none run eagerly (``_dynamo.config.cache_size_limit``)
SETTINGS: dict[str, Any] = {"cache_size": 8}
LIVE: weakref.WeakSet[Any] = weakref.WeakSet()


def reset_all() -> None:
    """Every compiled function and forward forgets its programs (and why it ran eagerly): captured anew."""
    for f in list(LIVE):
        f.reset()


class ProgramCache:
    """What compiled callables share: a cache of programs whose size is theirs or the process's setting."""

    _cache_size: int | None = None  # None: the process's setting (``_dynamo.config.cache_size_limit``), live

    @property
    def cache_size(self) -> int:
        """Programs kept before calls that match none run eagerly."""
        return int(SETTINGS["cache_size"] if self._cache_size is None else self._cache_size)

    @cache_size.setter
    def cache_size(self, n: int) -> None:
        self._cache_size = n

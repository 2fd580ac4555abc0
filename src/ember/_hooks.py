"""``RemovableHandle``: what hook registrations return (tensors, modules, optimizers); a leaf module."""

from __future__ import annotations

import itertools
from typing import Any

__all__ = ["RemovableHandle"]

_IDS = itertools.count()
_NEW = object()


class RemovableHandle:
    """Returned by hook registrations; ``remove()`` unregisters the hook.

    Also PyTorch's form for code that keeps its own hooks: ``h = RemovableHandle(hooks_dict)``, then
    ``hooks_dict[h.id] = hook``; ``remove()`` pops ``h.id`` from ``hooks_dict`` (and from ``extra_dict``)."""

    def __init__(self, container: Any, item: Any = _NEW, *, extra_dict: Any = None) -> None:
        self.id = next(_IDS)
        self._container, self._item = container, self.id if item is _NEW else item
        self._extra = [] if extra_dict is None else [extra_dict] if isinstance(extra_dict, dict) else list(extra_dict)

    def remove(self) -> None:
        c = self._container
        if isinstance(c, dict):
            c.pop(self._item, None)
        elif self._item in c:
            c.remove(self._item)
        for d in self._extra:
            d.pop(self._item, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

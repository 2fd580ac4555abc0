"""``RemovableHandle``: what hook registrations return (tensors, modules, optimizers); a leaf module."""

from __future__ import annotations

from typing import Any

__all__ = ["RemovableHandle"]


class RemovableHandle:
    """Returned by hook registrations; ``remove()`` unregisters the hook."""

    def __init__(self, container: Any, item: Any) -> None:
        self._container, self._item = container, item

    def remove(self) -> None:
        c = self._container
        if isinstance(c, dict):
            c.pop(self._item, None)
        elif self._item in c:
            c.remove(self._item)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

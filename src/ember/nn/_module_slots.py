"""What ``ember.compile``'s guards watch on modules without walking them at every call.

``STRUCTURE`` counts changes to any module's parameters, buffers, sub-modules, hooks or ``training`` flag: a
module's dicts of them are ``Slots`` (every write counts), and ``Module.__setattr__``, ``__delattr__`` and
``train`` count the rest. A guard recomputes what it compares only when the count moved.
"""

from __future__ import annotations

from typing import Any

__all__ = ["STRUCTURE", "Slots"]

#: bumped by every change a compiled program's module guard must see
STRUCTURE = [0]


class Slots(dict):  # type: ignore[type-arg]
    """A module's dict of parameters, sub-modules or hooks: every write bumps ``STRUCTURE``."""

    __slots__ = ()

    def __setitem__(self, key: Any, value: Any) -> None:
        STRUCTURE[0] += 1
        super().__setitem__(key, value)

    def __delitem__(self, key: Any) -> None:
        STRUCTURE[0] += 1
        super().__delitem__(key)

    def pop(self, *args: Any) -> Any:
        STRUCTURE[0] += 1
        return super().pop(*args)

    def popitem(self) -> Any:
        STRUCTURE[0] += 1
        return super().popitem()

    def clear(self) -> None:
        STRUCTURE[0] += 1
        super().clear()

    def update(self, *args: Any, **kwargs: Any) -> None:
        STRUCTURE[0] += 1
        super().update(*args, **kwargs)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        STRUCTURE[0] += 1
        return super().setdefault(key, default)

    def __ior__(self, other: Any) -> Slots:  # type: ignore[misc]
        STRUCTURE[0] += 1
        return super().__ior__(other)  # type: ignore[no-any-return]

"""PyTorch's symbolic scalars (``SymInt``, ``SymFloat``, ``SymBool``), for ``isinstance`` checks.

PyTorch's compiler traces with symbolic sizes, and libraries accept them where they accept ints
(``isinstance(n, (int, torch.SymInt))``). ``ember.compile`` captures a step with concrete sizes (a new shape is
captured anew), so no Ember value is symbolic: nothing is an instance of these classes, and making one raises
RuntimeError."""

from __future__ import annotations

from typing import Any

__all__ = ["SymBool", "SymFloat", "SymInt"]


class _Symbolic:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(f"{type(self).__name__}: Ember has no symbolic sizes (ember.compile captures concrete ones)")


class SymInt(_Symbolic):
    """A symbolic int of PyTorch's compiler: no Ember value is one."""


class SymFloat(_Symbolic):
    """A symbolic float of PyTorch's compiler: no Ember value is one."""


class SymBool(_Symbolic):
    """A symbolic bool of PyTorch's compiler: no Ember value is one."""

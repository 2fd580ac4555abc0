"""``ember.Size``: what ``Tensor.shape`` and ``Tensor.size()`` return, a tuple of ints with ``numel()`` (PyTorch's
``torch.Size``). Slicing, ``+`` and ``*`` give a ``Size``; it equals and hashes as the tuple of its ints."""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable
from typing import Any, SupportsIndex

__all__ = ["Size"]

_tuple_new = tuple.__new__


class Size(tuple[int, ...]):
    """A shape (``ember.Size([2, 3])``): a tuple of ints with ``numel()``, as ``Tensor.shape`` and ``Tensor.size()``
    return. Built from any iterable of integers (``int``, NumPy integers, one-element integer tensors)."""

    __slots__ = ()

    def __new__(cls, sizes: Iterable[Any] = ()) -> Size:
        t = tuple(sizes)
        for v in t:
            if type(v) is not int:
                return _tuple_new(cls, [_as_int(v, i) for i, v in enumerate(t)])
        return _tuple_new(cls, t)

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds (1 for ``Size([])``)."""
        return math.prod(self)

    def __getitem__(self, key: Any, _get: Any = tuple.__getitem__, _slice: type = slice) -> Any:  # type: ignore[override]
        if key.__class__ is _slice:
            return _tuple_new(Size, _get(self, key))
        return _get(self, key)  # (names bound as defaults: a local read is the cheapest, x.shape[0] is common)

    def __add__(self, other: Any) -> Any:
        if not isinstance(other, tuple):
            return NotImplemented
        return _tuple_new(Size, tuple.__add__(self, other))

    def __radd__(self, other: Any) -> Any:
        if not isinstance(other, tuple):
            return NotImplemented
        return _tuple_new(Size, tuple.__add__(other, self))

    def __mul__(self, n: SupportsIndex) -> Size:
        return _tuple_new(Size, tuple.__mul__(self, n))

    __rmul__ = __mul__

    def __reduce__(self) -> tuple[Any, ...]:
        return (Size, (tuple(self),))

    def __repr__(self) -> str:
        return f"ember.Size({list(self)})"


def _as_int(v: Any, i: int) -> int:
    if isinstance(v, float) or not hasattr(type(v), "__index__"):
        raise TypeError(f"ember.Size() takes an iterable of 'int' (item {i} is '{type(v).__name__}')")
    return operator.index(v)

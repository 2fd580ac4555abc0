"""``ember.Size``: what ``Tensor.size()`` returns, a tuple of ints with ``numel()`` (PyTorch's ``torch.Size``)."""

from __future__ import annotations

import math

__all__ = ["Size"]


class Size(tuple[int, ...]):
    """A shape (``ember.Size([2, 3])``): a tuple of ints with ``numel()``. ``Tensor.size()`` returns one;
    ``Tensor.shape`` is a plain tuple (read by every operator: a plain tuple costs a third as much to make)."""

    __slots__ = ()

    def numel(self) -> int:
        return math.prod(self)

    def __repr__(self) -> str:
        return f"ember.Size({list(self)})"

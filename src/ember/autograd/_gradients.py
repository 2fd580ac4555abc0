"""``Gradients``: the gradients a backward pass computed, as a value keyed by tensor."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .._tensor import Tensor

__all__ = ["Gradients"]


class Gradients:
    """Gradients as a value, keyed by tensor (parameter): ``grads[w]``, ``w in grads``, iteration."""

    def __init__(self) -> None:
        self._items: dict[int, tuple[Tensor, Tensor]] = {}

    def get(self, t: Tensor, default: Any = None) -> Any:
        item = self._items.get(id(t))
        return default if item is None else item[1]

    def __getitem__(self, t: Tensor) -> Tensor:
        item = self._items.get(id(t))
        if item is None:
            raise KeyError(f"no gradient for tensor of shape {tuple(t.shape)}")
        return item[1]

    def __contains__(self, t: object) -> bool:
        return id(t) in self._items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Tensor]:
        return (t for t, _ in self._items.values())

    def items(self) -> Iterator[tuple[Tensor, Tensor]]:
        return iter(self._items.values())

    def pop(self, t: Tensor, default: Any = None) -> Any:
        item = self._items.pop(id(t), None)
        return default if item is None else item[1]

    def __repr__(self) -> str:
        return f"Gradients({len(self)} tensors)"

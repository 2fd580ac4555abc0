"""Tensor methods PyTorch programs call that rest on other operators: ``apply_``/``map_`` (a Python function
element by element, on the CPU), ``as_subclass`` and ``nonzero_static``.

``as_subclass(cls)`` returns an alias of the tensor (same data, version counter and place in the graph) whose class
is ``cls``. One difference: Ember has no ``__torch_function__``, so operators on it return plain Tensors where
PyTorch returns ``cls``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._convert import legacy_type_name
from ._creation import tensor
from ._tensor import Tensor
from ._torch_extras import nonzero_static
from .autograd import no_grad
from .ops._indexing_view import view_as

__all__: list[str] = []

#: every field a tensor has (the ``__slots__`` of Tensor and its bases)
_FIELDS = tuple(s for c in Tensor.__mro__ for s in c.__dict__.get("__slots__", ()) if s != "__weakref__")


def _host_check(self: Tensor, name: str) -> None:
    if self.requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")
    if self.device.type != "cpu":
        raise RuntimeError(f"{name}() is only implemented on CPU tensors, got a tensor on {self.device}")


def _write(self: Tensor, values: list[Any]) -> Tensor:
    with no_grad():
        self.copy_(tensor(values, dtype=self.dtype).reshape(tuple(self.shape)))
    return self


def apply_(self: Tensor, callable: Callable[[Any], Any]) -> Tensor:
    """Replace each element ``v`` by ``callable(v)``, in place (CPU tensors that do not require grad)."""
    _host_check(self, "apply_")
    return _write(self, [callable(v) for v in self.reshape(-1).tolist()])


def map_(self: Tensor, tensor: Tensor, callable: Callable[[Any, Any], Any]) -> Tensor:
    """Replace each element ``a`` by ``callable(a, b)``, ``b`` from ``tensor`` broadcast to this shape, in place."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"map_(): argument 'other' (position 1) must be Tensor, not {type(tensor).__name__}")
    _host_check(self, "map_")
    if tensor.dtype != self.dtype:
        raise TypeError(
            f"map_: expected {legacy_type_name(self.dtype, self.device.type)} for 'other' "
            f"(got {legacy_type_name(tensor.dtype, tensor.device.type)})"
        )
    other = tensor.expand(tuple(self.shape)).reshape(-1).tolist()
    return _write(self, [callable(a, b) for a, b in zip(self.reshape(-1).tolist(), other)])


def as_subclass(self: Tensor, cls: type) -> Tensor:
    """An alias of this tensor (same data, attached to the graph) of class ``cls``, a subclass of Tensor."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(
            "Creating a Tensor subclass from a class that does not inherit from Tensor is not possible. "
            "Make sure your class inherits from Tensor."
        )
    alias = view_as(self, self)
    out = object.__new__(cls)
    for name in _FIELDS:
        setattr(out, name, getattr(alias, name))
    return out


def _nonzero_static(self: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """``ember.nonzero_static(self, size=size, fill_value=fill_value)``."""
    return nonzero_static(self, size=size, fill_value=fill_value)


Tensor.apply_ = apply_  # type: ignore[attr-defined]
Tensor.map_ = map_  # type: ignore[attr-defined]
Tensor.as_subclass = as_subclass  # type: ignore[attr-defined]
Tensor.nonzero_static = _nonzero_static  # type: ignore[attr-defined]

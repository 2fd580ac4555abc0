"""Tensor methods PyTorch programs call that rest on other operators: ``apply_``/``map_`` (a Python function
element by element, on the CPU), ``as_subclass``, ``nonzero_static`` and ``module_load``; and ``swap_tensors``
(``ember.utils.swap_tensors``).

``as_subclass(cls)`` returns an alias of the tensor (same data, version counter and place in the graph) whose class
is ``cls``. One difference: Ember has no ``__torch_function__``, so operators on it return plain Tensors where
PyTorch returns ``cls``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from ._convert import legacy_type_name
from ._creation import tensor
from ._tensor import Tensor
from ._torch_extras import nonzero_static
from .autograd import no_grad
from .ops._indexing_view import view_as

__all__ = ["swap_tensors"]

#: every field a tensor has (the ``__slots__`` of Tensor and its bases)
_FIELDS = tuple(
    s for c in Tensor.__mro__ for s in c.__dict__.get("__slots__", ()) if s not in ("__weakref__", "__dict__")
)  # (a program's own attributes, ``__dict__``, are not a field: swap_tensors exchanges their contents)


def _grad_check(self: Tensor, name: str) -> None:
    if self.requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")


def _cpu_check(self: Tensor, name: str) -> None:
    """PyTorch's rule: a Python callable per element runs on CPU tensors only (TypeError elsewhere)."""
    if self.device.type != "cpu":
        raise TypeError(f"{name} is only implemented on CPU tensors, got a tensor on {self.device}")


def _write(self: Tensor, values: list[Any]) -> Tensor:
    with no_grad():  # (made on this tensor's device: the default device may be another, cuda)
        self.copy_(tensor(values, dtype=self.dtype, device=self.device).reshape(tuple(self.shape)))
    return self


def apply_(self: Tensor, callable: Callable[[Any], Any]) -> Tensor:
    """Replace each element ``v`` by ``callable(v)``, in place (CPU tensors that do not require grad; a meta
    tensor is returned as is)."""
    _grad_check(self, "apply_")
    if self.device.type == "meta":
        return self
    _cpu_check(self, "apply_")
    return _write(self, [callable(v) for v in self.reshape(-1).tolist()])


def map_(self: Tensor, tensor: Tensor, callable: Callable[[Any, Any], Any]) -> Tensor:
    """Replace each element ``a`` by ``callable(a, b)``, ``b`` from ``tensor`` broadcast to this shape, in place."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"map_(): argument 'other' (position 1) must be Tensor, not {type(tensor).__name__}")
    _grad_check(self, "map_")
    mine, other_type = (legacy_type_name(t.dtype, t.device.type) for t in (self, tensor))
    if tensor.dtype != self.dtype or mine != other_type:  # (dtype and device type, as PyTorch's type names)
        raise TypeError(f"map_: expected {mine} for 'other' (got {other_type})")
    if self.device.type == "meta":
        return self
    _cpu_check(self, "map_")
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


def module_load(self: Tensor, other: Tensor, assign: bool = False) -> Tensor:
    """What ``load_state_dict`` puts in place of this parameter or buffer: ``other.detach()`` when ``assign``,
    else ``self.copy_(other).detach()``."""
    if assign:
        return other.detach()
    return self.copy_(other).detach()  # (load_state_dict calls it under no_grad; a parameter refuses it outside)


def swap_tensors(t1: Tensor, t2: Tensor) -> None:
    """Exchange everything two tensors hold (data, gradient, place in the graph, hooks, attributes, class), in place:
    every reference to ``t1`` then sees what ``t2`` was. Refused for a tensor something holds a weak reference to."""
    for name, t in (("t1", t1), ("t2", t2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"swap_tensors: {name} must be a Tensor, got {type(t).__name__}")
        if weakref.getweakrefcount(t):
            raise RuntimeError(f"Cannot swap {name} because it has weakref associated with it")
    c1, c2 = type(t1), type(t2)
    if c1 is not c2:
        try:
            t1.__class__ = c2
            t2.__class__ = c1
        except TypeError as e:
            t1.__class__ = c1
            raise RuntimeError(f"Cannot swap t1 and t2 of classes {c1.__name__} and {c2.__name__}: {e}") from None
    for name in _FIELDS:
        a, b = getattr(t1, name), getattr(t2, name)
        setattr(t1, name, b)
        setattr(t2, name, a)
    d1, d2 = getattr(t1, "__dict__", None), getattr(t2, "__dict__", None)
    if d1 is not None and d2 is not None:
        saved = dict(d1)
        d1.clear()
        d1.update(d2)
        d2.clear()
        d2.update(saved)


Tensor.module_load = module_load  # type: ignore[attr-defined]
Tensor.apply_ = apply_  # type: ignore[attr-defined]
Tensor.map_ = map_  # type: ignore[attr-defined]
Tensor.as_subclass = as_subclass  # type: ignore[attr-defined]
Tensor.nonzero_static = _nonzero_static  # type: ignore[attr-defined]

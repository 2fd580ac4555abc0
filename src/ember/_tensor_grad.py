"""Tensor's autograd fields as properties: ``requires_grad`` (settable on leaves only), ``grad`` (checked on
assignment, a warning when read where backward never fills it) and ``data`` (the values outside the graph). A mixin
of ``Tensor`` (``_tensor.py``), kept apart to keep that file small; the values live in Tensor's slots
``_requires_grad`` and ``_grad``.
"""

from __future__ import annotations

import functools
import warnings
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Self

from ._errors import DeviceError, DTypeError, ShapeError
from ._hooks import RemovableHandle

if TYPE_CHECKING:
    from ._tensor import Tensor

_bool = bool

#: id(leaf) -> (a weak reference to the leaf, its post-accumulate-grad hooks); an entry leaves with its tensor
_POST_HOOKS: dict[int, tuple[weakref.ref[Any], list[Callable[[Any], None]]]] = {}


def _forget(entries: dict[int, Any], key: int, _ref: Any) -> None:
    entries.pop(key, None)  # (the dict is bound, not looked up: this may run at interpreter exit)


def clear_grads(param_groups: Iterable[dict[str, Any]], set_to_none: bool = True) -> None:
    """An optimizer's ``zero_grad``: each parameter's gradient dropped (``set_to_none``) or filled with zeros."""
    for g in param_groups:
        for p in g["params"]:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad._data[...] = 0


def run_post_accumulate_hooks(leaves: Iterable[Any]) -> None:
    """Call each leaf's post-accumulate-grad hooks with the leaf (its ``.grad`` now holds this backward's sum)."""
    for leaf in leaves:
        entry = _POST_HOOKS.get(id(leaf))
        if entry is not None and entry[0]() is leaf:
            for hook in list(entry[1]):
                hook(leaf)


class TensorGradFields:
    """``requires_grad``, ``requires_grad_``, ``grad`` and ``data`` of ``Tensor`` (its base class)."""

    __slots__ = ("_grad", "_requires_grad")  # Tensor's other fields are its own slots (``Tensor._init`` sets all)
    _grad: Tensor | None
    _requires_grad: _bool

    if TYPE_CHECKING:  # what the properties use of Tensor
        _data: Any
        _backend: Any
        _creator: Any
        _retain: _bool
        shape: Any
        dtype: Any
        device: Any
        _view: Any
        _vcl: Any

        def detach(self) -> Tensor: ...

    @property
    def _version(self) -> int:
        """The version counter: how many in-place writes this tensor's storage has had (PyTorch's ``_version``)."""
        vcl = self._vcl
        return vcl[0] if vcl is not None else 0

    @property
    def requires_grad(self) -> _bool:
        """Whether gradients flow to this tensor; settable on leaves only (floating dtypes), as in PyTorch."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: _bool) -> None:
        if self._creator is not None:
            raise RuntimeError(
                f"requires_grad = {value}: you can only change requires_grad of leaf tensors; this one was computed "
                "(its grad_fn is set): use .detach() for a tensor that does not require grad"
            )
        if value and self._data.dtype not in self._backend.grad_dtypes:
            raise DTypeError(
                f"only Tensors of floating point and complex dtype can require gradients, got {self.dtype}"
            )
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: _bool = True) -> Self:
        """Mark a leaf tensor to collect gradients (floating and complex dtypes only); True on a computed tensor
        is a no-op, False on one is refused (as in PyTorch)."""
        if not (requires_grad and self._creator is not None):
            self.requires_grad = requires_grad
        return self

    @property
    def grad(self) -> Tensor | None:
        """The gradient accumulated by ``backward`` (leaves, and tensors that ``retain_grad()``).

        Reading it on a non-leaf tensor that does not retain its gradient warns, as PyTorch does (it is
        always None there); assigning one checks it is a Tensor of this tensor's shape, dtype and device.
        """
        g = self._grad
        if g is None and self._creator is not None and not self._retain:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed: it is not filled by "
                "backward(). Call .retain_grad() on it to keep its gradient, or use the leaf tensor it was "
                "computed from.",
                UserWarning,
                stacklevel=2,
            )
        return g

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            kind = type(self).__name__
            noun = "parameter" if kind == "Param" else "tensor"
            if not isinstance(value, TensorGradFields):
                raise TypeError(f"{kind}.grad: expected a Tensor or None, got {type(value).__name__}")
            if value.shape != self.shape:
                raise ShapeError(f"{kind}.grad: assigned a gradient of shape {tuple(value.shape)} to a {noun} of "
                                 f"shape {tuple(self.shape)}")  # fmt: skip
            if value.dtype != self.dtype:
                raise DTypeError(f"{kind}.grad: assigned a gradient of dtype {value.dtype} to a {noun} of dtype "
                                 f"{self.dtype}")  # fmt: skip
            if value._backend is not self._backend:
                raise DeviceError(f"{kind}.grad: assigned a gradient on {value.device} ({value._backend.name} "
                                  f"backend) to a {noun} on {self.device} ({self._backend.name} backend)")  # fmt: skip
        self._grad = value

    def register_post_accumulate_grad_hook(self, hook: Callable[[Any], None]) -> RemovableHandle:
        """Call ``hook(tensor)`` after a backward pass has accumulated this leaf's gradient into ``.grad``."""
        if self._creator is not None:
            raise RuntimeError("register_post_accumulate_grad_hook: hooks can only be registered on leaf tensors")
        if not self._requires_grad:
            raise RuntimeError("register_post_accumulate_grad_hook: the tensor does not require grad")
        key = id(self)
        entry = _POST_HOOKS.get(key)
        if entry is None or entry[0]() is not self:
            entry = _POST_HOOKS[key] = (weakref.ref(self, functools.partial(_forget, _POST_HOOKS, key)), [])
        entry[1].append(hook)
        return RemovableHandle(entry[1], hook)

    @property
    def data(self) -> Tensor:
        """This tensor's values, detached from the graph (shares storage, with a version counter of its own: writes
        through it are not seen by autograd's in-place checks, as in PyTorch); ``p.data = q`` makes ``p`` hold
        ``q``'s (any shape, dtype or device), keeping its identity, ``requires_grad`` and ``.grad``, as in PyTorch."""
        t = self.detach()
        t._vcl = None
        return t

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, TensorGradFields):  # (every Tensor is one; this floor cannot import Tensor)
            raise TypeError(f"Tensor.data must be set to a Tensor, got {type(value).__name__}")
        self._data, self._backend = value._data, value._backend
        self._view = self._vcl = None  # no longer a view of what it was; a version counter of its own

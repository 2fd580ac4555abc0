"""``UninitializedParameter`` / ``UninitializedBuffer``: the placeholders a lazy module holds before its first call
(PyTorch's), and ``is_lazy``.

A placeholder is a ``Param`` with no elements whose shape cannot be read; ``materialize(shape)`` gives it values
(uninitialised in PyTorch, zeros here) and makes it a plain ``Param``, the same object: a lazy module's first
call materializes its placeholders with the values the real module initialised, so references taken before
(``isinstance`` checks, hooks) see the parameter it became.
"""

from __future__ import annotations

from typing import Any

from .._creation import zeros
from .._param import Param
from .._size import Size

__all__ = ["UninitializedBuffer", "UninitializedParameter", "is_lazy"]


class _Uninitialized(Param):
    __slots__ = ()
    _buffer = False

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__(zeros(0, device=device, dtype=dtype), requires_grad=False, is_buffer=self._buffer)
        if requires_grad and not self._buffer:
            self.requires_grad_(True)

    @property
    def shape(self) -> Size:
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
            "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call "
            "`forward` to initialize the parameters before accessing their attributes."
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        """Give this placeholder ``shape`` (zeros, on ``device`` with ``dtype``, by default its own): it becomes
        a ``Param``."""
        t = zeros(shape, device=device or self.device, dtype=dtype or self.dtype)
        self._become(t)

    def _become(self, t: Any) -> None:
        """Take ``t``'s values (a lazy module's freshly initialised parameter) and become a ``Param``."""
        grad = self._requires_grad
        t = t.to(device=self.device, dtype=self.dtype)  # (the placeholder's: a lazy module moved with .to() first)
        self._data, self._backend = t._data, t._backend
        self._vc[0] += 1
        object.__setattr__(self, "__class__", Param)
        self._requires_grad = False
        if grad:
            self.requires_grad_(True)


class UninitializedParameter(_Uninitialized):
    """A parameter whose shape is not known yet (a lazy module's, before its first call)."""

    __slots__ = ()


class UninitializedBuffer(_Uninitialized):
    """A buffer whose shape is not known yet (a lazy norm's running statistics, before its first call)."""

    __slots__ = ()
    _buffer = True

    def __init__(self, requires_grad: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__(requires_grad, device, dtype)


def is_lazy(param: Any) -> bool:
    """Whether ``param`` is an uninitialized placeholder."""
    return isinstance(param, _Uninitialized)

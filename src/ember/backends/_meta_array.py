"""``MetaArray``: an array with a shape, a dtype and strides but no data (the meta device's arrays).

Arithmetic, comparisons and indexing compute only the result's shape, dtype and strides: NumPy's own rules
(broadcasting, ``ufunc.resolve_dtypes`` for the result dtype with Python numbers weak, the index rules). NumPy
functions called on one (``np.sum(m)``, ``np.maximum(m, 0, out=...)``) come here through NumPy's dispatch
protocols (``__array_ufunc__``, ``__array_function__``), so a reference kernel written with NumPy's names runs
on it as it is. Reading a value (``float(m)``, ``np.asarray(m)``) raises ``NotImplementedError``.
"""

from __future__ import annotations

import math
import operator
import sys
from typing import Any

import numpy as np

#: PyTorch's message for reading a meta tensor's values
NO_DATA = "Cannot copy out of meta tensor; no data!"


def caller() -> str:
    """The Ember function that asked for values: the innermost public one outside the backends (an error path)."""
    f: Any = sys._getframe(2)
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        name = f.f_code.co_name
        if mod.startswith("ember.") and not mod.startswith("ember.backends") and not name.startswith("_"):
            return str(name)
        f = f.f_back
    return "this operation"


class Storage:
    """The memory a meta array and its views share: none, only its size in bytes."""

    __slots__ = ("__weakref__", "nbytes")

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides in elements (PyTorch's: a dim of size 0 or 1 counts as 1)."""
    out, step = [], 1
    for s in reversed(shape):
        out.append(step)
        step *= max(s, 1)
    return tuple(reversed(out))


class MetaArray:
    """Shape, dtype (a NumPy dtype), strides in elements, an offset and the shared ``Storage``; no values."""

    __slots__ = ("dtype", "offset", "shape", "storage", "strides_el")
    __array_priority__ = 1000

    def __init__(
        self,
        shape: Any,
        dtype: Any,
        strides: tuple[int, ...] | None = None,
        storage: Storage | None = None,
        offset: int = 0,
    ) -> None:
        self.shape = tuple(int(operator.index(s)) for s in shape)
        if any(s < 0 for s in self.shape):
            raise ValueError(f"negative dimensions are not allowed: {self.shape}")
        self.dtype = np.dtype(dtype)
        self.strides_el = contiguous_strides(self.shape) if strides is None else tuple(strides)
        self.storage = Storage(math.prod(self.shape) * self.dtype.itemsize) if storage is None else storage
        self.offset = offset

    # -- facts ---------------------------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return int(self.dtype.itemsize)

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def strides(self) -> tuple[int, ...]:
        """In bytes, as NumPy's."""
        return tuple(s * self.itemsize for s in self.strides_el)

    def is_contiguous(self) -> bool:
        return all(
            st == want for s, st, want in zip(self.shape, self.strides_el, contiguous_strides(self.shape)) if s != 1
        )

    def view_as(self, shape: Any, strides: tuple[int, ...], offset: int | None = None) -> MetaArray:
        """A view of the same storage."""
        return MetaArray(shape, self.dtype, strides, self.storage, self.offset if offset is None else offset)

    def __repr__(self) -> str:
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"

    __hash__ = object.__hash__

    # -- values: none ----------------------------------------------------------------------------------
    def _no_data(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{NO_DATA} ({caller()} reads values, and a meta tensor has none)")

    __array__ = __bool__ = __float__ = __int__ = __index__ = __complex__ = item = tolist = _no_data

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self) -> Any:
        return (self[i] for i in range(len(self)))

    # -- NumPy's dispatch: every NumPy function and ufunc called on a MetaArray comes here --------------
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        from ._meta_rules import reduce_rule, ufunc_rule

        if method == "__call__":
            return ufunc_rule(ufunc, inputs, kwargs)
        if method in ("reduce", "accumulate"):
            return reduce_rule(ufunc, method, inputs, kwargs)
        if method == "at":
            return None  # an in-place scatter: nothing to write
        raise NotImplementedError(f"{ufunc.__name__}.{method} is not implemented for meta tensors")

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        from . import _meta_xp

        impl = getattr(_meta_xp, func.__name__, None)
        if impl is None or not callable(impl):
            raise NotImplementedError(f"{func.__name__} is not implemented for meta tensors (it has no shape rule)")
        return impl(*args, **kwargs)

    # -- operators ---------------------------------------------------------------------------------------
    def __getitem__(self, index: Any) -> MetaArray:
        from ._meta_rules import getitem

        return getitem(self, index)

    def __setitem__(self, index: Any, value: Any) -> None:
        from ._meta_rules import getitem

        getitem(self, index)  # (a bad index raises as it would when reading)

    def __matmul__(self, other: Any) -> MetaArray:
        return np.matmul(self, other)  # type: ignore[no-any-return]

    def __rmatmul__(self, other: Any) -> MetaArray:
        return np.matmul(other, self)  # type: ignore[no-any-return]

    # -- methods NumPy arrays have ---------------------------------------------------------------------
    def reshape(self, *shape: Any, **kwargs: Any) -> MetaArray:
        from . import _meta_xp

        return _meta_xp.reshape(self, shape[0] if len(shape) == 1 else shape)

    def transpose(self, *axes: Any) -> MetaArray:
        from . import _meta_xp

        return _meta_xp.transpose(self, (axes[0] if len(axes) == 1 else axes) or None)

    @property
    def T(self) -> MetaArray:  # noqa: N802 - NumPy's name
        return self.transpose()

    @property
    def mT(self) -> MetaArray:  # noqa: N802 - NumPy's name
        return np.swapaxes(self, -1, -2)  # type: ignore[return-value]

    def astype(self, dtype: Any, copy: bool = True, **kwargs: Any) -> MetaArray:
        if not copy and np.dtype(dtype) == self.dtype:
            return self
        return MetaArray(self.shape, dtype)

    def copy(self, order: str = "C") -> MetaArray:
        return MetaArray(self.shape, self.dtype)

    def ravel(self, order: str = "C") -> MetaArray:
        return self.reshape(-1)

    flatten = copy

    def fill(self, value: Any) -> None:
        return None

    def view(self, dtype: Any = None) -> MetaArray:
        if dtype is None or np.dtype(dtype) == self.dtype:
            return self.view_as(self.shape, self.strides_el)
        new = np.dtype(dtype)
        if new.itemsize != self.itemsize:
            raise NotImplementedError("a view with a dtype of another size is not implemented for meta tensors")
        return MetaArray(self.shape, new, self.strides_el, self.storage, self.offset)

    def conj(self) -> MetaArray:
        return self.view_as(self.shape, self.strides_el) if self.dtype.kind != "c" else self.copy()

    @property
    def real(self) -> MetaArray:
        return np.real(self)  # type: ignore[no-any-return]

    @property
    def imag(self) -> MetaArray:
        return np.imag(self)  # type: ignore[no-any-return]


def _method(name: str) -> Any:
    def call(self: MetaArray, *args: Any, **kwargs: Any) -> Any:
        return getattr(np, name)(self, *args, **kwargs)

    call.__name__ = name
    return call


for _name in ("sum", "mean", "max", "min", "any", "all", "argmax", "argmin", "cumsum", "cumprod", "prod", "std",
              "var", "squeeze", "swapaxes", "repeat", "clip", "round", "take", "diagonal", "nonzero", "argsort",
              "sort", "trace", "dot"):  # fmt: skip
    setattr(MetaArray, _name, _method(_name))

_BINARY = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide", "floordiv": "floor_divide",
    "mod": "remainder", "pow": "power", "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "lshift": "left_shift", "rshift": "right_shift",
}  # fmt: skip


def _binary(ufunc: Any, reflected: bool) -> Any:
    if reflected:
        return lambda self, other: ufunc(other, self)
    return lambda self, other: ufunc(self, other)


def _inplace(ufunc: Any) -> Any:
    def call(self: MetaArray, other: Any) -> MetaArray:
        ufunc(self, other, out=self)  # (checks the shapes and the cast)
        return self

    return call


for _op, _uf in _BINARY.items():
    _f = getattr(np, _uf)
    setattr(MetaArray, f"__{_op}__", _binary(_f, False))
    setattr(MetaArray, f"__r{_op}__", _binary(_f, True))
    setattr(MetaArray, f"__i{_op}__", _inplace(_f))
for _op, _uf in {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal", "eq": "equal",
                 "ne": "not_equal"}.items():  # fmt: skip
    setattr(MetaArray, f"__{_op}__", _binary(getattr(np, _uf), False))
for _op, _uf in {"neg": "negative", "pos": "positive", "abs": "absolute", "invert": "invert"}.items():
    setattr(MetaArray, f"__{_op}__", (lambda f: lambda self: f(self))(getattr(np, _uf)))

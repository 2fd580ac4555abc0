"""Recording NumPy calls: ``TracedArray``, an ndarray that reports every operation made on it while a step is
captured, and the creation functions (``np.zeros``, ``np.asarray`` ...) that are recorded too.

While a capture runs, every array a step reads through a Tensor (``t._data``) is a ``TracedArray`` view of the
same memory, so the ufuncs, NumPy functions, methods, indexing and in-place writes made on it — by operators,
by the autograd engine, by kernels — are all seen, whatever layer of Ember makes them. Arrays made from
nothing (``np.zeros(shape)``) are recorded as their creation, so a replay makes them fresh. Each call runs on
plain arrays and its results are wrapped again; outside a capture (or on another thread) a ``TracedArray``
behaves exactly as a plain array.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ..autograd._capture import CAPTURE

__all__ = ["TracedArray", "plain", "patch_numpy", "unpatch_numpy", "tracer_here", "DATA_DEPENDENT"]

_as_plain = np.ndarray.view


def tracer_here() -> Any:
    """The tracer recording on this thread now, or None."""
    tr = CAPTURE.tracer
    if tr is None or tr.paused or threading.get_ident() != tr.thread:
        return None
    return tr


def plain(x: Any) -> Any:
    """``x`` with every TracedArray inside (tuples, lists, dicts) replaced by a plain view of it."""
    c = x.__class__
    if c is TracedArray:
        return _as_plain(x, np.ndarray)
    if c is tuple or c is list:
        return c(plain(v) for v in x)
    if c is dict:
        return {k: plain(v) for k, v in x.items()}
    return x


def _plain_call(fn: Callable[..., Any], args: Any, kwargs: dict[str, Any]) -> Any:
    res = fn(*plain(args), **plain(kwargs))
    out = kwargs.get("out")
    if out is not None:  # in place: hand back the caller's own objects (``a += b`` keeps ``a``)
        return out[0] if isinstance(out, tuple) and len(out) == 1 else out
    return res


def _record(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], write: int | None = None) -> Any:
    tr = tracer_here()
    if tr is None:
        return _plain_call(fn, args, kwargs)
    return tr.call(fn, args, kwargs, write)


#: NumPy functions whose result's shape depends on the values (not capturable)
DATA_DEPENDENT = {
    np.nonzero, np.argwhere, np.flatnonzero, np.unique, np.extract, np.compress, np.bincount, np.trim_zeros,
    np.setdiff1d, np.intersect1d, np.union1d, np.setxor1d, np.unique_values, np.unique_counts,
    np.unique_inverse, np.unique_all, np.ndarray.nonzero, np.ndarray.compress,
}  # fmt: skip
#: functions writing into their first argument
WRITES_FIRST = {
    np.copyto, np.put_along_axis, np.put, np.place, np.putmask, np.fill_diagonal, operator.setitem,
    np.ndarray.fill, np.ndarray.sort, np.ndarray.put, np.ndarray.partition, np.ndarray.setfield,
}  # fmt: skip


class TracedArray(np.ndarray):
    """An ndarray whose operations are recorded while a capture runs (``_s``: its slot in the program)."""

    _s = -1
    _g = -1  # the capture it belongs to

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        fn = ufunc if method == "__call__" else getattr(ufunc, method)
        return _record(fn, inputs, kwargs, 0 if method == "at" else None)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return _record(func, args, kwargs, 0 if func in WRITES_FIRST else None)

    def __getitem__(self, index: Any) -> Any:
        return _record(operator.getitem, (self, index), {})

    def __setitem__(self, index: Any, value: Any) -> None:
        _record(operator.setitem, (self, index, value), {}, 0)

    def __iter__(self) -> Any:
        for i in range(len(self)):
            yield self[i]

    def __copy__(self) -> Any:
        return _record(np.ndarray.copy, (self,), {})

    def __deepcopy__(self, memo: Any) -> Any:
        return _record(np.ndarray.copy, (self,), {})

    # reading values on the host: recorded as a guard (inside Ember) or a reason not to capture (user code)
    def _read(self, kind: str, fn: Callable[..., Any], *args: Any) -> Any:
        value = fn(_as_plain(self, np.ndarray), *args)
        tr = tracer_here()
        if tr is not None:
            tr.host_read(self, kind, value, args)
        return value

    def item(self, *args: Any) -> Any:
        return self._read("item", np.ndarray.item, *args)

    def tolist(self) -> Any:
        return self._read("tolist", np.ndarray.tolist)

    def tobytes(self, order: Any = "C") -> bytes:
        return self._read("tobytes", np.ndarray.tobytes, order)  # type: ignore[no-any-return]

    def __bool__(self) -> bool:
        return self._read("bool", np.ndarray.__bool__)  # type: ignore[no-any-return]

    def __float__(self) -> float:
        return self._read("float", np.ndarray.__float__)  # type: ignore[no-any-return]

    def __int__(self) -> int:
        return self._read("int", np.ndarray.__int__)  # type: ignore[no-any-return]

    def __index__(self) -> int:
        return self._read("int", np.ndarray.__index__)  # type: ignore[no-any-return]

    def __complex__(self) -> complex:
        return self._read("complex", np.ndarray.__complex__)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return self._read("print", np.ndarray.__repr__)  # type: ignore[no-any-return]

    def __str__(self) -> str:
        return self._read("print", np.ndarray.__str__)  # type: ignore[no-any-return]

    def __format__(self, spec: str) -> str:
        return self._read("print", np.ndarray.__format__, spec)  # type: ignore[no-any-return]

    def __contains__(self, value: Any) -> bool:
        return self._read("bool", np.ndarray.__contains__, value)  # type: ignore[no-any-return]

    @property
    def ctypes(self) -> Any:  # type: ignore[override]
        tr = tracer_here()
        if tr is not None:
            tr.flag("the step hands an array's raw memory to foreign code (.ctypes)")
        return _as_plain(self, np.ndarray).ctypes

    @property
    def T(self) -> Any:  # type: ignore[override] # noqa: N802 - NumPy's name
        return _record(_transpose, (self,), {})

    @property
    def mT(self) -> Any:  # type: ignore[override] # noqa: N802 - NumPy's name
        return _record(_matrix_transpose, (self,), {})

    @property  # type: ignore[misc]
    def real(self) -> Any:  # type: ignore[override]
        return _record(np.real, (self,), {})

    @property  # type: ignore[misc]
    def imag(self) -> Any:  # type: ignore[override]
        return _record(np.imag, (self,), {})


def _transpose(a: Any) -> Any:
    return a.T


def _matrix_transpose(a: Any) -> Any:
    return a.mT


def _method(name: str) -> Callable[..., Any]:
    fn = getattr(np.ndarray, name)
    write = 0 if fn in WRITES_FIRST else None

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return _record(fn, (self, *args), kwargs, write)

    method.__name__ = name
    return method


for _name in (
    "reshape", "transpose", "view", "astype", "copy", "ravel", "flatten", "squeeze", "swapaxes", "argmax", "argmin",
    "argsort", "take", "repeat", "dot", "diagonal", "cumsum", "cumprod", "round", "conj", "conjugate", "searchsorted",
    "compress", "nonzero", "clip", "sum", "prod", "mean", "max", "min", "all", "any", "std", "var", "trace", "choose",
    "fill", "sort", "put", "partition", "setfield", "getfield", "byteswap",
):  # fmt: skip
    setattr(TracedArray, _name, _method(_name))


# -- creation functions: recorded, so that a replay makes its own fresh arrays -------------------------------
CREATORS = (
    "zeros", "ones", "empty", "full", "eye", "identity", "arange", "linspace", "logspace", "geomspace", "tri",
    "asarray", "asanyarray", "array", "ascontiguousarray", "asfortranarray", "frombuffer", "fromiter", "require",
    "zeros_like", "ones_like", "empty_like", "full_like", "copy",
)  # fmt: skip
_SAVED: dict[str, Any] = {}
_LOCK = threading.Lock()
_DEPTH = [0]


def _creator(orig: Callable[..., Any]) -> Callable[..., Any]:
    def create(*args: Any, **kwargs: Any) -> Any:
        tr = tracer_here()
        if tr is None:
            return orig(*args, **kwargs)
        return tr.create(orig, args, kwargs)

    create.__name__ = orig.__name__
    create.__doc__ = orig.__doc__
    create.__wrapped__ = orig  # type: ignore[attr-defined]
    return create


def patch_numpy() -> None:
    """Record NumPy's creation functions (nested captures share one patch)."""
    with _LOCK:
        _DEPTH[0] += 1
        if _DEPTH[0] > 1:
            return
        for name in CREATORS:
            orig = getattr(np, name)
            _SAVED[name] = orig
            setattr(np, name, _creator(orig))


def unpatch_numpy() -> None:
    with _LOCK:
        _DEPTH[0] -= 1
        if _DEPTH[0]:
            return
        for name, orig in _SAVED.items():
            setattr(np, name, orig)
        _SAVED.clear()


def original(name: str) -> Callable[..., Any]:
    """NumPy's own ``np.<name>`` (also while it is patched)."""
    return _SAVED.get(name) or getattr(np, name)  # type: ignore[no-any-return]

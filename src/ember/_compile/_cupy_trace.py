"""Recording the CuPy backend: CuPy has no dispatch hook, so its functions and array methods are swapped.

For the capture only, the public functions of ``cupy`` (and of the submodules Ember's kernels reach through
``xp``: ``linalg``, ``fft``, ``lib.stride_tricks``; ``cupyx`` and ``cupyx.scipy.special``) become recording
ones — a ufunc becomes a stand-in whose call and ``reduce``/``accumulate``/``at``/``outer`` record — and
``cupy.ndarray`` (a Python class over CuPy's extension type since CuPy 13) gets recording operators, indexing,
methods and properties, and reads of values on the host that report to the tracer as NumPy's do. Each
recorded call goes through ``Tracer.call``: CuPy arrays are known by identity (``_known.py``), a replay calls
the original function (or ``operator.add`` ... for an operator) on the replayed arrays. Calls made inside a
recorded one (CuPy's own Python code) are not recorded, and other threads are never recorded. ``install``
takes the hooks' ``swap`` so everything is put back with the rest of the capture's changes.

No GPU was available when this was written: it is checked by reading CuPy's sources, not by running it.
"""

from __future__ import annotations

import operator
import sys
import types
from collections.abc import Callable
from typing import Any

from ._ndarray import tracer_here

__all__ = ["install"]

#: functions answering about shapes, types or the library, and CuPy's own machinery: never recorded
_STATIC = {
    "shape", "ndim", "size", "result_type", "can_cast", "min_scalar_type", "may_share_memory", "shares_memory",
    "iscomplexobj", "isrealobj", "isfortran", "isscalar", "get_array_module", "issubdtype", "promote_types",
    "common_type", "obj2sctype", "get_default_memory_pool", "get_default_pinned_memory_pool", "is_available",
    "show_config", "fuse", "get_include", "binary_repr", "base_repr", "broadcast_shapes", "printoptions",
    "set_printoptions", "get_printoptions", "seterr", "geterr", "errstate", "memoize", "clear_memo",
    "get_current_stream",
}  # fmt: skip
#: functions whose result's shape depends on the values (not capturable)
_DATA_DEPENDENT = {
    "nonzero", "argwhere", "flatnonzero", "unique", "extract", "compress", "trim_zeros", "setdiff1d",
    "intersect1d", "union1d", "setxor1d", "unique_values", "unique_counts", "unique_inverse", "unique_all",
}  # fmt: skip
#: functions writing into their first argument
_WRITES_FIRST = {"copyto", "put_along_axis", "put", "place", "putmask", "fill_diagonal", "scatter_add", "scatter_max",
                 "scatter_min"}  # fmt: skip
_UFUNC_METHODS = {"reduce": None, "accumulate": None, "outer": None, "reduceat": None, "at": 0}

_BINARY: dict[str, Callable[..., Any]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "matmul": operator.matmul,
    "and": operator.and_, "or": operator.or_, "xor": operator.xor, "lshift": operator.lshift,
    "rshift": operator.rshift,
}  # fmt: skip
_INPLACE: dict[str, Callable[..., Any]] = {
    "iadd": operator.iadd, "isub": operator.isub, "imul": operator.imul, "itruediv": operator.itruediv,
    "ifloordiv": operator.ifloordiv, "imod": operator.imod, "ipow": operator.ipow, "iand": operator.iand,
    "ior": operator.ior, "ixor": operator.ixor, "imatmul": operator.imatmul,
}  # fmt: skip
_COMPARE: dict[str, Callable[..., Any]] = {
    "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq, "ne": operator.ne,
}  # fmt: skip
_UNARY: dict[str, Callable[..., Any]] = {
    "neg": operator.neg, "pos": operator.pos, "abs": operator.abs, "invert": operator.invert,
}  # fmt: skip
_METHODS = (
    "reshape", "transpose", "view", "astype", "copy", "ravel", "flatten", "squeeze", "swapaxes", "argmax", "argmin",
    "argsort", "take", "repeat", "dot", "diagonal", "cumsum", "cumprod", "round", "conj", "conjugate", "searchsorted",
    "clip", "sum", "prod", "mean", "max", "min", "all", "any", "std", "var", "trace", "choose", "fill", "sort", "put",
    "partition", "get", "set",
)  # fmt: skip
_METHOD_WRITES = {"fill", "sort", "put", "partition", "set"}
_PROPERTIES = ("T", "mT", "real", "imag")
#: reads of a value on the host -> the tracer's kind (a guard inside Ember; refused in the user's code)
_READS = {"item": "item", "tolist": "tolist", "__bool__": "bool", "__float__": "float", "__int__": "int",
          "__index__": "int", "__complex__": "complex", "tobytes": "tobytes", "__repr__": "print", "__str__": "print",
          "__format__": "print"}  # fmt: skip


def _defined(cls: type, name: str) -> Any:
    return next((vars(c)[name] for c in cls.__mro__ if name in vars(c)), None)


def _refuse(tr: Any, name: str) -> None:
    tr.flag(f"{name}: a result whose shape depends on the values")


def _function(orig: Callable[..., Any], name: str) -> Callable[..., Any]:
    write = 0 if name in _WRITES_FIRST else None
    dependent = name in _DATA_DEPENDENT

    def call(*args: Any, **kwargs: Any) -> Any:
        tr = tracer_here()
        if tr is None:
            return orig(*args, **kwargs)
        if dependent:
            _refuse(tr, name)
            return orig(*args, **kwargs)
        return tr.call(orig, args, kwargs, write)

    call.__name__ = getattr(orig, "__name__", name)
    call.__doc__ = getattr(orig, "__doc__", None)
    call.__wrapped__ = orig  # type: ignore[attr-defined]
    return call


class _Ufunc:
    """A CuPy ufunc while recording: calls and ufunc methods are recorded; other attributes are the ufunc's."""

    def __init__(self, orig: Any) -> None:
        self._orig = orig
        self.__name__ = getattr(orig, "__name__", "ufunc")
        self.__doc__ = getattr(orig, "__doc__", None)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        tr = tracer_here()
        if tr is None:
            return self._orig(*args, **kwargs)
        return tr.call(self._orig, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._orig, name)
        if name in _UFUNC_METHODS:
            return _function(value, name) if _UFUNC_METHODS[name] is None else _writer(value)
        return value


def _writer(orig: Callable[..., Any]) -> Callable[..., Any]:
    """``ufunc.at(a, index, values)``: writes into ``a``."""

    def call(*args: Any, **kwargs: Any) -> Any:
        tr = tracer_here()
        return orig(*args, **kwargs) if tr is None else tr.call(orig, args, kwargs, 0)

    return call


def _patch_module(mod: Any, swap: Callable[[Any, str, Any], None], ufunc: type) -> None:
    for name, value in list(vars(mod).items()):
        if name.startswith("_") or name in _STATIC or isinstance(value, type | types.ModuleType):
            continue
        if isinstance(value, ufunc):
            swap(mod, name, _Ufunc(value))
        elif callable(value):
            swap(mod, name, _function(value, name))


# -- cupy.ndarray ---------------------------------------------------------------------------------------------
def _operator(orig: Any, fn: Callable[..., Any], swapped: bool = False, write: int | None = None) -> Any:
    def method(self: Any, *other: Any) -> Any:
        tr = tracer_here()
        if tr is None:
            return orig(self, *other)
        return tr.call(fn, (*other, self) if swapped else (self, *other), {}, write)

    return method


def _getitem(orig: Any) -> Any:
    def method(self: Any, index: Any) -> Any:
        tr = tracer_here()
        return orig(self, index) if tr is None else tr.call(operator.getitem, (self, index), {})

    return method


def _setitem(orig: Any) -> Any:
    def method(self: Any, index: Any, value: Any) -> None:
        tr = tracer_here()
        if tr is None:
            orig(self, index, value)
        else:
            tr.call(operator.setitem, (self, index, value), {}, 0)

    return method


def _method(orig: Any, name: str) -> Any:
    write = 0 if name in _METHOD_WRITES else None

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        tr = tracer_here()
        if tr is None:
            return orig(self, *args, **kwargs)
        return tr.call(orig, (self, *args), kwargs, write)

    method.__name__ = name
    return method


def _getter(name: str) -> Callable[[Any], Any]:
    def get(a: Any) -> Any:
        return getattr(a, name)

    get.__name__ = name
    return get


def _property(orig: Any, name: str) -> property:
    get = _getter(name)

    def fget(self: Any) -> Any:
        tr = tracer_here()
        return orig.__get__(self, type(self)) if tr is None else tr.call(get, (self,), {})

    def fset(self: Any, value: Any) -> None:
        orig.__set__(self, value)

    return property(fget, fset if hasattr(orig, "__set__") else None)


def _read(orig: Any, kind: str) -> Any:
    def method(self: Any, *args: Any) -> Any:
        tr = tracer_here()
        if tr is None:
            return orig(self, *args)
        tr.suspended += 1  # (CuPy reads through its own methods: one read, reported once)
        try:
            value = orig(self, *args)
        finally:
            tr.suspended -= 1
        s = tr.tknown.get(id(self))
        if s is not None:
            tr.host_read_slot(s, kind, args, value)
        return value

    return method


def _iter(self: Any) -> Any:
    for i in range(len(self)):
        yield self[i]


def _array_ufunc(orig: Any) -> Any:
    """NumPy's ufuncs on CuPy arrays (a NumPy scalar on the left of an operator): recorded as NumPy's call."""

    def method(self: Any, ufunc: Any, how: str, *inputs: Any, **kwargs: Any) -> Any:
        tr = tracer_here()
        if tr is None:
            return orig(self, ufunc, how, *inputs, **kwargs)
        fn = ufunc if how == "__call__" else getattr(ufunc, how)
        return tr.call(fn, inputs, kwargs, 0 if how == "at" else None)

    return method


def _array_function(orig: Any) -> Any:
    """NumPy's functions on CuPy arrays (``np.sum(a)`` dispatches to CuPy): recorded as NumPy's call."""

    def method(self: Any, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        tr = tracer_here()
        return orig(self, func, types, args, kwargs) if tr is None else tr.call(func, args, kwargs)

    return method


def _patch_array(cls: type, swap: Callable[[Any, str, Any], None]) -> None:
    def put(attr: str, make: Callable[..., Any], **kw: Any) -> None:
        orig = _defined(cls, attr)
        if orig is not None:
            swap(cls, attr, make(orig, **kw))

    for short, fn in _BINARY.items():
        put(f"__{short}__", _operator, fn=fn)
        put(f"__r{short}__", _operator, fn=fn, swapped=True)
    for short, fn in _INPLACE.items():
        put(f"__{short}__", _operator, fn=fn, write=0)
    for short, fn in {**_COMPARE, **_UNARY}.items():
        put(f"__{short}__", _operator, fn=fn)
    put("__getitem__", _getitem)
    put("__setitem__", _setitem)
    put("__iter__", _iter_of)
    put("__array_ufunc__", _array_ufunc)
    put("__array_function__", _array_function)
    for name in _METHODS:
        put(name, _method, name=name)
    for name in ("nonzero", "compress"):
        put(name, _dependent, name=name)
    for name in _PROPERTIES:
        put(name, _property, name=name)
    for name, kind in _READS.items():
        put(name, _read, kind=kind)


def _iter_of(orig: Any) -> Any:
    return _iter


def _dependent(orig: Any, name: str) -> Any:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        tr = tracer_here()
        if tr is not None:
            _refuse(tr, name)
        return orig(self, *args, **kwargs)

    return method


def install(swap: Callable[[Any, str, Any], None]) -> bool:
    """Swap CuPy's functions and array methods for recording ones (``swap(owner, name, value)`` keeps what it
    replaces, to put back); False when CuPy is not imported or its array class cannot take them (CuPy < 13)."""
    cupy = sys.modules.get("cupy")
    if cupy is None:
        return False
    cls = cupy.ndarray
    if not isinstance(cls, type) or not cls.__flags__ & (1 << 9):  # not a Python class (Py_TPFLAGS_HEAPTYPE)
        return False
    import importlib

    for name in ("cupy", "cupy.linalg", "cupy.fft", "cupy.lib.stride_tricks", "cupyx", "cupyx.scipy.special"):
        try:
            mod = importlib.import_module(name)
        except ImportError:  # pragma: no cover - every CuPy 13+ has them
            continue
        _patch_module(mod, swap, cupy.ufunc)
    _patch_array(cls, swap)
    return True

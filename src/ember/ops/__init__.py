"""The operator layer: one ``Op`` per operator (forward and backward together), and thin functions.

Each module lists its public functions in ``__all__`` and the ones that are also Tensor methods in
``METHODS``; this package gathers them. ``ember.ops.METHODS`` maps method names to functions, and
an operator is added in one place. At import end every method is bound onto ``Tensor`` as a class attribute
(``bind_method``); ``Tensor`` has no ``__getattr__`` (it would slow every attribute read on a tensor).
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable
from typing import Any

from .. import _creation, _legacy
from .._tensor import Tensor
from ..multiprocessing import _shared
from . import (
    _blas,
    _comparison,
    _indexing,
    _indexing_copies,
    _indexing_gather,
    _indexing_join,
    _indexing_view,
    _inplace_view,
    _lapack,
    _linalg_decomp,
    _linalg_lu,
    _linalg_norms,
    _linalg_solvers,
    _other_convert,
    _other_cumulative,
    _other_diagonal,
    _other_math,
    _other_numeric,
    _other_shape,
    _pointwise_binary,
    _pointwise_complex,
    _pointwise_logical,
    _pointwise_special,
    _pointwise_unary,
    _random,
    _random_inplace,
    _reduction,
    _reduction_stats,
    _resize,
    _special_fns,
    _spectral,
    _spectral_windows,
)
from ._blas import *  # noqa: F403
from ._comparison import *  # noqa: F403
from ._indexing import *  # noqa: F403
from ._indexing_copies import *  # noqa: F403
from ._indexing_gather import *  # noqa: F403
from ._indexing_join import *  # noqa: F403
from ._indexing_view import *  # noqa: F403
from ._inplace import inplace_method
from ._inplace_view import *  # noqa: F403
from ._lapack import *  # noqa: F403
from ._linalg_decomp import *  # noqa: F403
from ._linalg_lu import *  # noqa: F403
from ._linalg_norms import *  # noqa: F403
from ._linalg_solvers import *  # noqa: F403
from ._other_convert import *  # noqa: F403
from ._other_cumulative import *  # noqa: F403
from ._other_diagonal import *  # noqa: F403
from ._other_math import *  # noqa: F403
from ._other_numeric import *  # noqa: F403
from ._other_shape import *  # noqa: F403
from ._out import OUT_OPS, with_out
from ._pointwise_binary import *  # noqa: F403
from ._pointwise_complex import *  # noqa: F403
from ._pointwise_logical import *  # noqa: F403
from ._pointwise_special import *  # noqa: F403
from ._pointwise_unary import *  # noqa: F403
from ._random import *  # noqa: F403
from ._random_inplace import *  # noqa: F403
from ._reduction import *  # noqa: F403
from ._reduction_stats import *  # noqa: F403
from ._special_fns import *  # noqa: F403
from ._spectral import *  # noqa: F403
from ._spectral_windows import *  # noqa: F403

_MODULES = (
    _blas,
    _comparison,
    _indexing,
    _indexing_copies,
    _indexing_gather,
    _indexing_join,
    _indexing_view,
    _inplace_view,
    _lapack,
    _linalg_decomp,
    _linalg_lu,
    _linalg_norms,
    _linalg_solvers,
    _other_convert,
    _other_cumulative,
    _other_diagonal,
    _other_math,
    _other_numeric,
    _other_shape,
    _pointwise_binary,
    _pointwise_complex,
    _pointwise_logical,
    _pointwise_special,
    _pointwise_unary,
    _random,
    _random_inplace,
    _reduction,
    _reduction_stats,
    _special_fns,
    _spectral,
    _spectral_windows,
)

__all__ = sorted({name for m in _MODULES for name in m.__all__})


def _numpy_names(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Let ``fn`` take NumPy's ``axis=`` / ``keepdims=`` for its ``dim`` / ``keepdim`` (as PyTorch does)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn
    if "dim" not in params and "keepdim" not in params:
        return fn

    @functools.wraps(fn)
    def accepts_axis(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            for alias, name in (("axis", "dim"), ("keepdims", "keepdim")):
                if alias in kwargs:
                    if name in kwargs:
                        raise TypeError(f"{fn.__name__}: got both {name}= and its alias {alias}=")
                    kwargs[name] = kwargs.pop(alias)
        return fn(*args, **kwargs)

    return accepts_axis


for _name in __all__:
    globals()[_name] = _numpy_names(globals()[_name])
    if _name in OUT_OPS:
        globals()[_name] = with_out(_name, globals()[_name])

#: Tensor methods served by operators: name -> function taking the tensor first.
METHODS: dict[str, Callable[..., Any]] = {name: _numpy_names(getattr(m, name)) for m in _MODULES for name in m.METHODS}
METHODS.update(
    {
        "new_zeros": _creation.new_zeros,
        "new_ones": _creation.new_ones,
        "new_full": _creation.new_full,
        "new_empty": _creation.new_empty,
        "new_empty_strided": _creation.new_empty_strided,
        "new_tensor": _creation.new_tensor,
        "new": _legacy.new,
        "share_memory_": _shared.share_memory_,
        "is_shared": _shared.is_shared,
        "where": _indexing.where_method,
        "resize_": _resize.resize_,
        "resize_as_": _resize.resize_as_,
        "const_data_ptr": _indexing_view.data_ptr,
        "unsafe_chunk": _indexing_join.chunk,  # (PyTorch's unchecked forms: Ember's views are always checked)
        "unsafe_split": _indexing_join.split,
        "unsafe_split_with_sizes": _indexing_copies.split_with_sizes,
        "__rdiv__": Tensor.__rtruediv__,  # (PyTorch keeps Python 2's name of the reflected division)
    }
)

#: Operators that also have an in-place ``name_`` method (``t.clamp_(0, 1)``, ``t.masked_fill_(m, 0)``).
INPLACE = {
    "abs", "absolute", "acos", "acosh", "add", "addbmm", "addcdiv", "addcmul", "addmm", "addmv", "addr", "arccos",
    "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "asin", "asinh", "atan", "atan2", "atanh",
    "baddbmm", "bitwise_and", "bitwise_left_shift", "bitwise_not", "bitwise_or", "bitwise_right_shift", "bitwise_xor",
    "ceil", "clamp", "clamp_max", "clamp_min", "clip", "conj_physical", "copysign", "cos", "cosh", "cumprod",
    "cumsum", "deg2rad", "digamma", "div", "divide", "eq", "erf", "erfc", "erfinv", "exp", "exp2", "expm1", "fix",
    "float_power", "floor", "floor_divide", "fmod", "frac", "gcd", "ge", "greater", "greater_equal", "gt",
    "heaviside", "hypot", "i0", "igamma", "igammac", "index_add", "index_copy", "index_fill", "lcm", "ldexp", "le",
    "lerp", "less", "less_equal", "lgamma", "log", "log10", "log1p", "log2", "logical_and", "logical_not",
    "logical_or", "logical_xor", "logit", "lt", "masked_fill", "masked_scatter", "mul", "multiply", "mvlgamma",
    "nan_to_num", "ne", "neg", "negative", "nextafter", "not_equal", "polygamma", "pow", "rad2deg", "reciprocal",
    "relu", "remainder", "renorm", "round", "rsqrt", "scatter", "scatter_add", "scatter_reduce", "sgn", "sigmoid",
    "sign", "sin", "sinc", "sinh", "sqrt", "square", "sub", "subtract", "tan", "tanh", "tril", "triu", "true_divide",
    "trunc", "xlogy",
}  # fmt: skip


def register_method(name: str, fn: Callable[..., Any]) -> None:
    """Expose ``fn(tensor, ...)`` as ``Tensor.<name>`` (used by ember.nn.functional and extensions)."""
    METHODS[name] = _numpy_names(fn)
    bind_method(name, METHODS[name])


_BOUND: set[str] = set()


def bind_method(name: str, fn: Callable[..., Any]) -> None:
    """Make operator ``fn`` the method ``Tensor.<name>`` (a class attribute: Tensor has no ``__getattr__``).

    Methods written in the class body win; a name bound before is rebound. A callable that is not a Python
    function (a ``functools.partial``, a builtin) is bound through a small function, so it receives the tensor.
    """
    if name in Tensor.__dict__ and name not in _BOUND:
        return
    if not isinstance(fn, types.FunctionType):
        fn = _as_function(name, fn)
    setattr(Tensor, name, fn)
    _BOUND.add(name)
    if name in INPLACE:
        bind_inplace(name, fn)


def _as_function(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = getattr(fn, "__doc__", None)
    return method


def bind_inplace(base: str, fn: Callable[..., Any]) -> None:
    name = base + "_"
    if name in Tensor.__dict__ and name not in _BOUND:
        return

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return inplace_method(self, fn, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place ``{base}``: the result is written into this tensor."
    setattr(Tensor, name, method)
    _BOUND.add(name)


for _name, _fn in list(METHODS.items()):
    bind_method(_name, _fn)
for _name, _prop in _pointwise_complex.PROPERTIES.items():
    setattr(Tensor, _name, _prop)


def __getattr__(name: str) -> Any:
    """``ember.ops.<namespace>`` of the custom operators (``torch.ops.ns.name``; ``ember.library``)."""
    from ._custom import CUSTOM_OPS, OpNamespace

    if name in CUSTOM_OPS:
        return OpNamespace(name)
    raise AttributeError(f"module 'ember.ops' has no attribute {name!r}")

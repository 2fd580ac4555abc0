"""``out=``: the operators that take it in PyTorch write their result into the given tensor(s), with PyTorch's
rules: the result's dtype must cast to ``out``'s (float into an integer tensor is refused; the ops of ``_EXACT`` and
those returning several tensors want exactly the result's, as PyTorch's non-elementwise kernels), an ``out`` of another
shape is resized (with PyTorch's deprecation warning unless it was empty), the operation is not differentiable
(refused while an input requires grad), and ``out`` itself is returned. Ops returning several tensors
(``max(dim)``, ``sort``, ``topk``, ...) take a tuple.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

from .._dtype import DType
from .._errors import DTypeError, ShapeError
from .._tensor import Tensor

__all__ = ["OUT_OPS", "with_out"]

#: PyTorch's functions with an ``out=`` argument (that Ember has)
_OUT_NAMES = """
abs acos acosh add addbmm addcdiv addcmul addmm addmv addr all amax amin aminmax any asin asinh atan atan2 atanh
baddbmm bernoulli bitwise_and bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor bmm
bucketize cat ceil chain_matmul clamp clip column_stack concat concatenate copysign cos cosh cross cummax cummin
cumprod cumsum deg2rad diag diff digamma div divide dot dstack eq erf erfc erfinv exp exp2 expm1 fix float_power
floor floor_divide fmax fmin fmod frac gather gcd ge ger greater greater_equal gt heaviside histc hstack hypot
igamma index_select inner inverse isneginf isposinf kron kthvalue lcm ldexp le lerp less less_equal lgamma log log10
log1p log2 logaddexp logaddexp2 logcumsumexp logical_and logical_not logical_or logical_xor logit logspace logsumexp
lt masked_select matmul matrix_power max maximum mean min minimum mm msort mul multinomial multiply mv mvlgamma
nan_to_num nanmean nanquantile ne neg negative nextafter nonzero norm not_equal outer polygamma pow quantile rad2deg
reciprocal remainder renorm round row_stack rsqrt searchsorted sgn sigmoid sign signbit sin sinc sinh sort sqrt
square stack std sub subtract take_along_dim tan tanh topk tril triu trunc var vdot vstack where
xlogy sum prod argmax argmin nansum tensordot index_add take clamp_min clamp_max true_divide scatter scatter_add
index_copy
"""
OUT_OPS = frozenset(_OUT_NAMES.split())

#: ops whose result must be written into an ``out`` of exactly its dtype (PyTorch refuses another, each checked
#: under torch: "Expected out tensor to have dtype float, but got double"); ops returning several tensors always
_EXACT_NAMES = """
argmax argmin nonzero searchsorted bucketize gather aminmax multinomial take take_along_dim index_select masked_select
index_add scatter scatter_add index_copy diag tril triu msort renorm cross matmul mm bmm mv dot vdot addmm addmv
addbmm baddbmm inner tensordot amax amin norm matrix_power chain_matmul inverse histc nan_to_num clamp clamp_min
clamp_max clip frac sgn logcumsumexp quantile nanquantile where signbit isposinf isneginf all any
"""
_EXACT = frozenset(_EXACT_NAMES.split())


def _rank(dtype: DType) -> int:
    """0 bool, 1 integer, 2 floating, 3 complex: a result may go into an ``out`` of its rank or higher."""
    return {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}.get(dtype.kind, 2)


def _requires_grad(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    from ..autograd._grad_mode import is_grad_enabled

    if not is_grad_enabled():
        return False
    vals = list(args) + list(kwargs.values())
    flat = [v for a in vals for v in (a if isinstance(a, (list, tuple)) else (a,))]
    return any(isinstance(v, Tensor) and v.requires_grad for v in flat)


def _write(name: str, result: Tensor, out: Any, exact: bool) -> Tensor:
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be a Tensor, not {type(out).__name__}")
    if out.device != result.device:
        raise ShapeError(f"{name}(): expected out tensor on {result.device}, got {out.device}")
    if exact and out.dtype != result.dtype:
        raise DTypeError(f"{name}(): expected out tensor to have dtype {result.dtype}, but got {out.dtype} instead")
    if _rank(result.dtype) > _rank(out.dtype):
        raise DTypeError(f"{name}(): result type {result.dtype} can't be cast to the desired output type {out.dtype}")
    if tuple(out.shape) != tuple(result.shape):
        if out.numel() != 0:
            warnings.warn(
                f"An output with one or more elements was resized since it had shape {list(out.shape)}, which does "
                f"not match the required output shape {list(result.shape)}. This behavior is deprecated, and in a "
                "future PyTorch release outputs will not be resized unless they have zero elements. You can "
                "explicitly reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0).",
                UserWarning,
                stacklevel=4,
            )
        out.resize_(*result.shape)
    from ..autograd._grad_mode import no_grad

    with no_grad():
        out.copy_(result)
    return out


def with_out(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` taking PyTorch's ``out=`` keyword."""

    @functools.wraps(fn)
    def call(*args: Any, out: Any = None, **kwargs: Any) -> Any:
        if out is None:
            return fn(*args, **kwargs)
        if _requires_grad(args, kwargs):
            raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                               "differentiation, but one of the arguments requires grad.")  # fmt: skip
        result = fn(*args, **kwargs)
        if isinstance(result, tuple):
            if not isinstance(out, (tuple, list)) or len(out) != len(result):
                raise TypeError(f"{name}(): out must be a tuple of {len(result)} tensors for this call")
            for r, o in zip(result, out, strict=True):
                _write(name, r, o, True)  # (values and indices alike: PyTorch's rule for max(dim), sort, ...)
            return type(result)(*out) if hasattr(result, "_fields") else tuple(out)
        return _write(name, result, out, name in _EXACT)

    return call

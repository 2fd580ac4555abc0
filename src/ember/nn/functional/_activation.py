"""Activation functions: one table row per function (forward on arrays, derivative as Tensor ops)."""

from __future__ import annotations

import math
from typing import Any

from ..._creation import rand
from ..._errors import DTypeError, ShapeError, ValueRangeError
from ..._tensor import Tensor
from ...autograd._autocast import autocast_op
from ...autograd._function import Op
from ...autograd._grad_mode import STATE
from ...ops import register_method
from ...ops._indexing import where
from ...ops._indexing_join import chunk
from ...ops._pointwise_special import erf
from ...ops._pointwise_unary import clamp, exp, sigmoid, tanh
from ...ops._pointwise_unary import relu as _relu
from ...ops._util import _float, pointwise_op

__all__ = [
    "celu", "elu", "gelu", "glu", "hardshrink", "hardsigmoid", "hardswish", "hardtanh", "leaky_relu", "logsigmoid",
    "mish", "prelu", "relu", "relu6", "rrelu", "selu", "silu", "softplus", "softshrink", "softsign", "tanhshrink",
    "threshold", "celu_", "elu_", "hardtanh_", "leaky_relu_", "relu_", "rrelu_", "selu_", "threshold_",
]  # fmt: skip

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_K = math.sqrt(2.0 / math.pi)


def _softplus_array(xp: Any, x: Any, beta: float, threshold: float) -> Any:
    bx = x * beta
    return xp.astype(xp.where(bx > threshold, x, xp.logaddexp(0, bx) / beta), x.dtype, copy=False)


def _gelu_exact_grad(x: Tensor) -> Tensor:
    return 0.5 * (1.0 + erf(x * _INV_SQRT2)) + x * exp(-0.5 * x * x) * _INV_SQRT_2PI


def _gelu_tanh_grad(x: Tensor) -> Tensor:
    inner = _GELU_K * (x + 0.044715 * x * x * x)
    t = tanh(inner)
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _GELU_K * (1.0 + 3 * 0.044715 * x * x)


class Gelu(Op):
    """GELU as one node, PyTorch's ``gelu``: the backend kernels ``gelu`` forward and ``gelu_backward`` (first
    order). It keeps the input and, when ``keep`` (a gradient will be needed), what the backend's forward kernel
    returned for backward (NumPy/CuPy: the derivative; torch: nothing); ``create_graph`` differentiates the
    closed-form derivative as a graph."""

    approximate = "none"
    saved: Any = None

    def forward(self, x: Any, keep: bool) -> Any:
        y, self.saved = self.backend.gelu(x, self.approximate, keep)
        return y

    def backward_arrays(self, g: Any) -> tuple[Any, None]:
        x = self.inputs[0]._data  # type: ignore[index]
        return self.backend.gelu_backward(g, x, self.approximate, self.saved), None

    def backward(self, g: Tensor) -> tuple[Tensor, None]:
        x = self.inputs[0]  # type: ignore[index]
        if not STATE.enabled:  # anomaly mode, first order: the kernel
            return Tensor._make(self.backward_arrays(g._data)[0], self.backend), None
        return g * (_gelu_tanh_grad(x) if self.approximate == "tanh" else _gelu_exact_grad(x)), None


class GeluTanh(Gelu):
    """GELU with ``Phi`` by its tanh approximation (``approximate="tanh"``)."""

    approximate = "tanh"


def _silu_grad(x: Tensor, y: Any) -> Tensor:
    s = sigmoid(x)
    return s * (1 + x * (1 - s))


LeakyRelu = pointwise_op(
    "leaky_relu",
    lambda xp, x, a: xp.where(x > 0, x, x * a),
    lambda x, y, a: where(x > 0, 1.0, x.new_full((), a)),  # the slope in x's dtype (a Python float gave float32)
)
Elu = pointwise_op(
    "elu",
    lambda xp, x, a, s: xp.astype(xp.where(x > 0, x * s, (xp.expm1(xp.minimum(x, 0)) * a * s)), x.dtype, copy=False),
    # (x at 0 is held constant in exp: a zero second derivative there, PyTorch's; clamp passed the gradient at 0)
    lambda x, y, a, s: where(x > 0, s, exp(where(x < 0, x, 0.0)) * (a * s)).to(x.dtype),
)
Celu = pointwise_op(
    "celu",
    lambda xp, x, a: xp.astype(xp.where(x > 0, x, xp.expm1(xp.minimum(x, 0) / a) * a), x.dtype, copy=False),
    lambda x, y, a: where(x > 0, 1.0, exp(where(x < 0, x, 0.0) / a)).to(x.dtype),  # (see Elu)
)
Silu = pointwise_op("silu", lambda xp, x: x / (1 + xp.exp(-x)), _silu_grad)
Softplus = pointwise_op(
    "softplus",
    _softplus_array,
    lambda x, y, b, t: where(x * b > t, 1.0, sigmoid(x * b)).to(x.dtype),
)
Softsign = pointwise_op("softsign", lambda xp, x: x / (1 + xp.abs(x)), lambda x, y: 1 / ((1 + x.abs()) ** 2))
Hardsigmoid = pointwise_op(
    "hardsigmoid",
    lambda xp, x: xp.astype(xp.clip(x / 6 + 0.5, 0, 1), x.dtype, copy=False),
    lambda x, y: ((x > -3) & (x < 3)).to(x.dtype) / 6,
)
Hardswish = pointwise_op(
    "hardswish",
    lambda xp, x: xp.astype(x * xp.clip(x + 3, 0, 6) / 6, x.dtype, copy=False),
    lambda x, y: where(x <= -3, 0.0, where(x >= 3, 1.0, (2 * x + 3) / 6)).to(x.dtype),  # (PyTorch's at -3 and 3)
)
Shrink = pointwise_op(
    "shrink",
    lambda xp, x, lam, soft: xp.astype(xp.where(xp.abs(x) > lam, x - (xp.sign(x) * lam if soft else 0), 0), x.dtype),
    lambda x, y, lam, soft: (x.abs() > lam).to(x.dtype),
)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(x, 0)`` (``inplace``: written into ``input`` and returned, as ``relu_``)."""
    return relu_(input) if inplace else _relu(input)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(x, 0), 6)``."""
    return hardtanh(input, 0.0, 6.0, inplace)


class Hardtanh(Op):
    """``clip(x, lo, hi)`` whose gradient passes strictly inside ``(lo, hi)``: PyTorch's hardtanh (and relu6) give 0
    at the bounds, where ``clamp``'s inclusive rule gives 1."""

    def forward(self, x: Any, lo: float, hi: float) -> Any:
        return self.backend.xp.clip(x, lo, hi)

    def backward(self, g: Tensor) -> tuple[Any, None, None]:
        x, lo, hi = self.inputs  # type: ignore[misc]
        return g * ((x > lo) & (x < hi)), None, None


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` clamped to ``[min_val, max_val]`` (its gradient 0 at the bounds, as PyTorch's)."""
    if min_val > max_val:
        raise ValueRangeError(f"hardtanh: min_val {min_val} is greater than max_val {max_val}")
    if inplace:
        return input.copy_(hardtanh(_src(input), min_val, max_val))
    if input.dtype.kind in "iu":  # an integer input keeps its dtype (PyTorch clamps into a tensor like it)
        return clamp(input, min_val, max_val).to(input.dtype)
    return Hardtanh.apply(_float(input), float(min_val), float(max_val))


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``x`` for positive inputs, ``negative_slope * x`` otherwise."""
    if inplace:
        return input.copy_(leaky_relu(_src(input), negative_slope))
    return LeakyRelu.apply(_float(input), float(negative_slope))


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` for positive inputs, ``alpha * (exp(x) - 1)`` otherwise."""
    if inplace:
        return input.copy_(elu(_src(input), alpha))
    return Elu.apply(_float(input), float(alpha), 1.0)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """Self-normalising ELU with the fixed constants of Klambauer et al."""
    if inplace:
        return input.copy_(selu(_src(input)))
    return Elu.apply(_float(input), _SELU_ALPHA, _SELU_SCALE)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    if alpha == 0:
        raise ValueRangeError("celu: alpha must not be 0")
    if inplace:
        return input.copy_(celu(_src(input), alpha))
    return Celu.apply(_float(input), float(alpha))


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """``x * Phi(x)`` (exact, with erf) or its tanh approximation (``approximate='tanh'``)."""
    if approximate not in ("none", "tanh"):
        raise ValueRangeError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    x = _float(input)
    return (Gelu if approximate == "none" else GeluTanh).apply(x, STATE.enabled and x.requires_grad)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)`` (swish)."""
    if inplace:
        return input.copy_(silu(_src(input)))
    return Silu.apply(_float(input))


@autocast_op("softplus")
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta x)) / beta``, linear above ``threshold``; finite for any input."""
    return Softplus.apply(_float(input), float(beta), float(threshold))


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))``."""
    if inplace:
        return input.copy_(mish(_src(input)))
    return input * tanh(softplus(input))


def softsign(input: Tensor) -> Tensor:
    """``x / (1 + |x|)``."""
    return Softsign.apply(_float(input))


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``clamp(x / 6 + 1/2, 0, 1)``."""
    if inplace:
        return input.copy_(hardsigmoid(_src(input)))
    return Hardsigmoid.apply(_float(input))


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * hardsigmoid(x)``."""
    if inplace:
        return input.copy_(hardswish(_src(input)))
    return Hardswish.apply(_float(input))


def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(x))``, finite for large |x|."""
    return -softplus(-_float(input))


def tanhshrink(input: Tensor) -> Tensor:
    """``x - tanh(x)``."""
    return input - tanh(input)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, else 0."""
    return Shrink.apply(_float(input), float(lambd), False)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0."""
    if not lambd >= 0:
        raise ValueRangeError(f"softshrink: lambda must be in range [0, inf), found {lambd}")
    return Shrink.apply(_float(input), float(lambd), True)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``x`` where ``x > threshold``, else ``value``."""
    if inplace:
        return input.copy_(where(input > threshold, _src(input), value))
    return where(input > threshold, input, value)


@autocast_op("prelu")
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """Leaky ReLU with a learned slope: one per channel (dim 1) or a single one."""
    if weight.dtype is not input.dtype:
        raise DTypeError(f"prelu: input has dtype {input.dtype} but weight {weight.dtype}; they must match")
    if weight.ndim > 1:
        raise ShapeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}")
    n = weight.numel()
    if n != 1 and (input.ndim < 2 or input.shape[1] != n):
        raise ShapeError(f"prelu: {n} slopes do not match the channels of an input of shape {tuple(input.shape)}")
    w = weight.reshape((n,) + (1,) * (input.ndim - 2)) if n != 1 and input.ndim > 2 else weight.reshape(-1)
    if n == 1:
        w = w.reshape(())
    return where(input > 0, input, input * w)


def rrelu(
    input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False
) -> Tensor:
    """Randomized leaky ReLU: a random slope in ``[lower, upper]`` when training, their mean otherwise."""
    if lower > upper:
        raise ValueRangeError(f"rrelu: Lower bound should be less than or equal to the upper bound, got {lower} > "
                              f"{upper}")  # fmt: skip
    if inplace:
        return input.copy_(rrelu(_src(input), lower, upper, training))
    if not training:
        return leaky_relu(input, (lower + upper) / 2)

    a = rand(*input.shape, dtype=input.dtype, device=input.device) * (upper - lower) + lower
    return where(input >= 0, input, input * a)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: ``a * sigmoid(b)`` for the two halves of ``dim``."""
    if input.shape[dim] % 2:
        raise ShapeError(f"glu: dim {dim} of shape {tuple(input.shape)} must have an even size")
    a, b = chunk(input, 2, dim)
    return a * sigmoid(b)


_METHODS = ("relu6", "leaky_relu", "elu", "selu", "celu", "gelu", "silu", "mish", "softplus", "hardswish", "hardshrink",
            "prelu")  # fmt: skip
for _name in _METHODS:
    register_method(_name, globals()[_name])


# -- PyTorch's in-place forms: the result written into ``input`` (a version bump autograd checks) --
_threshold = threshold  # (threshold_'s parameter shadows the function's name)


def _src(input: Tensor) -> Tensor:
    """What the out-of-place function reads: a copy when ``input`` is in a graph, since the function saves its
    input for backward and the write into ``input`` would then make backward refuse it (PyTorch computes these
    gradients from the result; relu's reads its output, so ``relu_`` needs no copy)."""
    return input.clone() if input.requires_grad else input


def relu_(input: Tensor) -> Tensor:
    return input.copy_(_relu(input))


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return input.copy_(elu(_src(input), alpha))


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return input.copy_(celu(_src(input), alpha))


def selu_(input: Tensor) -> Tensor:
    return input.copy_(selu(_src(input)))


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return input.copy_(leaky_relu(_src(input), negative_slope))


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return input.copy_(hardtanh(_src(input), min_val, max_val))


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    return input.copy_(_threshold(_src(input), threshold, value))


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    return input.copy_(rrelu(_src(input), lower, upper, training))


for _name in ("celu_", "elu_", "hardtanh_", "leaky_relu_", "relu_", "rrelu_", "selu_", "threshold_"):
    if not globals()[_name].__doc__:
        globals()[_name].__doc__ = f"``{_name[:-1]}`` written into ``input`` in place (returns ``input``)."

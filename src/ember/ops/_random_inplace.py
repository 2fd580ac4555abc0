"""In-place random sampling (``Tensor.uniform_``, ``normal_``, ``exponential_``, ``cauchy_``, ``geometric_``,
``log_normal_``, ``random_``, ``bernoulli_``) and the samplers ``normal``, ``poisson``, ``binomial`` (torch docs,
"Random sampling" and "In-place random sampling").

Every draw comes from an Ember ``Generator`` (``generator=`` or the default one) on the tensor's own backend and
device, so a seed reproduces per backend. An in-place sampler writes through ``copy_``: it bumps the version,
refuses a leaf that requires grad (as PyTorch does), and gives the overwritten value no gradient.
"""

from __future__ import annotations

import math
from typing import Any

from .._dtype import bfloat16, float16, float32, float64, int64
from .._errors import DTypeError, ShapeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._function import Op
from ._indexing_view import sum_to
from ._util import broadcast_shapes

#: the largest value of each integer dtype (``random_``'s default upper bound is one more)
_INT_MAX = {"uint8": 2**8 - 1, "int8": 2**7 - 1, "int16": 2**15 - 1, "int32": 2**31 - 1, "int64": 2**63 - 1}

__all__ = ["binomial", "normal", "poisson"]
METHODS = [
    "bernoulli_", "cauchy_", "exponential_", "geometric_", "log_normal_", "normal_", "random_", "uniform_",
]  # fmt: skip

#: the largest integer each float dtype holds exactly (``random_()``'s default upper end, as PyTorch)
_MANTISSA = {float16: 2**11, bfloat16: 2**8, float32: 2**24, float64: 2**53}


def _generator(generator: Any, op: str) -> Any:
    from .._creation import Generator, default_generator

    if generator is None:
        return default_generator
    if not isinstance(generator, Generator):
        raise TypeError(f"{op}: generator must be an ember.Generator, got {type(generator).__name__}")
    return generator


def _draw(be: Any, kind: str, shape: tuple[int, ...], dtype: Any, generator: Any, op: str) -> Any:
    """Uniform [0, 1) or standard normal samples as an array of ``dtype`` (float32 for the half types)."""
    gen = _generator(generator, op)
    d = dtype if dtype in (float32, float64) else float32
    with gen._lock:
        return (be.uniform if kind == "uniform" else be.normal)(gen._rng, shape, d)


def _float_tensor(op: str, t: Tensor) -> None:
    if not t.dtype.is_floating_point:
        raise DTypeError(f"{op}: expected a floating-point tensor, got {t.dtype}")


def _fill(t: Tensor, arr: Any) -> Tensor:
    return t.copy_(Tensor._make(arr, t._backend))


def uniform_(self: Tensor, from_: float = 0.0, to: float = 1.0, *, generator: Any = None, **kw: Any) -> Tensor:
    """Fill with samples from U[from, to)."""
    from_ = kw.pop("from", from_)
    _float_tensor("uniform_", self)
    if from_ > to:
        raise ValueRangeError(f"uniform_: expects from <= to, got from={from_} > to={to}")
    u = _draw(self._backend, "uniform", tuple(self.shape), self.dtype, generator, "uniform_")
    return _fill(self, u * (to - from_) + from_)


def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fill with samples from N(mean, std²)."""
    _float_tensor("normal_", self)
    if std < 0:
        raise ValueRangeError(f"normal_: expects std >= 0.0, got std={std}")
    z = _draw(self._backend, "normal", tuple(self.shape), self.dtype, generator, "normal_")
    return _fill(self, z * std + mean)


def exponential_(self: Tensor, lambd: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fill with samples from Exp(lambd) (density ``lambd * exp(-lambd x)``)."""
    _float_tensor("exponential_", self)
    if lambd <= 0:
        raise ValueRangeError(f"exponential_: expects lambd > 0.0, got lambd={lambd}")
    xp = self._backend.xp
    u = _draw(self._backend, "uniform", tuple(self.shape), self.dtype, generator, "exponential_")
    return _fill(self, -xp.log1p(-u) / lambd)


def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fill with samples from the Cauchy distribution."""
    _float_tensor("cauchy_", self)
    if sigma <= 0:
        raise ValueRangeError(f"cauchy_: expects sigma > 0.0, got sigma={sigma}")
    xp = self._backend.xp
    u = _draw(self._backend, "uniform", tuple(self.shape), self.dtype, generator, "cauchy_")
    return _fill(self, median + sigma * xp.tan(math.pi * (u - 0.5)))


def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *, generator: Any = None) -> Tensor:
    """Fill with ``exp(N(mean, std²))`` samples."""
    _float_tensor("log_normal_", self)
    if std <= 0:
        raise ValueRangeError(f"log_normal_: expects std > 0.0, got std={std}")
    z = _draw(self._backend, "normal", tuple(self.shape), self.dtype, generator, "log_normal_")
    return _fill(self, self._backend.xp.exp(z * std + mean))


def geometric_(self: Tensor, p: float, *, generator: Any = None) -> Tensor:
    """Fill with the number of Bernoulli(p) trials up to the first success (1, 2, ...)."""
    if not 0 < p < 1:
        raise ValueRangeError(f"geometric_: expects p in (0, 1), got p={p}")
    xp = self._backend.xp
    u = _draw(self._backend, "uniform", tuple(self.shape), float64, generator, "geometric_")
    return _fill(self, xp.floor(xp.log1p(-u) / math.log1p(-p)) + 1.0)


def bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    """Fill with 1 with probability ``p`` (a number or a tensor broadcastable to this one), else 0."""
    probs = p._data if isinstance(p, Tensor) else p
    if not isinstance(p, Tensor) and not 0 <= p <= 1:
        raise ValueRangeError(f"bernoulli_: expects 0 <= p <= 1, got p={p}")
    u = _draw(self._backend, "uniform", tuple(self.shape), float64, generator, "bernoulli_")
    return _fill(self, u < probs)


def random_(self: Tensor, from_: Any = None, to: Any = None, *, generator: Any = None, **kw: Any) -> Tensor:
    """Fill with integers drawn uniformly from [from, to) (``random_(to)``: [0, to); no bounds: [0, 2**mantissa]
    for floats, [0, max] for integers)."""
    from_ = kw.pop("from", from_)
    if to is None and from_ is not None:  # random_(to)
        from_, to = 0, from_
    from_ = 0 if from_ is None else from_
    d = self.dtype
    if to is None:
        if d.is_floating_point:
            to = _MANTISSA[d] + 1
        elif d.name == "bool":
            to = 2
        else:
            to = _INT_MAX[d.name] + 1
    if from_ >= to:
        raise ValueRangeError(f"random_: expects 'from' < 'to', got from={from_} >= to={to}")
    gen = _generator(generator, "random_")
    be = self._backend
    with gen._lock:
        arr = be.randint(gen._rng, int(from_), int(to), tuple(self.shape), int64)
    return _fill(self, arr)


class _Sampled(Op):
    """``torch.normal``'s draw: differentiable inputs, zero gradients (PyTorch does not reparameterise it)."""

    saves_inputs = False

    def forward(self, mean: Any, std: Any, z: Any) -> Any:
        return mean + std * z

    def backward(self, g: Tensor) -> tuple[Any, Any, None]:
        m, s = self.inputs[0], self.inputs[1]  # type: ignore[index]
        zero = g * 0
        gm = sum_to(zero, tuple(m.shape)) if isinstance(m, Tensor) else None
        gs = sum_to(zero, tuple(s.shape)) if isinstance(s, Tensor) else None
        return gm, gs, None


def normal(
    mean: Any,
    std: Any = 1.0,
    size: Any = None,
    *,
    generator: Any = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Samples from N(mean, std²) with every overload of ``torch.normal``: tensor/number ``mean`` and ``std``
    (broadcast), or numbers and a ``size``."""
    from .. import _creation

    if not isinstance(mean, Tensor) and not isinstance(std, Tensor):
        if size is None:
            raise TypeError("normal: with a number mean and std, pass a size")
        out = _creation.randn(*([size] if isinstance(size, int) else size), dtype=dtype, device=device,
                              generator=generator)  # fmt: skip
        out = out * float(std) + float(mean)
        return out.requires_grad_(True) if requires_grad else out
    ref = mean if isinstance(mean, Tensor) else std
    _float_tensor("normal", ref)
    if isinstance(std, Tensor):
        if ref._backend.host_checks and bool((std < 0).any()):
            raise ValueRangeError("normal: expects all elements of std >= 0.0")
    elif std < 0:
        raise ValueRangeError(f"normal: expects std >= 0.0, got std={std}")
    shape = ref.shape
    if isinstance(mean, Tensor) and isinstance(std, Tensor):
        try:
            shape = broadcast_shapes(tuple(mean.shape), tuple(std.shape), op="normal")
        except ShapeError:
            raise ShapeError(f"normal: mean {tuple(mean.shape)} and std {tuple(std.shape)} cannot broadcast") from None
    z = Tensor._make(_draw(ref._backend, "normal", tuple(shape), ref.dtype, generator, "normal"), ref._backend)
    return _Sampled.apply(mean, std, z.to(ref.dtype))  # type: ignore[no-any-return]


class _Poisson(Op):
    differentiable = False

    def forward(self, rate: Any, gen: Any) -> Any:
        with gen._lock:
            return self.backend.poisson(gen._rng, rate)


def poisson(input: Tensor, generator: Any = None) -> Tensor:
    """Poisson(rate) counts for each element of ``input`` (the rates), in ``input``'s dtype."""
    _float_tensor("poisson", input)
    if input._backend.host_checks and bool((input < 0).any()):
        raise ValueRangeError("poisson: rates must be non-negative")
    return _Poisson.apply(input, _generator(generator, "poisson"))  # type: ignore[no-any-return]


class _Binomial(Op):
    differentiable = False

    def forward(self, count: Any, prob: Any, gen: Any) -> Any:
        with gen._lock:
            return self.backend.binomial(gen._rng, count, prob)


def binomial(count: Tensor, prob: Tensor, generator: Any = None) -> Tensor:
    """Binomial(count, prob) draws, elementwise (``torch.binomial``), in ``count``'s dtype."""
    _float_tensor("binomial", count)
    if tuple(count.shape) != tuple(prob.shape):
        raise ShapeError(f"binomial: count {tuple(count.shape)} and prob {tuple(prob.shape)} must have one shape")
    return _Binomial.apply(count, prob.to(count.dtype), _generator(generator, "binomial"))  # type: ignore[no-any-return]

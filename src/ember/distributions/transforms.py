"""Transforms: invertible maps with a log-det-Jacobian (``torch.distributions.transforms``).

A ``Transform`` maps ``x`` in its ``domain`` to ``y = t(x)`` in its ``codomain``; ``t.inv`` is the inverse
(``t.inv.inv is t``), ``t.log_abs_det_jacobian(x, y)`` is ``log |dy/dx|`` (summed over the transform's own
event dims), ``sign`` the sign of the derivative of a monotone univariate map. ``cache_size=1`` keeps the last
``(x, y)`` pair so that ``t.inv(t(x))`` returns ``x`` itself. ``TransformedDistribution`` pushes a base
distribution through a list of them. The base classes live in ``_transform_base``.
"""

from __future__ import annotations

import math
from typing import Any

from .._creation import full_like, ones
from .._tensor import Tensor
from ..linalg import cholesky
from ..nn.functional import logsigmoid, pad, softplus
from . import constraints
from ._transform_base import ComposeTransform, IndependentTransform, ReshapeTransform, Transform, identity_transform
from ._transforms_joined import CatTransform, CorrCholeskyTransform, StackTransform
from .utils import broadcast_all, broadcast_shapes, finfo, lazy_property

__all__ = [
    "AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
    "CumulativeDistributionTransform", "ExpTransform", "IndependentTransform", "LowerCholeskyTransform",
    "PositiveDefiniteTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
    "SoftplusTransform", "StackTransform", "StickBreakingTransform", "TanhTransform", "Transform",
    "identity_transform",
]  # fmt: skip


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(x.shape) if isinstance(x, Tensor) else ()


class ExpTransform(Transform):
    """``y = exp(x)``."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExpTransform)

    __hash__ = Transform.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.exp()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x


class PowerTransform(Transform):
    """``y = x ** exponent`` on the positive reals."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else PowerTransform(self.exponent, cache_size=cache_size)

    @lazy_property
    def sign(self) -> Any:
        return self.exponent.sign()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PowerTransform) and bool((self.exponent == other.exponent).all())

    __hash__ = Transform.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.pow(self.exponent)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape: Any) -> tuple[int, ...]:
        return broadcast_shapes(tuple(shape), _shape(self.exponent))

    def inverse_shape(self, shape: Any) -> tuple[int, ...]:
        return broadcast_shapes(tuple(shape), _shape(self.exponent))


def _clipped_sigmoid(x: Tensor) -> Tensor:
    fi = finfo(x)
    return x.sigmoid().clamp(float(fi.tiny), 1.0 - float(fi.eps))


class SigmoidTransform(Transform):
    """``y = sigmoid(x)`` (kept inside (0, 1) in floating point)."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SigmoidTransform)

    __hash__ = Transform.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return _clipped_sigmoid(x)

    def _inverse(self, y: Tensor) -> Tensor:
        fi = finfo(y)
        y = y.clamp(float(fi.tiny), 1.0 - float(fi.eps))
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -softplus(-x) - softplus(x)


class SoftplusTransform(Transform):
    """``y = log(1 + exp(x))``."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SoftplusTransform)

    __hash__ = Transform.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return softplus(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return (-(-y).expm1()).log() + y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -softplus(-x)


class TanhTransform(Transform):
    """``y = tanh(x)``; the log-det is written in a form stable for large ``|x|``."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TanhTransform)

    __hash__ = Transform.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.tanh()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.atanh()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class AbsTransform(Transform):
    """``y = |x|`` (not bijective: the inverse picks the positive root)."""

    domain = constraints.real
    codomain = constraints.positive

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbsTransform)

    __hash__ = Transform.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.abs()

    def _inverse(self, y: Tensor) -> Tensor:
        return y


class AffineTransform(Transform):
    """``y = loc + scale * x``; ``event_dim`` dims are one event (the log-det sums over them)."""

    bijective = True

    def __init__(self, loc: Any, scale: Any, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> Any:
        return constraints.real if self.event_dim == 0 else constraints.independent(constraints.real, self.event_dim)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> Any:
        return constraints.real if self.event_dim == 0 else constraints.independent(constraints.real, self.event_dim)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self.event_dim, cache_size=cache_size)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AffineTransform):
            return False
        return all(
            (a == b) if not isinstance(a, Tensor) and not isinstance(b, Tensor) else bool((a == b).all())
            for a, b in ((self.loc, other.loc), (self.scale, other.scale))
        )

    __hash__ = Transform.__hash__

    @property
    def sign(self) -> Any:
        if isinstance(self.scale, Tensor):
            return self.scale.sign()
        s = float(self.scale)
        return 1 if s > 0 else -1 if s < 0 else 0

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        shape = tuple(x.shape)
        if isinstance(self.scale, Tensor):
            result = self.scale.abs().log()
        else:
            result = full_like(x, math.log(abs(float(self.scale))))
        if self.event_dim:
            result = result.reshape(*result.shape[: result.ndim - self.event_dim], -1).sum(-1)
            shape = shape[: len(shape) - self.event_dim]
        return result.expand(*shape)

    def forward_shape(self, shape: Any) -> tuple[int, ...]:
        return broadcast_shapes(tuple(shape), _shape(self.loc), _shape(self.scale))

    def inverse_shape(self, shape: Any) -> tuple[int, ...]:
        return broadcast_shapes(tuple(shape), _shape(self.loc), _shape(self.scale))


def _at_least_1d(shape: Any) -> tuple[int, ...]:
    if len(shape) < 1:
        raise ValueError("Too few dimensions on input")
    return tuple(shape)


class SoftmaxTransform(Transform):
    """Real vectors to the simplex by ``softmax`` over the last dim (not bijective; the inverse is ``log``)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SoftmaxTransform)

    __hash__ = Transform.__hash__

    def _call(self, x: Tensor) -> Tensor:
        probs = (x - x.amax(-1, keepdim=True)).exp()
        return probs / probs.sum(-1, keepdim=True)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def forward_shape(self, shape: Any) -> tuple[int, ...]:
        return _at_least_1d(shape)

    def inverse_shape(self, shape: Any) -> tuple[int, ...]:
        return _at_least_1d(shape)


class StickBreakingTransform(Transform):
    """Bijection of ``R^(K-1)`` onto the ``K``-simplex by stick breaking (the zero vector maps to uniform)."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StickBreakingTransform)

    __hash__ = Transform.__hash__

    @staticmethod
    def _offset(like: Tensor, n: int, first: int) -> Tensor:
        return first - ones(n, dtype=like.dtype, device=like.device).cumsum(-1)

    def _call(self, x: Tensor) -> Tensor:
        z = _clipped_sigmoid(x - self._offset(x, x.shape[-1], x.shape[-1] + 1).log())
        z_cumprod = (1 - z).cumprod(-1)
        return pad(z, (0, 1), value=1.0) * pad(z_cumprod, (1, 0), value=1.0)

    def _inverse(self, y: Tensor) -> Tensor:
        y_crop = y[..., :-1]
        offset = self._offset(y, y_crop.shape[-1], y.shape[-1])
        sf = (1 - y_crop.cumsum(-1)).clamp(min=float(finfo(y).tiny))
        return y_crop.log() - sf.log() + offset.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        x = x - self._offset(x, x.shape[-1], x.shape[-1] + 1).log()
        return (-x + logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape: Any) -> tuple[int, ...]:
        shape = _at_least_1d(shape)
        return shape[:-1] + (shape[-1] + 1,)

    def inverse_shape(self, shape: Any) -> tuple[int, ...]:
        shape = _at_least_1d(shape)
        return shape[:-1] + (shape[-1] - 1,)


class LowerCholeskyTransform(Transform):
    """Square matrices to lower-triangular ones with a positive diagonal (``exp`` of the diagonal)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LowerCholeskyTransform)

    __hash__ = Transform.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(Transform):
    """Square matrices to positive-definite ones: ``L L^T`` with ``L = LowerCholeskyTransform()(x)``."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PositiveDefiniteTransform)

    __hash__ = Transform.__hash__

    def _call(self, x: Tensor) -> Tensor:
        low = LowerCholeskyTransform()(x)
        return low @ low.mT

    def _inverse(self, y: Tensor) -> Tensor:
        return LowerCholeskyTransform().inv(cholesky(y))


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)``: the support of a univariate distribution onto (0, 1)."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self) -> Any:  # type: ignore[override]
        return self.distribution.support

    def _call(self, x: Tensor) -> Tensor:
        return self.distribution.cdf(x)  # type: ignore[no-any-return]

    def _inverse(self, y: Tensor) -> Tensor:
        return self.distribution.icdf(y)  # type: ignore[no-any-return]

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return self.distribution.log_prob(x)  # type: ignore[no-any-return]

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)

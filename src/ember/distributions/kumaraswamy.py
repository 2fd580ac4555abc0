"""The Kumaraswamy distribution on (0, 1)."""

from __future__ import annotations

from typing import Any, ClassVar

from .._creation import full_like
from .._tensor import Tensor
from ..ops import digamma, lgamma, where
from . import constraints
from .gumbel import euler_constant
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all

__all__ = ["Kumaraswamy"]


def _moments(a: Tensor, b: Tensor, n: int) -> Tensor:
    """The ``n``-th raw moment ``b * B(1 + n / a, b)``."""
    arg1 = 1 + n / a
    return b * (lgamma(arg1) + lgamma(b) - lgamma(arg1 + b)).exp()


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy(concentration1, concentration0): density ``a b x^(a-1) (1 - x^a)^(b-1)``.

    Sampled as ``(1 - U^(1/b))^(1/a)`` for ``U ~ Uniform(0, 1)``. ``mode`` is NaN where either is below 1.
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "concentration1": constraints.positive,
        "concentration0": constraints.positive,
    }
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Any, concentration0: Any, validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        c0 = self.concentration0
        base = Uniform(full_like(c0, 0), full_like(c0, 1), validate_args=validate_args)
        transforms = [
            PowerTransform(exponent=c0.reciprocal()),
            AffineTransform(loc=1.0, scale=-1.0),
            PowerTransform(exponent=self.concentration1.reciprocal()),
        ]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Kumaraswamy:
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(*batch_shape)
        new.concentration0 = self.concentration0.expand(*batch_shape)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def mean(self) -> Tensor:
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        """``((a - 1) / (a b - 1))^(1 / a)``; NaN where either concentration is below 1
        (and at ``a = b = 1``).

        PyTorch 2.x writes this as ``log1p(-b) / b - log1p(-a b)``, which is NaN for every ``b > 1``; this is the
        closed form (checked against the density's argmax in the tests).
        """
        a, b = self.concentration1, self.concentration0
        ok = (a >= 1) & (b >= 1) & (a * b > 1)
        a_ok, b_ok = where(ok, a, 2.0), where(ok, b, 2.0)  # keep the masked branch finite (and its gradient)
        log_mode = ((a_ok - 1).log() - (a_ok * b_ok - 1).log()) / a_ok
        return where(ok, log_mode.exp(), float("nan"))  # also NaN at a = b = 1 (uniform: no single mode)

    @property
    def variance(self) -> Tensor:
        return _moments(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self) -> Tensor:
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        h0 = digamma(self.concentration0 + 1) + euler_constant
        return t0 + t1 * h0 - self.concentration1.log() - self.concentration0.log()

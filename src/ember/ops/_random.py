"""Random sampling from a tensor of probabilities (torch docs, "Random sampling"); the creation-style samplers
(``rand``, ``randn``, ...) live in ``_creation``.
"""

from __future__ import annotations

from typing import Any

from .._creation import default_generator
from .._dtype import float64, int64
from .._errors import DTypeError, ShapeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._function import Op
from ._util import _float

__all__ = ["bernoulli", "multinomial"]
METHODS = list(__all__)


def _uniform(input: Tensor, shape: tuple[int, ...], generator: Any) -> Any:
    gen = generator or default_generator
    with gen._lock:
        return input._backend.uniform(gen._rng, shape, float64)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *, generator: Any = None) -> Tensor:
    """Draw ``num_samples`` category indices per row of non-negative weights ``input`` (1-d or 2-d).

    Without replacement each category is drawn at most once (Gumbel top-k, the same distribution as
    drawing one at a time and renormalising); categories with weight 0 are never drawn.
    """
    if input.ndim not in (1, 2):
        raise ShapeError(f"multinomial: expected a 1-d or 2-d tensor of weights, got shape {tuple(input.shape)}")
    if not input.dtype.is_floating_point:
        raise DTypeError(f"multinomial: expected floating-point weights, got {input.dtype}")
    xp = input._backend.xp
    p = input._data.reshape(1, -1) if input.ndim == 1 else input._data
    rows, n = p.shape
    if num_samples <= 0:
        raise ShapeError(f"multinomial: num_samples must be positive, got {num_samples}")
    if bool(xp.any(p < 0)) or not bool(xp.all(xp.isfinite(p))):
        raise ValueRangeError("multinomial: weights must be finite and non-negative")
    total = p.sum(axis=1, keepdims=True)
    if bool(xp.any(total <= 0)):
        raise ValueRangeError("multinomial: every row needs a positive total weight")
    positive = (p > 0).sum(axis=1)
    if not replacement and num_samples > int(positive.min()):
        raise ShapeError(
            f"multinomial: cannot draw {num_samples} samples without replacement from a row with "
            f"{int(positive.min())} categories of positive weight"
        )
    if replacement:
        cdf = xp.cumsum(p / total, axis=1)
        cdf[:, -1] = 1.0
        u = _uniform(input, (rows, num_samples), generator)
        idx = (cdf[:, None, :] <= u[:, :, None]).sum(axis=2)  # first category whose cdf exceeds u
        idx = xp.minimum(idx, n - 1)
    else:
        u = _uniform(input, (rows, n), generator)
        keys = xp.where(p > 0, xp.log(xp.where(p > 0, p, 1.0)) - xp.log(-xp.log(u)), -xp.inf)
        idx = xp.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    out = Tensor._make(input._backend.astype(idx, int64), input._backend)
    return out.reshape(-1) if input.ndim == 1 else out


def bernoulli(input: Tensor, p: Any = None, *, generator: Any = None) -> Tensor:
    """1 with probability ``input`` (or ``p``), else 0, in ``input``'s dtype."""
    probs = input._data if p is None else p
    u = _uniform(input, tuple(input.shape), generator)
    draw = u < probs
    return Tensor._make(input._backend.astype(draw, input.dtype), input._backend)


class StandardGamma(Op):
    """Gamma(alpha, 1) samples; the gradient in alpha is the implicit reparameterisation gradient."""

    saves_output = True

    def forward(self, alpha: Any, gen: Any) -> Any:
        with gen._lock:
            z = self.backend.standard_gamma(gen._rng, alpha)
        # Gamma samples underflow to 0 for tiny alpha; keep them positive as PyTorch does
        z = self.backend.xp.maximum(z, self.backend.xp.finfo(z.dtype).tiny)
        self.keep(z)
        return z

    def backward(self, g: Tensor) -> Any:
        alpha = self.inputs[0]  # type: ignore[index]
        z = self.output()
        d = Tensor._make(self.backend.standard_gamma_grad(z._data, alpha._data), self.backend)
        return g * d, None


def _standard_gamma(alpha: Tensor, generator: Any = None) -> Tensor:
    """Gamma(alpha, 1) samples of ``alpha``'s shape, differentiable in ``alpha`` (``torch._standard_gamma``)."""
    return StandardGamma.apply(_float(alpha), generator or default_generator)

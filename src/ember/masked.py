"""``ember.masked``: PyTorch's ``torch.masked`` reductions and normalisations that skip masked-out elements.

``mask`` (bool, broadcastable to ``input``) marks the elements that take part; the others are replaced by
the operation's identity (0 for sums, 1 for products, -inf for maxima, ...), so a slice with nothing
unmasked gives what PyTorch gives (0, 1, -inf, nan for means and variances). All are compositions of
Ember operations, differentiable in ``input``.
"""

from __future__ import annotations

import math
from typing import Any

from . import ops
from ._tensor import Tensor
from .ops._reduction_stats import _root_of_variance

__all__ = [
    "amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp", "logsumexp", "mean",
    "median", "norm", "normalize", "prod", "softmax", "softmin", "std", "sum", "var",
]  # fmt: skip


def _fill(input: Tensor, mask: Tensor | None, value: float, dtype: Any = None) -> Tensor:
    """``input`` (in ``dtype``) with the masked-out elements set to ``value``, in ``input``'s dtype: an integer
    input keeps its dtype (infinities become the dtype's extremes), as PyTorch's identity tensors do."""
    x = input if dtype is None else input.to(dtype)
    if mask is None:
        return x
    if not (x.dtype.is_floating_point or x.dtype.is_complex) and not math.isnan(value):
        from ._creation import tensor
        from ._torch_names import iinfo

        if x.dtype.kind == "b":
            fill = tensor(bool(value), dtype=x.dtype, device=x.device)
        else:
            info = iinfo(x.dtype)
            v = info.max if value == math.inf else info.min if value == -math.inf else int(value)
            fill = tensor(v, dtype=x.dtype, device=x.device)
        return ops.where(mask, x, fill)
    return ops.where(mask, x, value)


def _dims(input: Tensor, dim: Any) -> Any:
    return tuple(range(input.ndim)) if dim is None else dim


def _count(input: Tensor, mask: Tensor | None, dim: Any, keepdim: bool) -> Tensor:
    from ._creation import ones_like

    m = (mask if mask is not None else ones_like(input, dtype="bool")).expand(*input.shape)
    return m.to(input.dtype).sum(_dims(input, dim), keepdim=keepdim)


def sum(input: Tensor, dim: Any = None, *, keepdim: bool = False, dtype: Any = None, mask: Tensor | None = None
        ) -> Tensor:  # fmt: skip
    return _fill(input, mask, 0.0, dtype).sum(_dims(input, dim), keepdim=keepdim)


def prod(input: Tensor, dim: Any = None, *, keepdim: bool = False, dtype: Any = None, mask: Tensor | None = None
         ) -> Tensor:  # fmt: skip
    x = _fill(input, mask, 1.0, dtype)
    if dtype is None and x.dtype.kind in "biu":  # (integers multiply as int64, also over no dims)
        x = x.long()
    if dim is None:
        return x.reshape(-1).prod(0)
    for d in sorted((dim,) if isinstance(dim, int) else tuple(dim), reverse=True):
        x = x.prod(d, keepdim=keepdim)
    return x


def amax(input: Tensor, dim: Any = None, *, keepdim: bool = False, dtype: Any = None, mask: Tensor | None = None
         ) -> Tensor:  # fmt: skip
    return _fill(input, mask, -math.inf, dtype).amax(_dims(input, dim), keepdim=keepdim)


def amin(input: Tensor, dim: Any = None, *, keepdim: bool = False, dtype: Any = None, mask: Tensor | None = None
         ) -> Tensor:  # fmt: skip
    return _fill(input, mask, math.inf, dtype).amin(_dims(input, dim), keepdim=keepdim)


def argmax(input: Tensor, dim: Any = None, *, keepdim: bool = False, dtype: Any = None, mask: Tensor | None = None
           ) -> Tensor:  # fmt: skip
    return _fill(input, mask, -math.inf, dtype).argmax(dim, keepdim=keepdim)


def argmin(input: Tensor, dim: Any = None, *, keepdim: bool = False, dtype: Any = None, mask: Tensor | None = None
           ) -> Tensor:  # fmt: skip
    return _fill(input, mask, math.inf, dtype).argmin(dim, keepdim=keepdim)


def mean(input: Tensor, dim: Any = None, *, keepdim: bool = False, dtype: Any = None, mask: Tensor | None = None
         ) -> Tensor:  # fmt: skip
    return sum(input, dim, keepdim=keepdim, dtype=dtype, mask=mask) / _count(input, mask, dim, keepdim)


def var(input: Tensor, dim: Any = None, unbiased: bool | None = None, *, correction: Any = None,
        keepdim: bool = False, dtype: Any = None, mask: Tensor | None = None) -> Tensor:  # fmt: skip
    corr = correction if correction is not None else (0 if unbiased is False else 1)
    mu = mean(input, dim, keepdim=True, dtype=dtype, mask=mask)
    d = input - mu
    sq = sum(d * d.conj() if d.dtype.is_complex else d**2, dim, keepdim=keepdim, dtype=dtype, mask=mask)  # |d|^2
    return sq / (_count(input, mask, dim, keepdim) - corr)


def std(input: Tensor, dim: Any = None, unbiased: bool | None = None, *, correction: Any = None,
        keepdim: bool = False, dtype: Any = None, mask: Tensor | None = None) -> Tensor:  # fmt: skip
    return _root_of_variance(var(input, dim, unbiased, correction=correction, keepdim=keepdim, dtype=dtype, mask=mask))


def norm(input: Tensor, ord: float = 2.0, dim: Any = None, *, keepdim: bool = False, dtype: Any = None,
         mask: Tensor | None = None) -> Tensor:  # fmt: skip
    """``linalg.vector_norm`` of the unmasked elements (masked ones count as 0, as +inf for ``ord=-inf``)."""
    from .linalg import vector_norm

    p = 2.0 if ord is None else ord
    x = _fill(input, mask, math.inf if p == -math.inf else 0.0, dtype)
    return vector_norm(x, p, _dims(input, dim), keepdim)


def logsumexp(input: Tensor, dim: Any = None, *, keepdim: bool = False, dtype: Any = None,
              mask: Tensor | None = None) -> Tensor:  # fmt: skip
    out = ops.logsumexp(_fill(input, mask, -math.inf, dtype), _dims(input, dim), keepdim)
    return out.to(dtype if dtype is not None else input.dtype)  # (PyTorch's: an integer input gives integers)


def logaddexp(input: Tensor, other: Tensor, *, dtype: Any = None, input_mask: Tensor | None = None,
              other_mask: Tensor | None = None) -> Tensor:  # fmt: skip
    return ops.logaddexp(_fill(input, input_mask, -math.inf, dtype), _fill(other, other_mask, -math.inf, dtype))


def median(input: Tensor, dim: int = -1, *, keepdim: bool = False, dtype: Any = None, mask: Tensor | None = None
           ) -> Tensor:  # fmt: skip
    """The lower median of the unmasked elements along ``dim`` (nan where none is unmasked)."""
    x = _fill(input, mask, math.nan, dtype)
    return ops.nanmedian(x, dim, keepdim).values


def cumsum(input: Tensor, dim: int, *, dtype: Any = None, mask: Tensor | None = None) -> Tensor:
    return _fill(input, mask, 0.0, dtype).cumsum(dim, dtype=dtype if dtype is not None else input.dtype)


def cumprod(input: Tensor, dim: int, *, dtype: Any = None, mask: Tensor | None = None) -> Tensor:
    return _fill(input, mask, 1.0, dtype).cumprod(dim, dtype=dtype if dtype is not None else input.dtype)


def softmax(input: Tensor, dim: int, *, dtype: Any = None, mask: Tensor | None = None) -> Tensor:
    from .nn import functional as F

    return F.softmax(_fill(input, mask, -math.inf, dtype), dim)


def log_softmax(input: Tensor, dim: int, *, dtype: Any = None, mask: Tensor | None = None) -> Tensor:
    from .nn import functional as F

    return F.log_softmax(_fill(input, mask, -math.inf, dtype), dim)


def softmin(input: Tensor, dim: int, *, dtype: Any = None, mask: Tensor | None = None) -> Tensor:
    from .nn import functional as F

    return F.softmax(-_fill(input, mask, math.inf, dtype), dim)


def normalize(input: Tensor, ord: float, dim: int, *, eps: float = 1e-12, dtype: Any = None,
              mask: Tensor | None = None) -> Tensor:  # fmt: skip
    x = _fill(input, mask, 0.0, dtype)
    return x / norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask).clamp(min=eps)

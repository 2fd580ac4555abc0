"""Gradient clipping and parameter-vector helpers (PyTorch's ``torch.nn.utils``)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any

from ..._creation import tensor
from ..._tensor import Tensor
from ...autograd._capture import opaque
from ...autograd._grad_mode import no_grad
from ...ops._indexing_join import cat

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters"]


def _params(parameters: Any) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        return [parameters]
    return list(parameters)


def clip_arrays_by_norm_(arrays: list[Any], backend: Any, max_norm: float, norm_type: float = 2.0,
                         error_if_nonfinite: bool = False) -> Any:  # fmt: skip
    """Scale ``arrays`` in place so their global ``norm_type`` norm is at most ``max_norm``; return that norm
    (a 0-d float64 array of ``backend``).

    The one implementation behind ``clip_grad_norm_`` and the optimizers' ``grad_clip_norm`` option. On an
    accelerator nothing is read back (the scale is clamped to 1 and always applied, as PyTorch does).
    """
    xp = backend.xp
    arrays = [a for a in arrays if 0 not in a.shape]
    if not arrays:
        return xp.zeros((), dtype=xp.float64)
    if norm_type == math.inf:
        total = xp.max(xp.stack([xp.max(xp.abs(xp.astype(a, xp.float64))) for a in arrays]))
    else:
        parts = xp.stack([xp.sum(xp.abs(xp.astype(a, xp.float64)) ** norm_type) for a in arrays])
        total = xp.sum(parts) ** (1.0 / norm_type)
    if error_if_nonfinite or backend.cheap_sync:
        value = float(total)
        if error_if_nonfinite and not math.isfinite(value):
            raise RuntimeError(
                f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is {value}; "
                "set error_if_nonfinite=False to clip anyway"
            )
        if backend.cheap_sync:
            coef = max_norm / (value + 1e-6)
            if coef < 1:
                for a in arrays:
                    a *= coef
            return total
    coef = xp.clip(max_norm / (total + 1e-6), None, 1.0)
    for a in arrays:
        a *= xp.astype(coef, a.dtype)
    return total


@opaque
def clip_grad_norm_(
    parameters: Iterable[Tensor] | Tensor, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False
) -> Tensor:
    """Scale all gradients together so their global ``norm_type`` norm is at most ``max_norm``; return the norm."""
    if isinstance(max_norm, bool) or not isinstance(max_norm, numbers.Real) or not max_norm >= 0:
        raise ValueError(f"clip_grad_norm_: max_norm must be a number >= 0, got {max_norm!r}")
    if isinstance(norm_type, bool) or not isinstance(norm_type, numbers.Real) or not norm_type > 0:
        raise ValueError(f"clip_grad_norm_: norm_type must be > 0 (2.0, 1.0, inf, ...), got {norm_type!r}")

    grads = [p.grad for p in _params(parameters) if p.grad is not None]
    if not grads:
        return tensor(0.0)
    with no_grad():
        be = grads[0]._backend
        total = clip_arrays_by_norm_([g._data for g in grads], be, max_norm, norm_type, error_if_nonfinite)
        for g in grads:
            g._vc[0] += 1
    return Tensor._make(be.astype(be.xp.asarray(total), grads[0].dtype), be)


@opaque
def clip_grad_value_(parameters: Iterable[Tensor] | Tensor, clip_value: float) -> None:
    """Clamp every gradient element to ``[-clip_value, clip_value]`` in place."""
    if isinstance(clip_value, bool) or not isinstance(clip_value, numbers.Real) or not clip_value >= 0:
        raise ValueError(f"clip_grad_value_: clip_value must be a number >= 0, got {clip_value!r}")
    for p in _params(parameters):
        if p.grad is not None:
            g = p.grad._data
            g[...] = p.grad._backend.xp.clip(g, -clip_value, clip_value)
            p.grad._vc[0] += 1


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    i = 0
    with no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(vec[i : i + n].reshape(p.shape))
            i += n

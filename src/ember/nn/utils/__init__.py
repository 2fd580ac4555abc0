"""PyTorch's ``torch.nn.utils``: gradient clipping and norms, parameter vectors, and (in the submodules) packed
sequences (``rnn``), weight and spectral norm (``weight_norm``), BatchNorm folding (``fusion``)."""

from __future__ import annotations

import inspect
import math
import numbers
import warnings
from collections.abc import Iterable
from typing import Any

from ..._creation import tensor
from ..._tensor import Tensor
from ...autograd._capture import opaque
from ...autograd._grad_mode import no_grad
from ...ops._indexing_join import cat, stack
from ...ops._linalg_norms import vector_norm

__all__ = [
    "clip_grad_norm",
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_grads_with_norm_",
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
    "get_total_norm",
    "parameters_to_vector",
    "parametrizations",
    "parametrize",
    "remove_spectral_norm",
    "remove_weight_norm",
    "rnn",
    "skip_init",
    "spectral_norm",
    "vector_to_parameters",
    "weight_norm",
]


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
    parameters: Iterable[Tensor] | Tensor, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:  # fmt: skip
    """Scale all gradients together so their global ``norm_type`` norm is at most ``max_norm``; return the norm.
    (``foreach``: PyTorch's kernel choice; Ember's clip is one pass either way.)"""
    if isinstance(max_norm, bool) or not isinstance(max_norm, numbers.Real) or not max_norm >= 0:
        raise ValueError(f"clip_grad_norm_: max_norm must be a number >= 0, got {max_norm!r}")
    if isinstance(norm_type, str):  # ("inf": PyTorch takes float(norm_type))
        norm_type = float(norm_type)
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
def clip_grad_value_(parameters: Iterable[Tensor] | Tensor, clip_value: float, foreach: bool | None = None) -> None:
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


def clip_grad_norm(
    parameters: Iterable[Tensor] | Tensor, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:  # fmt: skip
    """PyTorch's deprecated name of ``clip_grad_norm_``."""
    warnings.warn("clip_grad_norm is deprecated: use clip_grad_norm_", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite)


def get_total_norm(
    tensors: Iterable[Tensor] | Tensor, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach: Any = None
) -> Tensor:
    """The ``norm_type`` norm of all ``tensors`` together (the norm of their norms), without gradient."""
    ts = [t for t in _params(tensors) if t is not None]
    if not ts:
        return tensor(0.0)
    with no_grad():
        total = vector_norm(stack([vector_norm(t, norm_type) for t in ts]), norm_type)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(
            f"get_total_norm: the total norm of order {norm_type} is {total.item()}; set error_if_nonfinite=False"
        )
    return total


def clip_grads_with_norm_(
    parameters: Iterable[Tensor] | Tensor, max_norm: float, total_norm: Tensor, foreach: Any = None
) -> None:
    """Scale the gradients by ``max_norm / (total_norm + 1e-6)`` where that is below 1 (``total_norm`` as
    ``get_total_norm`` gave it)."""
    grads = [p.grad for p in _params(parameters) if p.grad is not None]
    with no_grad():
        coef = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))


def skip_init(module_cls: Any, *args: Any, **kwargs: Any) -> Any:
    """``module_cls(*args, **kwargs)`` with its parameters and buffers left uninitialised: built on the meta device
    (no initialiser runs on data), then given fresh memory on ``device`` (default ``"cpu"``) by ``to_empty``."""
    from ..module import Module

    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"skip_init: expected a Module class, got {module_cls!r}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError(f"skip_init: {module_cls.__name__} must take a 'device' argument to skip initialization")
    device = kwargs.pop("device", "cpu")
    return module_cls(*args, **kwargs, device="meta").to_empty(device=device)  # type: ignore[call-arg]


from . import parametrizations, parametrize, prune, rnn, stateless  # noqa: E402, F401 - torch.nn.utils.prune ...
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights  # noqa: E402
from .weight_norm import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm  # noqa: E402

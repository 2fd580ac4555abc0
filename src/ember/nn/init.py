"""Parameter initialisation (PyTorch's ``torch.nn.init`` names), all in place and without autograd.

Every value is made by the tensor's backend on the tensor's device (its random kernels ``uniform``,
``normal``, ``trunc_normal``, its ``xp.linalg.qr``): no host draw and copy. Draws are seeded by Ember's
generators (``ember.manual_seed``), so the same seed gives the same values on the same backend.

``skip_init()`` turns every initializer into a no-op: ``Config.init_with(record)`` builds a module
that way and then loads the saved values (spec: create a module from saved parameters without
initialising it first).
"""

from __future__ import annotations

import contextlib
import math
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from .._creation import default_generator
from .._dtype import float64
from .._tensor import Tensor

__all__ = [
    "calculate_gain", "constant", "constant_", "dirac", "dirac_", "eye", "eye_", "kaiming_normal", "kaiming_normal_",
    "kaiming_uniform", "kaiming_uniform_", "normal", "normal_", "ones_", "orthogonal", "orthogonal_", "skip_init",
    "sparse", "sparse_", "trunc_normal_", "uniform", "uniform_", "xavier_normal", "xavier_normal_", "xavier_uniform",
    "xavier_uniform_", "zeros_",
]  # fmt: skip

_local = threading.local()


@contextlib.contextmanager
def skip_init() -> Iterator[None]:
    """Inside this block initializers leave tensors untouched (used to build modules from records)."""
    old = getattr(_local, "skip", False)
    _local.skip = True
    try:
        yield
    finally:
        _local.skip = old


def _skipping() -> bool:
    return getattr(_local, "skip", False)


def _write(t: Tensor, arr: Any) -> Tensor:
    """Store ``arr`` (an array of ``t``'s backend, any float dtype) into ``t`` in place."""
    if not _skipping():
        be = t._backend
        t._data[...] = be.astype(arr, t.dtype)
        t._vc[0] += 1
    return t


def _gen(generator: Any) -> Any:
    return generator or default_generator


def _draw(tensor: Tensor, kind: str, generator: Any, *args: Any) -> Any:
    """Samples of ``tensor``'s shape in float64, drawn by its backend on its device (``kind``: a Backend
    random kernel: uniform, normal, trunc_normal)."""
    gen = _gen(generator)
    be = tensor._backend
    with gen._lock:
        return getattr(be, kind)(gen._rng, tuple(tensor.shape), float64, *args)


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _fans(t: Tensor) -> tuple[int, int]:
    if t.ndim < 2:
        raise ValueError(f"fan in/out need a tensor with at least 2 dims, got shape {tuple(t.shape)}")
    rf = math.prod(t.shape[2:])
    return t.shape[1] * rf, t.shape[0] * rf


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight: dims 1 and 0, each times the product of the rest (PyTorch's helper)."""
    return _fans(tensor)


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    """``fan_in`` or ``fan_out`` of ``tensor`` as ``mode`` (either case) says (PyTorch's helper)."""
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _fans(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
    """Samples from U(a, b), drawn on ``tensor``'s device."""
    if _skipping():
        return tensor
    return _write(tensor, a + (b - a) * _draw(tensor, "uniform", generator))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Tensor:
    """Samples from N(mean, std²), drawn on ``tensor``'s device."""
    if _skipping():
        return tensor
    return _write(tensor, mean + std * _draw(tensor, "normal", generator))


def trunc_normal_(
    tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, generator: Any = None
) -> Tensor:
    """Samples from N(mean, std²) conditioned on ``[a, b]``, drawn on ``tensor``'s device."""
    if _skipping():
        return tensor
    if not a < b:
        raise ValueError(f"trunc_normal_: expected a < b, got a={a}, b={b}")
    return _write(tensor, _draw(tensor, "trunc_normal", generator, mean, std, a, b))


def _fill(tensor: Tensor, make: Any) -> Tensor:
    """``tensor`` overwritten with ``make(xp)``, an array built by its backend on its device."""
    if _skipping():
        return tensor
    return _write(tensor, make(tensor._backend.xp))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill ``tensor`` with ``val`` in place (no gradient recorded); returns ``tensor``."""
    return _fill(tensor, lambda xp: xp.full(tuple(tensor.shape), float(val), dtype=xp.float64))


def zeros_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with zeros in place; returns ``tensor``."""
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with ones in place; returns ``tensor``."""
    return constant_(tensor, 1.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-d ``tensor`` with the identity matrix in place; returns ``tensor``."""
    if tensor.ndim != 2:
        raise ValueError(f"eye_: expected a 2-d tensor, got shape {tuple(tensor.shape)}")
    return _fill(tensor, lambda xp: xp.eye(tensor.shape[0], tensor.shape[1], dtype=xp.float64))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Identity-preserving convolution weights."""
    if not 3 <= tensor.ndim <= 5:
        raise ValueError(f"dirac_: expected a 3-, 4- or 5-d tensor, got shape {tuple(tensor.shape)}")
    if tensor.shape[0] % groups:
        raise ValueError(f"dirac_: dim 0 of shape {tuple(tensor.shape)} is not divisible by groups={groups}")

    def make(xp: Any) -> Any:
        out = xp.zeros(tuple(tensor.shape), dtype=xp.float64)
        og = tensor.shape[0] // groups
        n = min(og, tensor.shape[1])
        centre = tuple(s // 2 for s in tensor.shape[2:])
        i = xp.arange(n)
        for g in range(groups):
            out[(g * og + i, i) + centre] = 1.0
        return out

    return _fill(tensor, make)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """Glorot uniform: U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))``, in place."""
    fan_in, fan_out = _fans(tensor)
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """Glorot normal: N(0, std) with ``std = gain * sqrt(2 / (fan_in + fan_out))``, in place."""
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float:
    return calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))


def kaiming_uniform_(
    tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator: Any = None
) -> Tensor:
    """He uniform: U(-b, b) with ``b = sqrt(3) * gain / sqrt(fan)`` (``mode`` picks fan_in or fan_out), in place."""
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator: Any = None
) -> Tensor:
    """He normal: N(0, gain / sqrt(fan)) (``mode`` picks fan_in or fan_out), in place."""
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """A (semi-)orthogonal matrix (flattened from dim 1), from the QR factorisation of normal samples drawn
    and factorised on ``tensor``'s device."""
    if tensor.ndim < 2:
        raise ValueError(f"orthogonal_: expected at least 2 dims, got shape {tuple(tensor.shape)}")
    if _skipping():
        return tensor
    xp = tensor._backend.xp
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    gen = _gen(generator)
    with gen._lock:
        flat = tensor._backend.normal(gen._rng, (rows, cols), float64)
    if rows < cols:
        flat = xp.transpose(flat)
    q, r = xp.linalg.qr(flat)
    q = q * xp.sign(xp.diagonal(r))  # a unique Q: the Haar measure (Mezzadri)
    if rows < cols:
        q = xp.transpose(q)
    return _write(tensor, xp.reshape(gain * q, tuple(tensor.shape)))


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Any = None) -> Tensor:
    """A sparse 2-d matrix (Martens 2010): N(0, std²) samples with ``ceil(sparsity * rows)`` zeros at random rows
    of each column. The rows are drawn with ``generator`` too (PyTorch draws them from its global generator)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    if _skipping():
        return tensor
    xp = tensor._backend.xp
    rows = tensor.shape[0]
    num_zeros = math.ceil(sparsity * rows)
    values = std * _draw(tensor, "normal", generator)
    rank = xp.argsort(xp.argsort(_draw(tensor, "uniform", generator), axis=0), axis=0)  # a permutation per column
    return _write(tensor, xp.where(rank < num_zeros, xp.zeros_like(values), values))


def _deprecated(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """PyTorch's old name without the underscore: the same initializer, with PyTorch's FutureWarning."""
    new, old = fn.__name__, fn.__name__[:-1]

    def deprecated_init(*args: Any, **kwargs: Any) -> Tensor:
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new}`.", FutureWarning, stacklevel=2)
        return fn(*args, **kwargs)

    deprecated_init.__name__ = deprecated_init.__qualname__ = old
    deprecated_init.__doc__ = f"Deprecated: ``{new}`` (warns as PyTorch does)."
    return deprecated_init


def reset_like_torch_(weight: Tensor, bias: Tensor | None) -> None:
    """PyTorch's default for Linear and Conv: weight Kaiming-uniform (a=sqrt(5)), bias uniform +-1/sqrt(fan_in)."""
    if weight.numel() == 0:  # a 0-sized layer: nothing to draw (PyTorch warns and skips too)
        return
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        bound = 1 / math.sqrt(_fans(weight)[0])
        uniform_(bias, -bound, bound)


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)

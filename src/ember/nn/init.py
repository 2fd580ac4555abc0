"""Parameter initialisation (PyTorch's ``torch.nn.init`` names), all in place and without autograd.

``skip_init()`` turns every initializer into a no-op: ``Config.init_with(record)`` builds a module
that way and then loads the saved values (spec: create a module from saved parameters without
initialising it first).
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator
from typing import Any

from .._creation import default_generator
from .._tensor import Tensor

__all__ = [
    "calculate_gain", "constant_", "dirac_", "eye_", "kaiming_normal_", "kaiming_uniform_", "normal_", "ones_",
    "orthogonal_", "skip_init", "trunc_normal_", "uniform_", "xavier_normal_", "xavier_uniform_", "zeros_",
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
    if not _skipping():
        be = t._backend
        t._data[...] = be.astype(be.asarray(arr), t.dtype)
        t._vc[0] += 1
    return t


def _rng(generator: Any) -> Any:
    return (generator or default_generator)._rng


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
        raise ValueError(f"fan in/out need a tensor with at least 2 dims, got shape {t.shape}")
    rf = math.prod(t.shape[2:])
    return t.shape[1] * rf, t.shape[0] * rf


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
    if _skipping():
        return tensor
    return _write(tensor, _rng(generator).uniform(a, b, tensor.shape))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Tensor:
    if _skipping():
        return tensor
    return _write(tensor, _rng(generator).normal(mean, std, tensor.shape))


def trunc_normal_(
    tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, generator: Any = None
) -> Tensor:
    """Normal samples redrawn until they fall in ``[a, b]``."""
    import numpy as np

    if _skipping():
        return tensor
    rng = _rng(generator)
    out = rng.normal(mean, std, tensor.shape)
    bad = (out < a) | (out > b)
    while bad.any():
        out[bad] = rng.normal(mean, std, int(bad.sum()))
        bad = (out < a) | (out > b)
    return _write(tensor, np.asarray(out))


def constant_(tensor: Tensor, val: float) -> Tensor:
    import numpy as np

    return _write(tensor, np.full(tensor.shape, val))


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def eye_(tensor: Tensor) -> Tensor:
    import numpy as np

    if tensor.ndim != 2:
        raise ValueError(f"eye_: expected a 2-d tensor, got shape {tensor.shape}")
    return _write(tensor, np.eye(tensor.shape[0], tensor.shape[1]))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Identity-preserving convolution weights."""
    import numpy as np

    out = np.zeros(tensor.shape)
    og = tensor.shape[0] // groups
    centre = tuple(s // 2 for s in tensor.shape[2:])
    for g in range(groups):
        for i in range(min(og, tensor.shape[1])):
            out[(g * og + i, i) + centre] = 1.0
    return _write(tensor, out)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    fan_in, fan_out = _fans(tensor)
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float:
    fan_in, fan_out = _fans(tensor)
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"kaiming: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(
    tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator: Any = None
) -> Tensor:
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator: Any = None
) -> Tensor:
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    import numpy as np

    if tensor.ndim < 2:
        raise ValueError(f"orthogonal_: expected at least 2 dims, got shape {tensor.shape}")
    if _skipping():
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _rng(generator).normal(0.0, 1.0, (rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _write(tensor, (gain * q).reshape(tensor.shape))


def reset_like_torch_(weight: Tensor, bias: Tensor | None) -> None:
    """PyTorch's default for Linear and Conv: weight Kaiming-uniform (a=sqrt(5)), bias uniform +-1/sqrt(fan_in)."""
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        bound = 1 / math.sqrt(_fans(weight)[0])
        uniform_(bias, -bound, bound)

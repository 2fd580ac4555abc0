"""Window functions (torch docs, "Spectral Ops"): ``hann_window``, ``hamming_window``, ``blackman_window``,
``bartlett_window``, ``kaiser_window``, computed as PyTorch computes them (an ``arange`` in the requested dtype, then
its formula), with ``periodic=True`` meaning one more point and the last dropped. They are constants (no gradient;
``requires_grad=True`` makes a leaf, as in PyTorch).
"""

from __future__ import annotations

import math
from typing import Any

from .._errors import DTypeError, ValueRangeError
from .._tensor import Tensor
from ._pointwise_unary import cos, sqrt

__all__ = ["bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window"]
METHODS: list[str] = []


def window_dtype(op: str, dtype: Any) -> Any:
    """The window's dtype (the default float when None); a non-floating dtype raises as in PyTorch."""
    from .._dtype import get_default_dtype

    dt = dtype if dtype is not None else get_default_dtype()
    if not dt.is_floating_point:
        raise DTypeError(f"{op} expects floating point dtypes, got: {dt}")
    return dt


def _start(op: str, n: Any, dtype: Any, device: Any) -> tuple[int, Any, Tensor | None]:
    """(the window length, its dtype, the whole window when the length is 0 or 1)."""
    from .. import _creation

    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{op}: window_length must be an int, got {type(n).__name__}")
    if n < 0:
        raise ValueRangeError(f"{op} requires non-negative window_length, got window_length={n}")
    dt = window_dtype(op, dtype)
    if n == 0:
        return n, dt, _creation.empty(0, dtype=dt, device=device)
    if n == 1:
        return n, dt, _creation.ones(1, dtype=dt, device=device)
    return n, dt, None


def _finish(w: Tensor, periodic: bool, requires_grad: bool) -> Tensor:
    w = w[:-1] if periodic else w
    return w.requires_grad_(True) if requires_grad else w


def _arange(n: int, dt: Any, device: Any) -> Tensor:
    from .. import _creation

    return _creation.arange(n, dtype=dt, device=device)


def hamming_window(
    window_length: int,
    periodic: bool = True,
    alpha: float = 0.54,
    beta: float = 0.46,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    **_: Any,
) -> Tensor:
    """``alpha - beta * cos(2 pi n / (N - 1))`` (the generalised Hamming window)."""
    n, dt, done = _start("hamming_window", window_length, dtype, device)
    if done is not None:
        return done.requires_grad_(True) if requires_grad else done
    n += bool(periodic)
    w = cos(_arange(n, dt, device) * (2.0 * math.pi / (n - 1))) * -beta + alpha
    return _finish(w, periodic, requires_grad)


def hann_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    **_: Any,
) -> Tensor:
    """``0.5 - 0.5 * cos(2 pi n / (N - 1))``."""
    return hamming_window(window_length, periodic, 0.5, 0.5, dtype=dtype, device=device, requires_grad=requires_grad)


def blackman_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    **_: Any,
) -> Tensor:
    """``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``."""
    n, dt, done = _start("blackman_window", window_length, dtype, device)
    if done is not None:
        return done.requires_grad_(True) if requires_grad else done
    n += bool(periodic)
    a = _arange(n, dt, device) * (math.pi / (n - 1))
    w = cos(a * 4) * 0.08 - cos(a * 2) * 0.5 + 0.42
    return _finish(w, periodic, requires_grad)


def bartlett_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    **_: Any,
) -> Tensor:
    """The triangular window ``1 - |2 n / (N - 1) - 1|``."""
    from ._indexing_join import cat

    n, dt, done = _start("bartlett_window", window_length, dtype, device)
    if done is not None:
        return done.requires_grad_(True) if requires_grad else done
    n += bool(periodic)
    a = _arange(n, dt, device) * (2.0 / (n - 1))
    half = ((n - 1) >> 1) + 1
    w = cat([a[:half], 2 - a[half:]])
    return _finish(w, periodic, requires_grad)


def i0_series(x: Tensor, top: float) -> Tensor:
    """The modified Bessel function I0 of ``0 <= x <= top`` by its power series sum ((x/2)^k / k!)^2 in float64,
    summed until the terms stop mattering (Kaiser windows: ``top = beta``; float64 holds I0 up to x ~ 700)."""
    from .._dtype import float64

    x = x.to(float64)
    q = (x * 0.5) ** 2
    term, total = q * 0 + 1, q * 0 + 1
    k = 1
    while k < 30 + 2 * top and k < 2000:  # the terms peak near k = x/2 and die off by k ~ x + 30
        term = term * q / (k * k)
        total = total + term
        k += 1
    return total


def kaiser_window(
    window_length: int,
    periodic: bool = True,
    beta: float = 12.0,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    **_: Any,
) -> Tensor:
    """``I0(beta * sqrt(1 - ((n - a) / a)^2)) / I0(beta)`` with ``a = (N - 1) / 2``."""
    n, dt, done = _start("kaiser_window", window_length, dtype, device)
    if done is not None:
        return done.requires_grad_(True) if requires_grad else done
    n += bool(periodic)
    alpha = (n - 1) / 2.0
    r = (_arange(n, dt, device).double() - alpha) / alpha
    arg = sqrt((1 - r * r).clamp(min=0.0)) * float(beta)
    w = (i0_series(arg, beta) / i0_series(arg.new_tensor([float(beta)]), beta)).to(dt)
    return _finish(w, periodic, requires_grad)

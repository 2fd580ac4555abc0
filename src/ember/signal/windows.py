"""``ember.signal.windows``: ``torch.signal.windows``' window functions, with its names, arguments and formulas
(a ``linspace`` of the window's support, then the function; ``sym=False`` gives the periodic window, one point of
an ``M + 1`` symmetric window short). Built from Ember operators, so they run on every backend.
"""

# ruff: noqa: N803 - PyTorch names the window length M

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from .._creation import empty, linspace, ones, tensor
from .._errors import ValueRangeError
from .._tensor import Tensor
from ..ops._pointwise_unary import cos, exp, sin, sqrt
from ..ops._spectral_windows import i0_series, window_dtype

__all__ = [
    "bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming", "hamming",
    "hann", "kaiser", "nuttall",
]  # fmt: skip


def _checks(name: str, M: Any, dtype: Any, kw: dict[str, Any]) -> Any:
    layout = kw.get("layout")
    if layout is not None and str(layout).rsplit(".", 1)[-1] != "strided":
        raise ValueRangeError(f"{name} is implemented for strided tensors only, got: {layout}")
    if isinstance(M, bool) or not isinstance(M, int):
        raise TypeError(f"{name}: M must be an int, got {type(M).__name__}")
    if M < 0:
        raise ValueRangeError(f"{name} requires non-negative window length, got M={M}")
    dt = window_dtype(name, dtype)
    if dt.name not in ("float32", "float64"):
        raise ValueRangeError(f"{name} expects float32 or float64 dtypes, got: {dt}")
    return dt


def _trivial(M: int, dt: Any, device: Any, requires_grad: bool) -> Tensor | None:
    if M == 0:
        return empty(0, dtype=dt, device=device, requires_grad=requires_grad)
    if M == 1:
        return ones(1, dtype=dt, device=device, requires_grad=requires_grad)
    return None


def _k(start: float, constant: float, M: int, dt: Any, device: Any) -> Tensor:
    return linspace(start * constant, (start + (M - 1)) * constant, M, dtype=dt, device=device)


def _done(w: Tensor, requires_grad: bool) -> Tensor:
    return w.detach().requires_grad_(True) if requires_grad else w


def exponential(
    M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True, dtype: Any = None,
    device: Any = None, requires_grad: bool = False, **kw: Any,
) -> Tensor:  # fmt: skip
    """The exponential (Poisson) window ``exp(-|n - center| / tau)``."""
    dt = _checks("exponential", M, dtype, kw)
    if tau <= 0:
        raise ValueRangeError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueRangeError("Center must be None for symmetric windows")
    if M == 0:
        return empty(0, dtype=dt, device=device, requires_grad=requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    k = linspace(-center / tau, (-center + (M - 1)) / tau, M, dtype=dt, device=device)
    return _done(exp(-k.abs()), requires_grad)


def cosine(
    M: int, *, sym: bool = True, dtype: Any = None, device: Any = None, requires_grad: bool = False, **kw: Any
) -> Tensor:
    """The cosine (sine) window ``sin(pi (n + 0.5) / M)``."""
    dt = _checks("cosine", M, dtype, kw)
    if M == 0:
        return empty(0, dtype=dt, device=device, requires_grad=requires_grad)
    constant = math.pi / (M + 1 if not sym and M > 1 else M)
    return _done(sin(_k(0.5, constant, M, dt, device)), requires_grad)


def gaussian(
    M: int, *, std: float = 1.0, sym: bool = True, dtype: Any = None, device: Any = None,
    requires_grad: bool = False, **kw: Any,
) -> Tensor:  # fmt: skip
    """The Gaussian window ``exp(-(n - (M - 1) / 2)^2 / (2 std^2))``."""
    dt = _checks("gaussian", M, dtype, kw)
    if std <= 0:
        raise ValueRangeError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return empty(0, dtype=dt, device=device, requires_grad=requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    k = _k(start, 1 / (std * math.sqrt(2)), M, dt, device)
    return _done(exp(-(k**2)), requires_grad)


def kaiser(
    M: int, *, beta: float = 12.0, sym: bool = True, dtype: Any = None, device: Any = None,
    requires_grad: bool = False, **kw: Any,
) -> Tensor:  # fmt: skip
    """The Kaiser window ``I0(sqrt(beta^2 - k^2)) / I0(beta)`` for ``k`` from ``-beta`` to ``beta``."""
    dt = _checks("kaiser", M, dtype, kw)
    if beta < 0:
        raise ValueRangeError(f"beta must be non-negative, got: {beta} instead.")
    if (w := _trivial(M, dt, device, requires_grad)) is not None:
        return w
    constant = 2.0 * beta / (M if not sym else M - 1)
    end = min(beta, -beta + (M - 1) * constant)
    k = linspace(-beta, end, M, dtype=dt, device=device).double()
    arg = sqrt((beta * beta - k * k).clamp(min=0.0))
    w = i0_series(arg, beta) / i0_series(k.new_tensor([float(beta)]), beta)
    return _done(w.to(dt), requires_grad)


def general_cosine(
    M: int, *, a: Iterable[float], sym: bool = True, dtype: Any = None, device: Any = None,
    requires_grad: bool = False, **kw: Any,
) -> Tensor:  # fmt: skip
    """The generalised cosine window ``sum_i (-1)^i a_i cos(2 pi i n / (M - 1))``."""
    dt = _checks("general_cosine", M, dtype, kw)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    coeffs = list(a)
    if not coeffs:
        raise ValueRangeError("Coefficients cannot be empty")
    if (w := _trivial(M, dt, device, requires_grad)) is not None:
        return w
    constant = 2 * math.pi / (M if not sym else M - 1)
    k = linspace(0, (M - 1) * constant, M, dtype=dt, device=device)
    a_i = tensor([(-1) ** i * c for i, c in enumerate(coeffs)], dtype=dt, device=device)
    i = tensor([float(j) for j in range(len(coeffs))], dtype=dt, device=device)
    return _done((a_i.unsqueeze(-1) * cos(i.unsqueeze(-1) * k)).sum(0), requires_grad)


def general_hamming(
    M: int, *, alpha: float = 0.54, sym: bool = True, dtype: Any = None, device: Any = None,
    requires_grad: bool = False, **kw: Any,
) -> Tensor:  # fmt: skip
    """The generalised Hamming window: ``general_cosine`` with ``a = [alpha, 1 - alpha]``."""
    return general_cosine(
        M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, device=device, requires_grad=requires_grad, **kw
    )


def hamming(
    M: int, *, sym: bool = True, dtype: Any = None, device: Any = None, requires_grad: bool = False, **kw: Any
) -> Tensor:
    """The Hamming window (``general_hamming`` with alpha 0.54)."""
    return general_hamming(M, sym=sym, dtype=dtype, device=device, requires_grad=requires_grad, **kw)


def hann(
    M: int, *, sym: bool = True, dtype: Any = None, device: Any = None, requires_grad: bool = False, **kw: Any
) -> Tensor:
    """The Hann window (``general_hamming`` with alpha 0.5)."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, device=device, requires_grad=requires_grad, **kw)


def blackman(
    M: int, *, sym: bool = True, dtype: Any = None, device: Any = None, requires_grad: bool = False, **kw: Any
) -> Tensor:
    """The Blackman window (``general_cosine`` with a = [0.42, 0.5, 0.08])."""
    return general_cosine(
        M, a=[0.42, 0.50, 0.08], sym=sym, dtype=dtype, device=device, requires_grad=requires_grad, **kw
    )


def bartlett(
    M: int, *, sym: bool = True, dtype: Any = None, device: Any = None, requires_grad: bool = False, **kw: Any
) -> Tensor:
    """The Bartlett (triangular) window ``1 - |k|`` for ``k`` from -1 in steps of ``2 / (M - 1)``."""
    dt = _checks("bartlett", M, dtype, kw)
    if (w := _trivial(M, dt, device, requires_grad)) is not None:
        return w
    constant = 2 / (M if not sym else M - 1)
    k = linspace(-1.0, -1.0 + (M - 1) * constant, M, dtype=dt, device=device)
    return _done(1 - k.abs(), requires_grad)


def nuttall(
    M: int, *, sym: bool = True, dtype: Any = None, device: Any = None, requires_grad: bool = False, **kw: Any
) -> Tensor:
    """The minimum 4-term Blackman-Harris window of Nuttall."""
    a = [0.3635819, 0.4891775, 0.1365995, 0.0106411]
    return general_cosine(M, a=a, sym=sym, dtype=dtype, device=device, requires_grad=requires_grad, **kw)

"""Special functions as backend kernels (erf, erfinv, the gamma family): the reference for NumPy and CuPy.

The reference calls the SciPy-style ``special`` module of the backend (``scipy.special`` for NumPy,
``cupyx.scipy.special`` for CuPy). Without one (NumPy without the optional SciPy) it computes on the host:
``math.erf`` and ``math.lgamma`` per element; erfinv as Giles' single-precision approximation refined by
Newton steps on ``erf(x) - y`` in float64 (exact to a few ulp); digamma and the polygammas by the recurrence
and the asymptotic series; P(a, x) by its power series and continued fraction. torch overrides erf, erfinv,
lgamma, digamma, polygamma and igamma with its own functions (``torch/array_kernels.py``).

To add a special function: a method here (the SciPy call, and a host fallback or a clear error without
SciPy), a torch override when torch has it, an operator in ``ops/_pointwise_special.py`` that calls
``self.backend.<name>`` (``pointwise_op(..., kernel=True)``), and a test against SciPy or PyTorch.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

_verf = np.frompyfunc(math.erf, 1, 1)
_vlgamma = np.frompyfunc(math.lgamma, 1, 1)


class SpecialKernels:
    """Mixin of ``Backend``: ``xp``, ``astype`` ... come from it; ``special`` is its SciPy-style module."""

    xp: Any
    #: ``scipy.special`` or its counterpart for this array library (None: the host fallback)
    special: Any = None

    def erf(self, x: Any) -> Any:
        """The error function, elementwise, in ``x``'s floating dtype."""
        if self.special is not None:
            return self.xp.astype(self.special.erf(x), x.dtype, copy=False)
        return self._on_host(x, _erf_host)

    def erfinv(self, y: Any) -> Any:
        """The inverse error function on [-1, 1] (±inf at ±1, NaN outside), in ``y``'s floating dtype."""
        if self.special is not None:
            return self.xp.astype(self.special.erfinv(y), y.dtype, copy=False)
        return self._on_host(y, _erfinv_host)

    # -- the gamma family ----------------------------------------------------------------------------
    def lgamma(self, x: Any) -> Any:
        """log |Gamma(x)|, elementwise, in ``x``'s floating dtype."""
        if self.special is not None:
            return self.xp.astype(self.special.gammaln(x), x.dtype, copy=False)
        return self._on_host(x, _lgamma_host)

    def digamma(self, x: Any) -> Any:
        """The logarithmic derivative of Gamma, elementwise."""
        if self.special is not None:
            return self.xp.astype(self.special.digamma(x), x.dtype, copy=False)
        return self._on_host(x, lambda h: _polygamma_host(0, h))

    def polygamma(self, n: int, x: Any) -> Any:
        """The ``n``-th derivative of digamma (``n = 0``: digamma itself)."""
        if self.special is not None:
            if n == 0:
                return self.digamma(x)
            # an array order: CuPy's polygamma compares ``n == 0`` inside and needs an array there (SciPy takes both)
            order = self.asarray(n)  # type: ignore[attr-defined]  # (on the backend's device)
            return self.xp.astype(self.special.polygamma(order, x), x.dtype, copy=False)
        return self._on_host(x, lambda h: _polygamma_host(n, h))

    def igamma(self, a: Any, x: Any) -> Any:
        """P(a, x), the regularised lower incomplete gamma function, in the promoted dtype of ``a`` and ``x``."""
        dtype = self.xp.result_type(a, x)
        if self.special is not None:
            return self.xp.astype(self.special.gammainc(a, x), dtype, copy=False)
        host = _gammainc_host(np.asarray(self.to_numpy(a)), np.asarray(self.to_numpy(x)))  # type: ignore[attr-defined]
        return self.from_numpy(host)  # type: ignore[attr-defined]

    def igamma_grad_a(self, a: Any, x: Any) -> Any:
        """d P(a, x) / d a, in float64 (PyTorch gives no derivative in ``a``).

        P's power series ``sum_k exp((a + k) log x - x - lgamma(a + k + 1))`` differentiated term by term:
        each term's derivative is the term times ``log x - digamma(a + k + 1)``. There is no cancellation in
        the bulk of Gamma(a); the tail (where P is 1 to double precision) loses relative accuracy, as every
        method does.
        """
        xp = self.xp
        ad, xd = xp.astype(a, xp.float64), xp.maximum(xp.astype(x, xp.float64), 1e-300)
        logx = xp.log(xd)
        log_c = ad * logx - xd - self.lgamma(ad + 1.0)  # log of term k = 0
        psi = self.digamma(ad + 1.0)
        total = xp.exp(log_c) * (logx - psi)
        empty = xp.size(xd) == 0
        xmax = 0.0 if empty else float(xp.max(xd - ad))
        kmin = max(xmax, 0.0) + 10.0 * math.sqrt(max(1.0 if empty else float(xp.max(xd)), 1.0)) + 20.0
        k = 0
        while True:
            k += 1
            ak = ad + k
            log_c = log_c + logx - xp.log(ak)
            psi = psi + 1.0 / ak
            term = xp.exp(log_c) * (logx - psi)
            total = total + term
            if k >= kmin and float(xp.max(xp.abs(term))) < 1e-18:
                break
            if k > 100000:  # pragma: no cover - a or x beyond 1e9
                break
        return total

    def standard_gamma_grad(self, x: Any, alpha: Any) -> Any:
        """d x / d alpha for a Gamma(alpha, 1) sample x, holding its CDF value fixed (implicit
        reparameterisation): ``-(dP/dalpha) / pdf``, P the regularised lower incomplete gamma function."""
        xp = self.xp
        ad, xd = xp.astype(alpha, xp.float64), xp.maximum(xp.astype(x, xp.float64), 1e-300)
        log_pdf = (ad - 1.0) * xp.log(xd) - xd - self.lgamma(ad)  # the Gamma(alpha, 1) density at x
        return xp.astype(-self.igamma_grad_a(alpha, x) / xp.exp(log_pdf), x.dtype)

    def _on_host(self, x: Any, fn: Any) -> Any:
        host = np.asarray(self.to_numpy(x))  # type: ignore[attr-defined]
        return self.from_numpy(np.asarray(fn(host), dtype=host.dtype))  # type: ignore[attr-defined]


def _erf_host(x: np.ndarray) -> np.ndarray:
    return np.asarray(_verf(x), dtype=np.float64)


def _erfinv_host(y: np.ndarray) -> np.ndarray:
    yd = np.asarray(y, dtype=np.float64)
    w = -np.log(np.clip((1.0 - yd) * (1.0 + yd), 1e-300, None))
    x = np.where(w < 5.0, _giles_small(w - 2.5), _giles_large(np.sqrt(w) - 3.0)) * yd
    for _ in range(3):
        err = _erf_host(x) - yd
        x = x - err / (2.0 / math.sqrt(math.pi) * np.exp(-x * x))
    x = np.where(np.abs(yd) == 1.0, np.copysign(np.inf, yd), x)
    return np.where(np.abs(yd) > 1.0, np.nan, x)


def _giles_small(w: Any) -> Any:
    p = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
              0.246640727, 1.50140941):  # fmt: skip
        p = c + p * w
    return p


def _giles_large(w: Any) -> Any:
    p = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
              1.00167406, 2.83297682):  # fmt: skip
        p = c + p * w
    return p


def _lgamma_host(x: np.ndarray) -> np.ndarray:
    out = np.asarray(_vlgamma(np.asarray(x, dtype=np.float64)), dtype=np.float64)
    return np.where(np.isposinf(x), np.inf, out).astype(x.dtype)


# B_2k / (2k) for the asymptotic series of digamma, and B_2k for the series of the polygammas
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)


def _polygamma_host(n: int, x: np.ndarray) -> np.ndarray:
    """The n-th derivative of digamma on the host (n = 0: digamma): the recurrence shifts x up to >= 10, then
    the asymptotic series; digamma of x <= 0 by reflection."""
    # shift x up to >= 10 with the recurrence, then the asymptotic series (x > 0)
    z = np.asarray(x, dtype=np.float64).copy()
    acc = np.zeros_like(z)
    sign = -1.0 if n % 2 == 0 else 1.0  # (-1)^(n+1)
    fact = float(math.factorial(n))
    bad = z <= 0
    if n == 0 and bad.any():  # reflection: psi(x) = psi(1 - x) - pi / tan(pi x)
        zr = np.where(bad, 1.0 - z, z)
        refl = np.where(bad, -math.pi / np.tan(math.pi * np.where(bad, z, 0.5)), 0.0)
        res = _polygamma_host(0, zr) + refl
        res = np.where(bad & (z == np.floor(z)), np.nan, res)
        return res.astype(x.dtype)
    while True:
        small = z < 10.0
        if not small.any():
            break
        acc = acc + np.where(small, (1.0 / z ** (n + 1)) if n else 1.0 / z, 0.0)
        z = np.where(small, z + 1.0, z)
    if n == 0:
        z2 = 1.0 / (z * z)
        s = sum(b / (2 * (k + 1)) * z2 ** (k + 1) for k, b in enumerate(_BERNOULLI))
        res = np.log(z) - 0.5 / z - s - acc
    else:
        s = math.factorial(n - 1) / z**n + fact / (2.0 * z ** (n + 1))
        for k, b in enumerate(_BERNOULLI, start=1):
            s = s + b * math.factorial(2 * k + n - 1) / math.factorial(2 * k) / z ** (2 * k + n)
        res = sign * (s + fact * acc)
    res = np.where(bad, np.nan, res)
    return res.astype(x.dtype)


def _gammainc_host(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """P(a, x) on the host: the power series below ``a + 1``, Legendre's continued fraction (modified Lentz)
    above."""
    # the power series below a + 1, Legendre's continued fraction (modified Lentz) above
    ad, xd = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    xs = np.maximum(xd, 1e-300)
    log_pre = ad * np.log(xs) - xs - _lgamma_host(ad)
    term = 1.0 / ad
    ssum = term.copy()
    for n in range(1, 2000):
        term = term * xs / (ad + n)
        ssum = ssum + term
        if np.all(np.abs(term) < np.abs(ssum) * 1e-17):
            break
    series = np.exp(log_pre) * ssum
    b = xs + 1.0 - ad
    c = np.full_like(b, 1e300)
    d = 1.0 / b
    h = d.copy()
    for i in range(1, 2000):
        an = -i * (i - ad)
        b = b + 2.0
        d = an * d + b
        d = np.where(np.abs(d) < 1e-300, 1e-300, d)
        c = b + an / c
        c = np.where(np.abs(c) < 1e-300, 1e-300, c)
        d = 1.0 / d
        delta = d * c
        h = h * delta
        if np.all(np.abs(delta - 1.0) < 1e-16):
            break
    cf = 1.0 - np.exp(log_pre) * h
    out = np.where(xd <= 0, 0.0, np.where(xd < ad + 1.0, series, cf))
    return out.astype(np.result_type(a, x))

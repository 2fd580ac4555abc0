"""Special functions on arrays (the gamma family) for backends whose array module lacks them (NumPy).

erf and erfinv are backend kernels (``backends/_kernels_special.py``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

try:  # SciPy is optional: used when present, exact pure-NumPy code otherwise
    from scipy import special as _sp
except ImportError:  # pragma: no cover - depends on the environment
    _sp = None

# -- the gamma family (lgamma, digamma, polygamma) ------------------------------------------------
_vlgamma = np.frompyfunc(math.lgamma, 1, 1)


def _xp_fn(xp: Any, *names: str) -> Any:
    """The array module's own function under one of ``names`` (or in its ``special`` namespace), else None."""
    for ns in (xp, getattr(xp, "special", None)):
        for n in names:
            f = getattr(ns, n, None) if ns is not None else None
            if f is not None:
                return f
    return None


def _method(x: Any, name: str, *args: Any) -> Any:
    """``x.<name>(*args)`` for array types that have it (torch tensors), else a TypeError naming the function."""
    f = getattr(x, name, None)
    if f is None:
        raise TypeError(f"{name}: the backend's array module has no {name}")
    return f(*args)


def lgamma(xp: Any, x: Any) -> Any:
    f = _xp_fn(xp, "lgamma", "gammaln")
    if f is not None:
        return f(x)
    if xp is not np:
        return _method(x, "lgamma")
    if _sp is not None:
        return _sp.gammaln(x).astype(x.dtype, copy=False)
    out = np.asarray(_vlgamma(np.asarray(x, dtype=np.float64)), dtype=np.float64)
    return np.where(np.isposinf(x), np.inf, out).astype(x.dtype)


def digamma(xp: Any, x: Any) -> Any:
    f = _xp_fn(xp, "digamma", "psi")
    if f is not None:
        return f(x)
    if xp is not np:
        return _method(x, "digamma")
    if _sp is not None:
        return _sp.digamma(x).astype(x.dtype, copy=False)
    return polygamma(np, 0, x)


# B_2k / (2k) for the asymptotic series of digamma, and B_2k for the series of the polygammas
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)


def polygamma(xp: Any, n: int, x: Any) -> Any:
    """The n-th derivative of digamma (n = 0 is digamma itself)."""
    if n == 0 and xp is not np:
        return digamma(xp, x)
    f = _xp_fn(xp, "polygamma")
    if f is not None:
        return f(n, x)
    if xp is not np:
        return _method(x, "polygamma", n)
    if _sp is not None:
        return _sp.polygamma(n, x).astype(x.dtype, copy=False)
    # pure NumPy: shift x up to >= 10 with the recurrence, then the asymptotic series (x > 0)
    z = np.asarray(x, dtype=np.float64).copy()
    acc = np.zeros_like(z)
    sign = -1.0 if n % 2 == 0 else 1.0  # (-1)^(n+1)
    fact = float(math.factorial(n))
    bad = z <= 0
    if n == 0 and bad.any():  # reflection: psi(x) = psi(1 - x) - pi / tan(pi x)
        zr = np.where(bad, 1.0 - z, z)
        refl = np.where(bad, -math.pi / np.tan(math.pi * np.where(bad, z, 0.5)), 0.0)
        res = polygamma(np, 0, zr) + refl
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


def _f64(xp: Any, a: Any) -> Any:
    return xp.astype(a, xp.float64) if hasattr(xp, "astype") else a.astype(np.float64)


def gammainc_da(xp: Any, alpha: Any, x: Any) -> Any:
    """d P(alpha, x) / d alpha, P the regularised lower incomplete gamma function, in float64.

    P's power series ``sum_k exp((alpha + k) log x - x - lgamma(alpha + k + 1))`` differentiated term by
    term: each term's derivative is the term times ``log x - digamma(alpha + k + 1)``. There is no
    cancellation in the bulk of Gamma(alpha); the tail (where P is 1 to double precision) loses relative
    accuracy, as every method does.
    """
    ad, xd = _f64(xp, alpha), xp.maximum(_f64(xp, x), 1e-300)
    logx = xp.log(xd)
    log_c = ad * logx - xd - lgamma(xp, ad + 1.0)  # log of term k = 0
    psi = digamma(xp, ad + 1.0)
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
        if k > 100000:  # pragma: no cover - alpha or x beyond 1e9
            break
    return total


def gamma_log_pdf(xp: Any, alpha: Any, x: Any) -> Any:
    """log of the Gamma(alpha, 1) density at x (float64)."""
    ad, xd = _f64(xp, alpha), xp.maximum(_f64(xp, x), 1e-300)
    return (ad - 1.0) * xp.log(xd) - xd - lgamma(xp, ad)


def standard_gamma_grad(xp: Any, x: Any, alpha: Any) -> Any:
    """d x / d alpha for a Gamma(alpha, 1) sample x, holding its CDF value fixed (implicit reparameterisation):
    ``-(dP/dalpha) / pdf``, P the regularised lower incomplete gamma function (see ``gammainc_da``)."""
    out = -gammainc_da(xp, alpha, x) / xp.exp(gamma_log_pdf(xp, alpha, x))
    return xp.astype(out, x.dtype) if hasattr(xp, "astype") else out.astype(x.dtype)


def gammainc(xp: Any, a: Any, x: Any) -> Any:
    """The regularised lower incomplete gamma function P(a, x)."""
    f = _xp_fn(xp, "gammainc", "igamma")
    if f is not None:
        return f(a, x)
    if xp is not np:
        return _method(a, "igamma", x)
    if _sp is not None:
        return _sp.gammainc(a, x).astype(np.result_type(a, x), copy=False)
    # pure NumPy: the power series below a + 1, Legendre's continued fraction (modified Lentz) above
    ad, xd = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    xs = np.maximum(xd, 1e-300)
    log_pre = ad * np.log(xs) - xs - lgamma(np, ad)
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

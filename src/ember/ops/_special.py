"""Special functions on arrays (erf, erfinv) for backends whose array module lacks them (NumPy)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

try:  # SciPy is optional: used when present, exact pure-NumPy code otherwise
    from scipy import special as _sp
except ImportError:  # pragma: no cover - depends on the environment
    _sp = None

_verf = np.frompyfunc(math.erf, 1, 1)


def erf(xp: Any, x: Any) -> Any:
    f = getattr(xp, "erf", None) or getattr(getattr(xp, "special", None), "erf", None)
    if f is not None:
        return f(x)
    if xp is np:
        if _sp is not None:
            return _sp.erf(x).astype(x.dtype, copy=False)
        return np.asarray(_verf(x), dtype=x.dtype)
    raise TypeError("erf: the backend's array module has no erf")


def erfinv(xp: Any, y: Any) -> Any:
    f = getattr(xp, "erfinv", None) or getattr(getattr(xp, "special", None), "erfinv", None)
    if f is not None:
        return f(y)
    if xp is np and _sp is not None:
        return _sp.erfinv(y).astype(y.dtype, copy=False)
    if xp is not np:
        raise TypeError("erfinv: the backend's array module has no erfinv")
    # Giles' single-precision start, then Newton steps on erf(x) - y in float64.
    yd = np.asarray(y, dtype=np.float64)
    w = -np.log(np.clip((1.0 - yd) * (1.0 + yd), 1e-300, None))
    x = np.where(w < 5.0, _giles_small(w - 2.5), _giles_large(np.sqrt(w) - 3.0)) * yd
    for _ in range(3):
        err = np.asarray(_verf(x), dtype=np.float64) - yd
        x = x - err / (2.0 / math.sqrt(math.pi) * np.exp(-x * x))
    x = np.where(np.abs(yd) == 1.0, np.copysign(np.inf, yd), x)
    x = np.where(np.abs(yd) > 1.0, np.nan, x)
    return x.astype(y.dtype)


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

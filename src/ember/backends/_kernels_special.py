"""Special functions (erf, erfinv) as backend kernels: the reference for NumPy and CuPy.

The reference calls the SciPy-style ``special`` module of the backend (``scipy.special`` for NumPy,
``cupyx.scipy.special`` for CuPy). Without one (NumPy without the optional SciPy) it computes on the host:
``math.erf`` per element, and erfinv as Giles' single-precision approximation refined by Newton steps on
``erf(x) - y`` in float64 (exact to a few ulp). torch overrides both with ``torch.erf``/``torch.erfinv``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

_verf = np.frompyfunc(math.erf, 1, 1)


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

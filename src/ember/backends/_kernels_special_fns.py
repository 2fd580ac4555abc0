"""``torch.special``'s Bessel, Airy, error-function relatives and orthogonal polynomials as one table-driven kernel:
the reference calls the backend's SciPy-style ``special`` module (``scipy.special`` for NumPy, ``cupyx.scipy.special``
for CuPy); torch overrides it with ``torch.special`` itself. The Chebyshev V/W families, which SciPy lacks, and the
polynomials of tensor degree use the three-term recurrences, written against ``xp``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: torch.special name -> scipy.special name (one array argument unless listed in _TWO)
_SCIPY = {
    "i0": "i0", "i0e": "i0e", "i1": "i1", "i1e": "i1e", "erfcx": "erfcx", "log_ndtr": "log_ndtr", "ndtr": "ndtr",
    "ndtri": "ndtri", "entr": "entr", "bessel_j0": "j0", "bessel_j1": "j1", "bessel_y0": "y0", "bessel_y1": "y1",
    "modified_bessel_i0": "i0", "modified_bessel_i1": "i1", "modified_bessel_k0": "k0", "modified_bessel_k1": "k1",
    "scaled_modified_bessel_k0": "k0e", "scaled_modified_bessel_k1": "k1e", "xlog1py": "xlog1py", "zeta": "zeta",
    "gammaincc": "gammaincc",
}  # fmt: skip

#: polynomial families: (P_0, P_1, recurrence P_{k+1} = f(x, k, P_k, P_{k-1}), argument map)
POLYNOMIALS = (
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
    "legendre_polynomial_p",
)  # fmt: skip


def _first(name: str, x: Any, one: Any) -> Any:
    kind = name.rsplit("_", 1)[-1]
    if name.startswith(("chebyshev", "shifted_chebyshev")):
        return {"t": x, "u": 2 * x, "v": 2 * x - 1, "w": 2 * x + 1}[kind]
    if name == "hermite_polynomial_h":
        return 2 * x
    if name == "laguerre_polynomial_l":
        return one - x
    return x  # hermite_he, legendre


def _next(name: str, x: Any, k: int, p: Any, q: Any) -> Any:
    """P_{k+1} from P_k = p and P_{k-1} = q."""
    if name.startswith(("chebyshev", "shifted_chebyshev")):
        return 2 * x * p - q
    if name == "hermite_polynomial_h":
        return 2 * x * p - 2 * k * q
    if name == "hermite_polynomial_he":
        return x * p - k * q
    if name == "laguerre_polynomial_l":
        return ((2 * k + 1 - x) * p - k * q) / (k + 1)
    return ((2 * k + 1) * x * p - k * q) / (k + 1)  # legendre


class SpecialFnKernels:
    """Mixin of ``Backend`` (``xp`` and ``special`` come from it)."""

    xp: Any
    special: Any

    def special_fn(self, name: str, *args: Any) -> Any:
        """``torch.special.<name>(*args)`` on arrays, in the floating dtype of the (promoted) arguments."""
        xp = self.xp
        dtype = xp.result_type(*args)
        if name in POLYNOMIALS:
            return xp.astype(self._polynomial(name, args[0], args[1]), dtype, copy=False)
        if name == "spherical_bessel_j0":
            x = args[0]
            safe = xp.where(x == 0, 1.0, x)
            return xp.astype(xp.where(x == 0, 1.0, xp.sin(safe) / safe), dtype, copy=False)
        sp = self.special
        if sp is None:
            raise ImportError(
                f"special.{name} on the {getattr(self, 'name', 'this')} backend needs SciPy: pip install scipy "
                "(or use the torch backend)"
            )
        fn_name = "airy" if name == "airy_ai" else _SCIPY[name]
        fn = getattr(sp, fn_name, None)
        if fn is None:  # the library's SciPy counterpart lacks it (cupyx.scipy.special has no airy): SciPy on the host
            import scipy.special

            host = getattr(scipy.special, fn_name)(*(self.to_numpy(a) for a in args))  # type: ignore[attr-defined]
            out = self.from_numpy(np.asarray(host[0] if name == "airy_ai" else host))  # type: ignore[attr-defined]
        else:
            out = fn(*args)[0] if name == "airy_ai" else fn(*args)
        return xp.astype(out, dtype, copy=False)

    def _polynomial(self, name: str, x: Any, n: Any) -> Any:
        """The degree-``n`` polynomial of the family at ``x`` (``n`` an integer array broadcast with ``x``; ``n < 0``
        gives 0, as in PyTorch)."""
        xp = self.xp
        if name.startswith("shifted_"):
            x, name = 2 * x - 1, name[len("shifted_") :]
        x, n = xp.broadcast_arrays(x, xp.astype(n, xp.int64) if hasattr(n, "dtype") else xp.asarray(int(n)))
        one = xp.ones_like(x)
        top = int(xp.max(n)) if n.size else 0
        p_prev, p = one, _first(name, x, one)
        out = xp.where(n == 0, one, xp.where(n == 1, p, 0 * x))
        for k in range(1, top):
            p_prev, p = p, _next(name, x, k, p, p_prev)
            out = xp.where(n == k + 1, p, out)
        return out

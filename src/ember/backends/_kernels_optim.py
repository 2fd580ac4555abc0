"""Reference in-place optimizer updates (NumPy and CuPy): SGD and Adam steps, ``axpy`` and ``scal``, and
the gradient unscaling of mixed-precision training (``unscale_grads_``).

On NumPy, ``axpy``/``scal`` go through SciPy's BLAS when it is installed (threaded, no temporaries); other
arrays (CuPy) use the array library's in-place operations. The torch backend overrides the steps with
torch's fused kernels (``_fused_sgd_``, ``_fused_adam_``).
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

_BLAS: Any = None  # None: not looked up yet; False: unavailable; else scipy.linalg.blas


def _scipy_blas() -> Any:
    """SciPy's BLAS module, set up so that it does not compete with NumPy's BLAS threads.

    SciPy wheels ship their own OpenBLAS. Its worker threads spinning beside NumPy's on a small machine
    make NumPy's matrix products markedly slower, so SciPy's copy is limited to one thread (with
    threadpoolctl); without threadpoolctl, or when that cannot be arranged, SciPy's BLAS is not used.
    """
    global _BLAS
    if _BLAS is None:
        _BLAS = False
        try:
            from scipy.linalg import blas
            from threadpoolctl import ThreadpoolController
        except ImportError:
            return None
        numpy_dir = os.path.dirname(np.__file__)
        for lib in ThreadpoolController().lib_controllers:
            # NumPy's own BLAS sits in numpy/ or numpy.libs/; only a separate copy is limited
            if lib.user_api == "blas" and not lib.filepath.startswith((numpy_dir, numpy_dir + ".libs")):
                lib.set_num_threads(1)
        _BLAS = blas
    return _BLAS or None


def _blas(y: Any) -> Any:
    """BLAS level-1 routines for ``y``'s dtype when SciPy is installed and ``y`` is a contiguous NumPy array."""
    if not isinstance(y, np.ndarray) or not y.flags.c_contiguous or y.dtype.char not in "fd":
        return None
    blas = _scipy_blas()
    if blas is None:
        return None
    return (blas.saxpy, blas.sscal) if y.dtype.char == "f" else (blas.daxpy, blas.dscal)


class OptimKernels:
    """In-place parameter updates written against ``self.xp`` (NumPy's names)."""

    xp: Any

    def axpy(self, y: Any, a: float, x: Any) -> None:
        """``y += a * x`` in place, without a temporary where the library allows."""
        fns = _blas(y)
        if fns is not None and isinstance(x, np.ndarray) and x.dtype == y.dtype and x.shape == y.shape:
            fns[0](np.ascontiguousarray(x).reshape(-1), y.reshape(-1), a=a)
        else:
            y += a * x

    def scal(self, y: Any, a: float) -> None:
        """``y *= a`` in place."""
        fns = _blas(y)
        if fns is not None:
            fns[1](a, y.reshape(-1))
        else:
            y *= a

    def unscale_grads_(self, grads: list[Any], inv_scale: float) -> Any:
        """Multiply every gradient by ``inv_scale`` in place; return a 0-d float32 array, 1 when any of them
        holds an inf or NaN, else 0 (``torch._amp_foreach_non_finite_check_and_unscale_``; no host sync)."""
        xp = self.xp
        found = xp.zeros((), dtype=xp.float32)
        for g in grads:
            found = xp.maximum(found, xp.astype(xp.logical_not(xp.all(xp.isfinite(g))), xp.float32))
            g *= inv_scale
        return found

    def sgd_step(
        self,
        p: Any,
        g: Any,
        buf: Any,
        lr: float,
        weight_decay: float,
        momentum: float,
        dampening: float,
        nesterov: bool,
    ) -> Any:
        """One SGD step on ``p`` in place (``torch.optim.SGD``'s rule); returns the momentum buffer
        (``buf`` is None on the first step and, without momentum, stays None)."""
        if weight_decay:
            g = g + weight_decay * p
        if momentum:
            if buf is None:
                buf = self.xp.copy(g)
            else:
                self.scal(buf, momentum)
                self.axpy(buf, 1 - dampening, g)
            g = g + momentum * buf if nesterov else buf
        self.axpy(p, -lr, g)
        return buf

    def adam_step(
        self,
        p: Any,
        g: Any,
        m: Any,
        v: Any,
        max_v: Any,
        tmp: Any,
        step: int,
        lr: float,
        beta1: float,
        beta2: float,
        eps: float,
        weight_decay: float,
        decoupled: bool,
    ) -> None:
        """One Adam (``decoupled``: AdamW) step on ``p``, ``m``, ``v`` (and ``max_v`` for AMSGrad) in place;
        ``step`` counts from 1 and ``tmp`` is scratch space shaped like ``p``."""
        xp = self.xp
        if decoupled:
            self.scal(p, 1 - lr * weight_decay)
        elif weight_decay:
            g = g + weight_decay * p
        self.scal(m, beta1)
        self.axpy(m, 1 - beta1, g)
        self.scal(v, beta2)
        xp.multiply(g, g, out=tmp)
        self.axpy(v, 1 - beta2, tmp)
        bc1, bc2 = 1 - beta1**step, 1 - beta2**step
        if max_v is not None:
            xp.maximum(max_v, v, out=max_v)
            v = max_v
        xp.sqrt(v, out=tmp)
        tmp *= 1 / math.sqrt(bc2)
        tmp += eps
        xp.divide(m, tmp, out=tmp)
        self.axpy(p, -lr / bc1, tmp)

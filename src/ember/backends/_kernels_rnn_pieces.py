"""What the recurrent kernels (``_kernels_rnn.py``) share: the activations in place and the products with a
weight and their gradients (reference implementation against ``self.xp``).

On NumPy the activations come from ``exp`` alone: ``sigmoid(a) = 1 / (1 + exp(-a))`` and
``tanh(a) = 2 sigmoid(2a) - 1``, in place over all gates at once. NumPy's ``tanh`` has no SIMD loop for
float64 on AVX2 machines and costs 4-5 times its ``exp`` there (measured on this project's 2-core Haswell
VM), which made a cell's forward dominated by it (on AVX-512 its SIMD loop is faster than the formula: the
NumPy backend's ``_tanh_to`` is NumPy's there). The argument of ``exp`` is capped below its overflow (no
warning; the result is exact to the dtype's precision there); ``tanh``'s error is a few units in the last
place *of 1* (absolute), so for ``|a|`` far below 1 its relative error grows past ``tanh``'s own (float64:
~1e-16 absolute).
"""

from __future__ import annotations

import math
from typing import Any

_EXP_CAPS: dict[Any, float] = {}


class RNNPieces:
    """The recurrent kernels' activations and products (a base of ``RNNKernels``)."""

    xp: Any
    #: M*N*K up to which the BLAS runs a float32/64 product on small-matrix kernels, 0.0 for none known (the
    #: NumPy backend reads its OpenBLAS's core: ``_blas_threads.small_gemm_mnk``)
    _small_gemm = 0.0

    # -- activations in place (backends with native ones override these three) --------------------------
    def _exp_cap(self, a: Any) -> float:
        """The largest argument whose ``exp`` is finite in ``a``'s dtype, rounded down."""
        cap = _EXP_CAPS.get(a.dtype)
        if cap is None:
            cap = _EXP_CAPS[a.dtype] = math.floor(math.log(float(self.xp.finfo(a.dtype).max)))
        return cap

    def _exp_(self, a: Any) -> Any:
        """``a`` becomes ``exp(a)``, with no overflow warning: the argument capped below overflow here (exact to
        the dtype's precision there); NumPy's backend lets it overflow to ``inf`` under ``errstate`` instead (the
        callers' ``1 / (1 + inf)`` is the same 0), one pass fewer."""
        xp = self.xp
        xp.minimum(a, self._exp_cap(a), out=a)
        return xp.exp(a, out=a)

    def _sigmoid_(self, a: Any) -> Any:
        """``a`` becomes ``sigmoid(a)``: ``1 / (1 + exp(-a))``."""
        self.xp.negative(a, out=a)
        return self._sigmoid_neg_(a)

    def _sigmoid_neg_(self, a: Any) -> Any:
        """``a``, holding ``-x``, becomes ``sigmoid(x)``: ``1 / (1 + exp(a))``."""
        self._exp_(a)
        a += 1.0
        return self.xp.reciprocal(a, out=a)

    def _tanh_(self, a: Any) -> Any:
        """``a`` becomes ``tanh(a)``: ``2 / (1 + exp(-2a)) - 1``."""
        return self._tanh_to(a, a)

    def _tanh_to(self, a: Any, out: Any) -> Any:
        """``out`` (``a``'s shape and dtype, or ``a`` itself) becomes ``tanh(a)``; returns ``out``."""
        xp = self.xp
        xp.multiply(a, -2.0, out=out)
        self._exp_(out)
        out += 1.0
        xp.divide(2.0, out, out=out)
        out -= 1.0
        return out

    # -- products ---------------------------------------------------------------------------------
    def _mm_t(self, a: Any, w: Any) -> Any:
        """``a w^T`` for ``a`` of any leading dims (one input feature: a broadcast product, the same bits as the
        one-term GEMM at a fraction of its cost)."""
        xp = self.xp
        wt = xp.transpose(w, (1, 0))
        if a.shape[-1] == 1:
            return a * wt
        if a.ndim == 2 and self._halves(a.shape[0], w.shape[0], a.shape[1], a.dtype):  # (a transposed A: not taken)
            return self._mm(a, xp.ascontiguousarray(wt))
        return xp.matmul(a, wt)

    def _halves(self, m: int, n: int, k: int, dtype: Any) -> int:
        """Where to cut a product of size m * n * k in two along m (0: don't): when it is at most twice the size
        the BLAS's small-matrix kernels take (``_small_gemm``), each half is. OpenBLAS SkylakeX, one thread,
        float64: (97, 204) x (204, 51) 38.5 -> 29.4 us in two halves of rows; (51, 97) x (97, 204) 30.2 -> 25.2
        in two halves of the inner dimension, their sum added (measured 2026-11-26, Sapphire Rapids)."""
        small = self._small_gemm
        if small and small < m * n * k <= 2 * small and m > 1 and dtype.char in "fd":
            return (m + 1) // 2
        return 0

    def _mm(self, a: Any, b: Any) -> Any:
        """``a b`` (2-d, ``a`` row-major: the products with a weight of the gradients), in two products of half
        the rows where the BLAS's small-matrix kernels then take them (``_halves``)."""
        xp = self.xp
        cut = self._halves(a.shape[0], b.shape[1], a.shape[1], a.dtype)
        if not cut or b.dtype != a.dtype:
            return xp.matmul(a, b)
        out = xp.empty((a.shape[0], b.shape[1]), dtype=a.dtype)
        xp.matmul(a[:cut], b, out=out[:cut])
        xp.matmul(a[cut:], b, out=out[cut:])
        return out

    def _linear_grads(self, dz: Any, x: Any, w: Any, need_x: bool, need_w: bool, need_b: bool) -> tuple[Any, ...]:
        """For ``z = x w^T + b`` (``dz`` and ``x`` 2-d): ``(gx, gw, gb)`` (None where not needed)."""
        gx = self._mm(dz, w) if need_x else None
        gw = self.weight_grad(dz, x) if need_w else None
        gb = self._bias_grad(dz) if need_b else None
        return gx, gw, gb

    def _bias_grad(self, dz: Any) -> Any:
        """``dz`` (M, O) summed over its rows: for float32/64 a matrix-vector product with ones (BLAS's GEMV: 2.4
        us for the (97, 204) gradients of the recurrent benchmark on NumPy, where ``sum(axis=0)`` took 9.8)."""
        xp = self.xp
        if dz.dtype.char in "fd":
            return xp.matmul(xp.ones((dz.shape[0],), dtype=dz.dtype), dz)
        return xp.sum(dz, axis=0)

    def weight_grad(self, dz: Any, x: Any) -> Any:
        """``dz^T x``: the gradient of the weight of ``z = x w^T`` (a ``WeightGrad``'s value), as the transposed
        view of the product ``x^T dz`` (OpenBLAS on NumPy: 29.6 us for the recurrent benchmark's (51, 97) x
        (97, 204) float64 product against 34.6 for ``dz^T x``, one thread; the engine hands a leaf a C-contiguous
        ``.grad``)."""
        xp = self.xp
        xt = xp.transpose(x, (1, 0))
        cut = self._halves(dz.shape[0], xt.shape[0], dz.shape[1], dz.dtype)  # (the inner dimension cut: a sum)
        if not cut or x.dtype != dz.dtype:
            return xp.transpose(xp.matmul(xt, dz), (1, 0))
        g = xp.matmul(xt[:, :cut], dz[:cut])
        g += xp.matmul(xt[:, cut:], dz[cut:])
        return xp.transpose(g, (1, 0))

    def weight_grad_add_(self, s: Any, dz: Any, x: Any) -> Any:
        """``s += dz^T x`` in place; returns ``s``."""
        s += self.weight_grad(dz, x)
        return s

    def _flat(self, a: Any) -> Any:
        return a.reshape((a.shape[0] * a.shape[1], a.shape[2]))

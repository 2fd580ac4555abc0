"""Activation kernels (reference implementation against ``self.xp``, shared by NumPy and CuPy).

GELU forward and backward are one kernel each, as PyTorch's ``gelu``/``gelu_backward``, written as in-place
passes over few temporaries (half precision is computed in float32, PyTorch's opmath, and rounded once):

- exact, ``x Phi(x)``: ``Phi`` from ``erf`` of the backend's special functions (SciPy's, CuPy's, or the host
  fallback), except for float32 NumPy arrays. There SciPy's erf costs ~40 ns an element (it is most of a small
  GPT's step), so ``Phi(x) = (1 + tanh(t R(t^2))) / 2`` with ``t`` = x clamped to [-6.5, 6.5] (beyond, ``Phi``
  is 0 or 1 in float32) and ``R`` a degree-6 polynomial fitted to ``atanh(erf(t / sqrt 2)) / t`` (weighted
  least squares against SciPy's erfc in float64, weights ``dPhi/dR``, Lawson-reweighted; NumPy's SIMD float32
  ``tanh`` costs what a multiply does), over blocks of 128K elements, near the cache: 18 passes where the
  degree-5/5 rational it replaced took 24. Evaluated in float32, ``Phi`` is within 1e-7 of the exact value
  over [-9, 9] (torch's float32 erf: 6e-8), ``gelu`` within 6e-7 absolute (torch: 3.7e-7);
  ``tests/nn/test_gelu.py`` checks 2e-6 / 4e-7 (gradient) against float64. With ``keep``, the forward also
  returns the derivative ``Phi(x) + x phi(x)`` (one ``exp`` pass more), and backward is one product.
- tanh, ``0.5 x (1 + tanh(z))`` with ``z = k (x + c x^3)``: written as ``x sigmoid(2z) = x / (1 + exp(-2z))``,
  the same function without NumPy's slow ``tanh`` and without the cancellation of ``1 + tanh`` for x < 0.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _kernels_fused as fused
from ._kernels_threads import parallel_blocks, parallel_rows, recorded

#: ReLU on float32 NumPy arrays runs over rows of this many elements against a row of zeros (see ``relu``)
_RELU_ROW = 1024
_ZEROS_F32 = np.zeros(_RELU_ROW, dtype=np.float32)
_ZEROS_F32.flags.writeable = False
#: ReLU's backward on NumPy runs over blocks of this many elements (its temporaries stay in the cache)
_RELU_BLOCK = 1 << 16
_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_K = math.sqrt(2.0 / math.pi)
_GELU_C = 0.044715
#: float32 ``Phi(x) = (1 + tanh(t R(t^2))) / 2``, ``t`` = x clamped to +-_PHI_CLAMP: R's coefficients, lowest first
_PHI_R = (
    7.97884941e-01, 3.63330845e-02, -3.25948378e-05, -5.53062590e-05, 3.96475775e-06, -1.32264509e-07,
    1.75620631e-09,
)  # fmt: skip
_PHI_CLAMP = 6.5
#: float32 elements per block (4K-16K blocks pay for the calls, whole arrays for the memory; 128K, not 64K: on two
#: threads (2048, 512) took 8.7-9.1 ms against 10.7-11.3, on one the same; benchmarks/README.md)
_BLOCK = 131072


def _inplace(fn: Any, t: Any) -> Any:
    """``fn(t)`` written into ``t`` (a NumPy scalar, from a 0-d input, has no buffer: a new one)."""
    return fn(t) if isinstance(t, np.generic) else fn(t, out=t)


def _phi_f32(x: np.ndarray, out: np.ndarray, t: np.ndarray, u: np.ndarray) -> None:
    """``Phi(x)`` of a 1-d float32 block into ``out`` (``t``, ``u``: scratch of the same length)."""
    np.clip(x, -_PHI_CLAMP, _PHI_CLAMP, out=t)  # (NaN stays NaN; one pass: float32 minimum/maximum with a
    # scalar run a branchy loop)
    np.multiply(t, t, out=u)
    np.multiply(u, _PHI_R[-1], out=out)
    for a in _PHI_R[-2:0:-1]:
        out += a
        out *= u
    out += _PHI_R[0]
    out *= t
    np.tanh(out, out=out)
    out += 1.0
    out *= 0.5


@recorded
def _gelu_blocks(x: np.ndarray, g: np.ndarray | None, keep: bool = False) -> tuple[np.ndarray, Any]:
    """Exact GELU of a float32 array block by block: ``(gelu(x), its derivative if keep else None)``; with ``g``,
    ``(g * derivative, None)``. The derivative is ``Phi(x) + x phi(x)``. The blocks are independent: they run
    on the kernel threads (``parallel_rows``), with the same bits as on one."""
    xf = x.reshape(-1)
    gf = None if g is None else g.reshape(-1)
    res = np.empty(xf.shape, np.float32)
    der = np.empty(xf.shape, np.float32) if keep and g is None else None
    n = xf.shape[0]
    size = min(_BLOCK, n)

    def part(b0: int, b1: int) -> None:
        t, u = (np.empty(size, np.float32) for _ in range(2))
        with np.errstate(over="ignore", invalid="ignore"):  # inf * 0 is NaN, as in PyTorch, silently
            for i in range(b0 * size, min(b1 * size, n), size):
                j = min(i + size, n)
                xb, rb, tb, ub = xf[i:j], res[i:j], t[: j - i], u[: j - i]
                _phi_f32(xb, rb, tb, ub)
                if gf is None and der is None:
                    rb *= xb
                    continue
                np.multiply(xb, xb, out=ub)  # x phi(x) (NaN at +-inf, as PyTorch's)
                ub *= -0.5
                np.exp(ub, out=ub)
                ub *= xb
                ub *= _INV_SQRT_2PI
                if der is None:
                    rb += ub
                    rb *= gf[i:j]  # type: ignore[index]
                else:
                    np.add(rb, ub, out=der[i:j])
                    rb *= xb

    parallel_rows(-(-n // size) if n else 0, n, part)
    return res.reshape(x.shape), (None if der is None else der.reshape(x.shape))


class ActivationKernels:
    """The ReLU gradient, log-softmax and GELU. Mixed into ``Backend``; torch overrides them with its own kernels."""

    xp: Any
    erf: Any  # from SpecialKernels
    keep_number: Any  # from Backend

    def relu(self, x: Any) -> Any:
        """``max(x, 0)`` (NaN propagates). For C-contiguous float32 NumPy arrays, against a cached row of zeros
        rather than the scalar 0: NumPy's float32 ``maximum`` with a scalar runs a branchy loop ~3x slower on
        random signs (benchmarks/README.md, "Measurements behind kernel choices")."""
        if not (
            isinstance(x, np.ndarray) and x.dtype == np.float32 and x.size >= 16 * _RELU_ROW and x.flags.c_contiguous
        ):
            return self.xp.maximum(x, 0)
        y = np.empty(x.shape, dtype=x.dtype)
        xf, yf = x.reshape(-1), y.reshape(-1)
        m = x.size - x.size % _RELU_ROW
        x2, y2 = xf[:m].reshape(-1, _RELU_ROW), yf[:m].reshape(-1, _RELU_ROW)

        def part(a: int, b: int) -> None:  # rows a:b (elementwise: the same bits on any split)
            np.maximum(x2[a:b], _ZEROS_F32, out=y2[a:b])

        parallel_blocks(np, x2.shape[0], m, part)
        if m < x.size:
            np.maximum(xf[m:], 0, out=yf[m:])
        return y

    def sigmoid(self, x: Any) -> Any:
        """``1 / (1 + exp(-x))`` of real ``x``, as ``exp(-logaddexp(0, -x))`` (finite for any ``|x|``; torch: its
        kernel)."""
        return self.xp.exp(-self.xp.logaddexp(0, -x))

    def tanh_backward(self, g: Any, y: Any) -> Any:
        """The gradient of ``y = tanh(x)`` from ``y``: ``g * (1 - y * y)`` (torch: its one-pass kernel)."""
        keep = self.keep_number
        return g * ((1 if keep is None else keep(y, 1)) - y * y)

    def sigmoid_backward(self, g: Any, y: Any) -> Any:
        """The gradient of ``y = sigmoid(x)`` from ``y``: ``g * y * (1 - y)`` (torch: its one-pass kernel)."""
        keep = self.keep_number
        return g * y * ((1 if keep is None else keep(y, 1)) - y)

    def relu_backward(self, g: Any, y: Any) -> Any:
        """0 where the ReLU output ``y`` is <= 0, ``g`` elsewhere: PyTorch's ``threshold_backward``, so a NaN
        output passes its gradient and a NaN gradient at a zero output becomes 0 (a select, not a product)."""
        xp = self.xp
        if (
            isinstance(y, np.ndarray)  # (ndarray subclasses too: ember.compile records through one)
            and isinstance(g, np.ndarray)
            and y.ndim
            and g.shape == y.shape
            and g.dtype == y.dtype
        ):
            # the same select without branches: NumPy's ``where`` on a random mask runs several times slower
            # (mispredicted branches; benchmarks/README.md): AND the gradient's bits with
            # a mask that is all ones where the gradient passes and 0 where it does not
            bits = np.dtype(f"i{g.dtype.itemsize}")
            gb, yc = np.ascontiguousarray(g).view(bits).reshape(-1), np.ascontiguousarray(y).reshape(-1)
            res = np.empty(gb.shape, dtype=bits)

            def part(a: int, b: int) -> None:  # blocks of _RELU_BLOCK elements, near the cache; elementwise
                for lo in range(a * _RELU_BLOCK, min(b * _RELU_BLOCK, res.size), _RELU_BLOCK):
                    hi = min(lo + _RELU_BLOCK, res.size)
                    keep = res[lo:hi]
                    np.subtract(np.less_equal(yc[lo:hi], 0), 1, out=keep, dtype=bits, casting="unsafe")
                    # 0 where y <= 0, -1 (every bit set) elsewhere, NaN included
                    np.bitwise_and(gb[lo:hi], keep, out=keep)

            parallel_blocks(np, -(-res.size // _RELU_BLOCK), res.size, part)
            return res.view(g.dtype).reshape(g.shape)
        return xp.where(y <= 0, 0, g)

    # -- log-softmax ---------------------------------------------------------------------------------
    def log_softmax(self, x: Any, dim: int) -> Any:
        """``x - max - log(sum(exp(x - max)))`` along ``dim``."""
        xp = self.xp
        if xp is np and isinstance(x, np.ndarray) and x.size and dim in (-1, x.ndim - 1) and x.dtype.kind == "f":
            return fused.log_softmax(x)
        m = xp.max(x, axis=dim, keepdims=True) if 0 not in x.shape else 0
        z = x - m
        return z - xp.log(xp.sum(xp.exp(z), axis=dim, keepdims=True))

    def log_softmax_backward(self, g: Any, y: Any, dim: int) -> Any:
        """The gradient of :meth:`log_softmax` from its output ``y``: ``g - exp(y) * sum(g)`` along ``dim``."""
        xp = self.xp
        last = dim in (-1, y.ndim - 1) and isinstance(g, np.ndarray) and g.shape == y.shape
        if xp is np and last and isinstance(y, np.ndarray) and y.size and y.dtype.kind == "f":
            return fused.log_softmax_backward(g, y)
        return g - xp.exp(y) * xp.sum(g, axis=dim, keepdims=True)

    # -- GELU --------------------------------------------------------------------------------------
    def gelu(self, x: Any, approximate: str = "none", keep: bool = False) -> tuple[Any, Any]:
        """GELU, ``x * Phi(x)`` (``approximate="tanh"``: ``Phi`` by its tanh approximation), in ``x``'s dtype,
        and what :meth:`gelu_backward` reads besides ``x`` when ``keep`` (here its derivative, computed in the
        same pass, so backward is one product; torch: None), else None."""
        xp, dtype = self.xp, x.dtype
        x = self._gelu_opmath(x)
        d = None
        if approximate == "tanh":  # x / (1 + exp(-2z))
            t = self._gelu_tanh_inner(x, -2.0)
            with np.errstate(over="ignore", invalid="ignore"):
                t = _inplace(xp.exp, t)
                t += 1.0
                t = x / t
        elif _blocks(x):
            t, d = _gelu_blocks(x, None, keep)
        else:
            t = self.erf(x * _INV_SQRT2)
            t += 1.0
            t *= x
            t *= 0.5
        if keep and d is None:
            d = self._gelu_derivative(x, approximate)
        return xp.astype(t, dtype, copy=False), d

    def gelu_backward(self, g: Any, x: Any, approximate: str = "none", saved: Any = None) -> Any:
        """The gradient of :meth:`gelu` for the output gradient ``g`` (PyTorch's ``gelu_backward``); ``saved``:
        what ``gelu(..., keep=True)`` returned besides the output, or None."""
        xp, dtype = self.xp, x.dtype
        g = self._gelu_opmath(g)
        if saved is None:
            x = self._gelu_opmath(x)
            if approximate == "none" and _blocks(x) and g.dtype == x.dtype and g.shape == x.shape:
                return xp.astype(_gelu_blocks(x, g)[0], dtype, copy=False)
            saved = self._gelu_derivative(x, approximate)
        return xp.astype(saved * g, dtype, copy=False)  # one pass: on two threads it measured slower in a step

    def _gelu_derivative(self, x: Any, approximate: str) -> Any:
        """The derivative of GELU at ``x`` (float32 or float64), a new array."""
        xp = self.xp
        if approximate == "tanh":  # s + 2 x s (1 - s) k (1 + 3 c x^2), s = sigmoid(2z) = (1 + tanh(z)) / 2
            with np.errstate(over="ignore", invalid="ignore"):
                w = self._gelu_tanh_inner(x, -2.0)
                s = xp.exp(w)
                s += 1.0
                s = _inplace(xp.reciprocal, s)
                w = _inplace(xp.negative, w)  # 1 - s as sigmoid(-2z): no cancellation where s is near 1
                w = _inplace(xp.exp, w)
                w += 1.0
                w = _inplace(xp.reciprocal, w)
                d = x * x
                d *= 3 * _GELU_C
                d += 1.0
                d *= 2 * _GELU_K
                d *= x
                d *= s
                d *= w
                d += s
            return d
        if _blocks(x):
            return _gelu_blocks(x, xp.ones_like(x))[0]
        d = x * x  # Phi(x) + x phi(x)
        d *= -0.5
        d = _inplace(xp.exp, d)
        d *= x
        d *= _INV_SQRT_2PI
        cdf = self.erf(x * _INV_SQRT2)
        cdf += 1.0
        cdf *= 0.5
        d += cdf
        return d

    def _gelu_tanh_inner(self, x: Any, scale: float) -> Any:
        """``scale k (x + c x^3)``, a new array."""
        t = x * x
        t *= _GELU_C
        t += 1.0
        t *= x
        t *= scale * _GELU_K
        return t

    def _gelu_opmath(self, x: Any) -> Any:
        """``x`` in float32 when it is a half-precision type, else itself."""
        return self.xp.astype(x, self.xp.float32) if x.dtype.itemsize < 4 else x


def _blocks(x: Any) -> bool:
    """Whether exact GELU runs :func:`_gelu_blocks`: float32 NumPy arrays with at least one element."""
    return isinstance(x, np.ndarray) and x.dtype == np.float32 and x.size > 0

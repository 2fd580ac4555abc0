"""Recurrent cell kernels: one LSTM, GRU or Elman step forward, and its backward (reference implementation
against ``self.xp``, shared by NumPy and CuPy; torch overrides it with ``torch/rnn_kernels.py``).

Weights are PyTorch's: ``w_ih`` (G*H, I), ``w_hh`` (G*H, H), biases (G*H,) or None, gates in PyTorch's
order (LSTM: input, forget, cell, output; GRU: reset, update, new). A forward returns its outputs and a
``saved`` tuple (the gate activations) that its backward reads beside the inputs.

The activations come from ``exp`` alone: ``sigmoid(a) = 1 / (1 + exp(-a))`` and ``tanh(a) = 2 sigmoid(2a) - 1``,
computed in place over all gates at once. NumPy's ``tanh`` has no SIMD loop for float64 on AVX2 machines and
costs 4-5 times its ``exp`` there (measured on this project's 2-core Haswell VM), which made the cell's
forward dominated by it. The argument of ``exp`` is capped below its overflow (no warning; the result is
exact to the dtype's precision there);
``tanh``'s error is a few units in the last place *of 1* (absolute), so for ``|a|`` far below 1 its relative
error grows past ``tanh``'s own (float64: ~1e-16 absolute).
"""

from __future__ import annotations

import math
from typing import Any

_EXP_CAPS: dict[Any, float] = {}


class RNNKernels:
    """One recurrent step forward and backward. Mixed into ``Backend``."""

    xp: Any

    def _exp_cap(self, a: Any) -> float:
        """The largest argument whose ``exp`` is finite in ``a``'s dtype, rounded down."""
        cap = _EXP_CAPS.get(a.dtype)
        if cap is None:
            cap = _EXP_CAPS[a.dtype] = math.floor(math.log(float(self.xp.finfo(a.dtype).max)))
        return cap

    # -- activations in place (over exp, see the module docstring) --------------------------------------
    def _sigmoid_(self, a: Any) -> Any:
        """``a`` becomes ``sigmoid(a)``: ``1 / (1 + exp(-a))``."""
        xp = self.xp
        xp.negative(a, out=a)
        xp.minimum(a, self._exp_cap(a), out=a)
        xp.exp(a, out=a)
        a += 1.0
        xp.reciprocal(a, out=a)
        return a

    def _tanh_(self, a: Any) -> Any:
        """``a`` becomes ``tanh(a)``: ``2 / (1 + exp(-2a)) - 1``."""
        xp = self.xp
        a *= -2.0
        xp.minimum(a, self._exp_cap(a), out=a)
        xp.exp(a, out=a)
        a += 1.0
        xp.divide(2.0, a, out=a)
        a -= 1.0
        return a

    def _gates(self, x: Any, h: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any) -> Any:
        """``x w_ih^T + h w_hh^T + b_ih + b_hh`` as one new (N, G*H) array."""
        xp = self.xp
        z = xp.matmul(x, xp.transpose(w_ih, (1, 0)))
        z += xp.matmul(h, xp.transpose(w_hh, (1, 0)))
        if b_ih is not None:
            z += b_ih
            z += b_hh
        return z

    def _linear_grads(self, dz: Any, x: Any, w: Any, need_x: bool, need_w: bool, need_b: bool) -> tuple[Any, ...]:
        """For ``z = x w^T + b``: ``(gx, gw, gb)`` from ``dz`` (None where not needed)."""
        xp = self.xp
        gx = xp.matmul(dz, w) if need_x else None
        gw = xp.matmul(xp.transpose(dz, (1, 0)), x) if need_w else None
        gb = xp.sum(dz, axis=0) if need_b else None
        return gx, gw, gb

    # -- LSTM ---------------------------------------------------------------------------------------
    def lstm_cell(self, x: Any, h: Any, c: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any) -> tuple[Any, Any, Any]:
        """``(h', c', saved)``: ``c' = f c + i g``, ``h' = o tanh(c')``."""
        hs = c.shape[-1]
        act = self._gates(x, h, w_ih, w_hh, b_ih, b_hh)
        g = act[:, 2 * hs : 3 * hs]
        g *= 2.0  # tanh(g) = 2 sigmoid(2g) - 1: one sigmoid pass over all four gates
        self._sigmoid_(act)
        g *= 2.0
        g -= 1.0
        i, f, o = act[:, :hs], act[:, hs : 2 * hs], act[:, 3 * hs :]
        c1 = f * c
        c1 += i * g
        tc = self._tanh_(self.xp.copy(c1))
        return o * tc, c1, (act, tc)

    def lstm_cell_backward(
        self, gh: Any, gc: Any, saved: Any, x: Any, h: Any, c: Any, w_ih: Any, w_hh: Any, need: tuple[bool, ...]
    ) -> tuple[Any, ...]:
        """Gradients ``(gx, gh, gc, gw_ih, gw_hh, gb_ih, gb_hh)`` (None where ``need`` says not needed; ``need``
        has one flag per input in that order) from the gradients of ``h'`` and ``c'`` (either may be None)."""
        xp = self.xp
        act, tc = saved
        hs = tc.shape[-1]
        i, f, g, o = act[:, :hs], act[:, hs : 2 * hs], act[:, 2 * hs : 3 * hs], act[:, 3 * hs :]
        dz = act * (1.0 - act)  # sigmoid'; the cell gate's block becomes tanh' below
        dz[:, 2 * hs : 3 * hs] = 1.0 - g * g
        if gh is not None:
            dc = gh * o
            dc *= 1.0 - tc * tc
            if gc is not None:
                dc += gc
            dz[:, 3 * hs :] *= gh * tc
        else:
            dc = xp.copy(gc) if gc is not None else xp.zeros_like(tc)
            dz[:, 3 * hs :] = 0.0
        dz[:, :hs] *= dc * g
        dz[:, hs : 2 * hs] *= dc * c
        dz[:, 2 * hs : 3 * hs] *= dc * i
        gc0 = dc * f if need[2] else None
        gx, gw_ih, gb_ih = self._linear_grads(dz, x, w_ih, need[0], need[3], need[5])
        gh0, gw_hh, gb_hh = self._linear_grads(dz, h, w_hh, need[1], need[4], need[6])
        return gx, gh0, gc0, gw_ih, gw_hh, gb_ih, gb_hh

    # -- GRU ----------------------------------------------------------------------------------------
    def gru_cell(self, x: Any, h: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any) -> tuple[Any, Any]:
        """``(h', saved)``: ``r, z = sigmoid(...)``, ``n = tanh(x_n + r hn)``, ``h' = n + z (h - n)``."""
        xp = self.xp
        hs = h.shape[-1]
        xw = xp.matmul(x, xp.transpose(w_ih, (1, 0)))
        hw = xp.matmul(h, xp.transpose(w_hh, (1, 0)))
        if b_ih is not None:
            xw += b_ih
            hw += b_hh
        rz = xw[:, : 2 * hs]
        rz += hw[:, : 2 * hs]
        self._sigmoid_(rz)
        r, z = rz[:, :hs], rz[:, hs:]
        hn = hw[:, 2 * hs :]
        n = xw[:, 2 * hs :]
        n += r * hn
        self._tanh_(n)
        h1 = h - n
        h1 *= z
        h1 += n
        return h1, (xw, hw)

    def gru_cell_backward(
        self, gh: Any, saved: Any, x: Any, h: Any, w_ih: Any, w_hh: Any, need: tuple[bool, ...]
    ) -> tuple[Any, ...]:
        """Gradients ``(gx, gh, gw_ih, gw_hh, gb_ih, gb_hh)`` (``need``: one flag per input in that order)."""
        xp = self.xp
        xw, hw = saved
        hs = h.shape[-1]
        r, z, n, hn = xw[:, :hs], xw[:, hs : 2 * hs], xw[:, 2 * hs :], hw[:, 2 * hs :]
        dx = xp.empty_like(xw)  # the gradient of the input part's pre-activations [r, z, n]
        dn = dx[:, 2 * hs :]
        xp.multiply(gh, 1.0 - z, out=dn)
        dn *= 1.0 - n * n
        dzp = dx[:, hs : 2 * hs]
        xp.subtract(h, n, out=dzp)
        dzp *= gh
        dzp *= z * (1.0 - z)
        drp = dx[:, :hs]
        xp.multiply(dn, hn, out=drp)
        drp *= r * (1.0 - r)
        dh = xp.copy(dx)  # the hidden part's: the same for r and z, r dn for hn
        dh[:, 2 * hs :] *= r
        gx, gw_ih, gb_ih = self._linear_grads(dx, x, w_ih, need[0], need[2], need[4])
        gh0, gw_hh, gb_hh = self._linear_grads(dh, h, w_hh, need[1], need[3], need[5])
        if gh0 is not None:
            gh0 += gh * z
        return gx, gh0, gw_ih, gw_hh, gb_ih, gb_hh

    # -- Elman --------------------------------------------------------------------------------------
    def rnn_cell(
        self, x: Any, h: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, nonlinearity: str
    ) -> tuple[Any, Any]:
        """``(h', saved)``: ``h' = tanh(x w_ih^T + b_ih + h w_hh^T + b_hh)`` (or relu)."""
        z = self._gates(x, h, w_ih, w_hh, b_ih, b_hh)
        if nonlinearity == "tanh":
            self._tanh_(z)
        else:
            self.xp.maximum(z, 0.0, out=z)
        return z, None

    def rnn_cell_backward(
        self, gh: Any, h1: Any, x: Any, h: Any, w_ih: Any, w_hh: Any, nonlinearity: str, need: tuple[bool, ...]
    ) -> tuple[Any, ...]:
        """Gradients ``(gx, gh, gw_ih, gw_hh, gb_ih, gb_hh)`` from the step's output ``h1``."""
        dz = gh * (1.0 - h1 * h1) if nonlinearity == "tanh" else gh * (h1 > 0)
        gx, gw_ih, gb_ih = self._linear_grads(dz, x, w_ih, need[0], need[2], need[4])
        gh0, gw_hh, gb_hh = self._linear_grads(dz, h, w_hh, need[1], need[3], need[5])
        return gx, gh0, gw_ih, gw_hh, gb_ih, gb_hh

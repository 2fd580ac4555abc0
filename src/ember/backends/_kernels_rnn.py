"""Recurrent kernels: one LSTM, GRU or Elman step, and a whole layer over a sequence, forward and backward
(reference implementation against ``self.xp``, shared by NumPy, CuPy and torch; torch replaces only the
in-place activations, ``torch/rnn_kernels.py``).

Weights are PyTorch's: ``w_ih`` (G*H, I), ``w_hh`` (G*H, H), biases (G*H,) or None, gates in PyTorch's
order (LSTM: input, forget, cell, output; GRU: reset, update, new); an LSTM layer's ``w_hr`` (P, H) projects
``h``. A forward returns its outputs and a ``saved`` tuple (the gate activations) that its backward reads
beside the inputs. A layer runs its steps in one call: the input products of all steps are one matrix
product before the loop, and in backward the weight gradients of all steps are one product after it (the
loop itself multiplies by ``w_hh`` once per step). The activations and the products they share are
``RNNPieces`` (``_kernels_rnn_pieces.py``).
"""

from __future__ import annotations

from typing import Any

from ._kernels_rnn_pieces import RNNPieces

_GATE_SIGNS: dict[Any, Any] = {}  # per dtype: the gates' factors of ``-(z + b)`` (never handed out)


class RNNKernels(RNNPieces):
    """Recurrent steps and layers, forward and backward. Mixed into ``Backend``."""

    def _gates(self, a: Any) -> tuple[Any, Any, Any, Any]:
        """Views of the four gate blocks (input, forget, cell, output) of ``a``: (N, 4H) as the products give
        them, or gate-major (4, N, H), where each block is contiguous (the cells' layout: see ``lstm_cell``)."""
        if a.ndim == 3:
            return a[0], a[1], a[2], a[3]
        hs = a.shape[-1] // 4
        return a[:, :hs], a[:, hs : 2 * hs], a[:, 2 * hs : 3 * hs], a[:, 3 * hs :]

    def _lstm_gates_(self, act: Any) -> None:
        """The LSTM's pre-activations (N, 4H or gate-major 4, N, H) become ``[sigmoid i, sigmoid f, tanh g,
        sigmoid o]`` in place."""
        self.xp.negative(act, out=act)
        self._lstm_gates_neg_(act)

    def _lstm_gates_neg_(self, act: Any, doubled: bool = False) -> None:
        """``_lstm_gates_`` from the pre-activations negated (``-z``, the argument of the sigmoid's ``exp``; the
        cell gate's already doubled where ``doubled``)."""
        g = self._gates(act)[2]
        if not doubled:
            g *= 2.0  # tanh(g) = 2 sigmoid(2g) - 1: one sigmoid pass over all four gates
        self._sigmoid_neg_(act)
        g *= 2.0
        g -= 1.0

    def _lstm_gate_major(self, x: Any, h: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any) -> Any:
        """The cell's ``-(z + b)`` (the sigmoid's ``exp`` argument; the cell gate's doubled for its tanh), gate-major
        (4, N, H), as the product of ``[h | x | 1]`` (N, K) with the gates' weights and biases copied transposed
        and scaled (4, K, H): one BLAS product per gate, each written into its block. Only where each runs on the
        BLAS's small-matrix kernels (``_small_gemm``); None elsewhere (the weights' copy would then cost more).
        No (N, 4H) product to transpose, no sum of two products, no bias pass: rnn_time_sequence's whole cell
        forward (batch 97, hidden 51, float64, OpenBLAS SkylakeX, one thread) 118.8 -> 86.0 us with one input
        feature, 129.6 -> 111.2 with 51."""
        n, hs, ni = h.shape[0], h.shape[1], x.shape[1]
        k = hs + ni + (b_ih is not None)
        dt, small = h.dtype, self._small_gemm
        if not small or n * hs * k > small or dt.char not in "fd" or not dt == x.dtype == w_ih.dtype == w_hh.dtype:
            return None
        if b_ih is not None and not dt == b_ih.dtype == b_hh.dtype:
            return None
        xp = self.xp
        hx, w = xp.empty((n, k), dtype=dt), xp.empty((4, k, hs), dtype=dt)
        hx[:, :hs] = h
        hx[:, hs : hs + ni] = x
        w[:, :hs] = xp.transpose(w_hh.reshape((4, hs, hs)), (0, 2, 1))
        w[:, hs : hs + ni] = xp.transpose(w_ih.reshape((4, hs, ni)), (0, 2, 1))
        if b_ih is not None:
            hx[:, -1] = 1.0
            xp.add(b_ih.reshape((4, hs)), b_hh.reshape((4, hs)), out=w[:, -1])
        signs = _GATE_SIGNS.get(dt)
        if signs is None:
            signs = _GATE_SIGNS[dt] = xp.asarray([-1.0, -1.0, -2.0, -1.0], dtype=dt).reshape((4, 1, 1))
        w *= signs
        return xp.matmul(hx, w)

    # -- LSTM ---------------------------------------------------------------------------------------
    def _lstm_act(self, act: Any, c: Any) -> tuple[Any, Any, Any]:
        """From the pre-activations ``act`` (made the activations in place) and ``c``: ``(o tanh c', c', tanh c')``."""
        self._lstm_gates_(act)
        return self._lstm_state(act, c)

    def _lstm_state(self, act: Any, c: Any) -> tuple[Any, Any, Any]:
        """From the gate activations ``act`` and ``c``: ``(o tanh c', c', tanh c')`` (``tanh c'`` written into the
        array of ``i g``)."""
        i, f, g, o = self._gates(act)
        c1 = f * c
        tc = i * g
        c1 += tc
        return o * self._tanh_to(c1, tc), c1, tc

    def _lstm_dz(self, dz: Any, gh: Any, gc: Any, act: Any, tc: Any, c: Any) -> Any:
        """Fill ``dz`` with the pre-activations' gradient, in the layout of ``act`` or (N, 4H) beside a gate-major
        ``act`` (the cell's: each gate's last product written straight into its columns, no copy to transpose);
        return the gradient of ``c'`` (total). The input and forget gates' ``dc sigmoid'`` is one pass over both
        blocks each (they are adjacent in either layout); no derivative is computed for a gate that needs none."""
        xp = self.xp
        i, _, g, o = self._gates(act)
        di, df, dg, do = self._gates(dz)
        if gh is not None:
            dc = xp.multiply(gh, o)
            t = xp.subtract(1.0, o)
            t *= tc
            xp.multiply(t, dc, out=do)  # do = gh tc o (1 - o)
            xp.multiply(tc, tc, out=t)
            xp.subtract(1.0, t, out=t)
            dc *= t  # gh o (1 - tanh(c')^2)
            if gc is not None:
                dc += gc
        else:
            dc = xp.copy(gc) if gc is not None else xp.zeros_like(tc)
            t = xp.empty_like(tc)
            do[...] = 0.0
        xp.multiply(g, g, out=t)
        xp.subtract(1.0, t, out=t)
        t *= i
        xp.multiply(t, dc, out=dg)  # dg = dc i (1 - g^2)
        n, hs = tc.shape
        if act.ndim == 3:  # (2, N, H): i and f
            a2, dc2 = act[:2], dc
        else:  # (N, 2, H)
            a2, dc2 = act[:, : 2 * hs].reshape((n, 2, hs)), dc.reshape((n, 1, hs))
        q = xp.subtract(1.0, a2)
        q *= a2
        q *= dc2  # dc i (1 - i), dc f (1 - f)
        qi, qf = (q[0], q[1]) if act.ndim == 3 else (q[:, 0], q[:, 1])
        xp.multiply(qi, g, out=di)
        xp.multiply(qf, c, out=df)
        return dc

    def lstm_cell(self, x: Any, h: Any, c: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any) -> tuple[Any, Any, Any]:
        """``(h', c', saved)``: ``c' = f c + i g``, ``h' = o tanh(c')``. The gates are kept gate-major (4, N, H),
        so every gate's elementwise pass runs over a contiguous block instead of N strided rows: written there by
        the gates' products (``_lstm_gate_major``), or else the products' (N, 4H) copied there in one pass that
        also adds both biases and negates: ``-(z + b)``, the argument of the sigmoid's ``exp`` (a separate
        broadcast add per bias over the (4, N, H) blocks cost more than the copy itself: 51-element inner
        loops)."""
        xp = self.xp
        act = self._lstm_gate_major(x, h, w_ih, w_hh, b_ih, b_hh)
        if act is not None:
            self._lstm_gates_neg_(act, doubled=True)
        else:
            z = self._mm_t(h, w_hh)
            z += self._mm_t(x, w_ih)
            n, hs = z.shape[0], c.shape[-1]
            act = xp.empty((4, n, hs), dtype=z.dtype)
            zt = xp.transpose(z.reshape((n, 4, hs)), (1, 0, 2))
            if b_ih is not None:
                nb = xp.add(b_ih, b_hh)
                xp.negative(nb, out=nb)
                xp.subtract(nb.reshape((4, 1, hs)), zt, out=act)
            else:
                xp.negative(zt, out=act)
            self._lstm_gates_neg_(act)
        h1, c1, tc = self._lstm_state(act, c)
        return h1, c1, (act, tc)

    def lstm_cell_backward(
        self, gh: Any, gc: Any, saved: Any, x: Any, h: Any, c: Any, w_ih: Any, w_hh: Any, need: tuple[bool, ...],
        lazy: bool = False,
    ) -> tuple[Any, ...]:  # fmt: skip
        """Gradients ``(gx, gh, gc, gw_ih, gw_hh, gb_ih, gb_hh)`` (None where ``need`` says not needed; ``need``
        has one flag per input in that order) from the gradients of ``h'`` and ``c'`` (either may be None).
        ``lazy``: the weights' gradients may be ``WeightGrad``s (the torch backend's are; arrays here)."""
        act, tc = saved  # gate-major (4, N, H)
        dz = self.xp.empty((act.shape[1], 4 * act.shape[2]), dtype=act.dtype)
        dc = self._lstm_dz(dz, gh, gc, act, tc, c)
        gc0 = dc * act[1] if need[2] else None
        gx, gw_ih, gb_ih = self._linear_grads(dz, x, w_ih, need[0], need[3], need[5])
        gh0, gw_hh, _ = self._linear_grads(dz, h, w_hh, need[1], need[4], False)
        gb_hh = (self.xp.copy(gb_ih) if need[5] else self._bias_grad(dz)) if need[6] else None  # one sum
        return gx, gh0, gc0, gw_ih, gw_hh, gb_ih, gb_hh

    def lstm_layer(
        self, x: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, w_hr: Any, reverse: bool
    ) -> tuple[Any, ...]:
        """One LSTM layer in one direction over ``x`` (T, N, I) from ``(h0, c0)``: ``(out, h_T, c_T, saved)``,
        ``out`` (T, N, P or H) in time order (``reverse`` runs from the last step to the first)."""
        xp = self.xp
        steps, hs = x.shape[0], c0.shape[-1]
        acts = self._mm_t(x, w_ih)  # (T, N, 4H): every step's input product at once, the activations later
        if b_ih is not None:
            acts += b_ih + b_hh
        out = xp.empty_like(acts[..., : h0.shape[-1]])
        tcs, cs = xp.empty_like(acts[..., :hs]), xp.empty_like(acts[..., :hs])  # tanh c', and c before each step
        hpre = xp.empty_like(acts[..., :hs]) if w_hr is not None else None
        h, c = h0, c0
        for t in range(steps - 1, -1, -1) if reverse else range(steps):
            act = acts[t]
            act += self._mm_t(h, w_hh)
            cs[t] = c
            h, c, tcs[t] = self._lstm_act(act, c)
            if hpre is not None:
                hpre[t] = h
                h = self._mm_t(h, w_hr)
            out[t] = h
        return out, h, c, (acts, tcs, cs, hpre)

    def lstm_layer_backward(
        self, gout: Any, gh: Any, gc: Any, saved: Any, x: Any, h0: Any, w_ih: Any, w_hh: Any, w_hr: Any,
        out: Any, reverse: bool, need: tuple[bool, ...],
    ) -> tuple[Any, ...]:  # fmt: skip
        """Gradients ``(gx, gh0, gc0, gw_ih, gw_hh, gb_ih, gb_hh, gw_hr)`` from those of ``out``, ``h_T`` and
        ``c_T`` (any may be None); ``need``: one flag per gradient in that order."""
        xp = self.xp
        acts, tcs, cs, hpre = saved
        steps, hs = x.shape[0], cs.shape[-1]
        dz = xp.empty_like(acts)
        ghr = None if w_hr is None else xp.zeros_like(w_hr)
        dc = gc
        for t in range(steps) if reverse else range(steps - 1, -1, -1):
            g = gh if gout is None else (gout[t] if gh is None else gout[t] + gh)
            if ghr is not None and g is not None:
                ghr += xp.matmul(xp.transpose(g, (1, 0)), hpre[t])
                g = xp.matmul(g, w_hr)
            dc = self._lstm_dz(dz[t], g, dc, acts[t], tcs[t], cs[t])
            dc = dc * acts[t][:, hs : 2 * hs]
            gh = self._mm(dz[t], w_hh)
        hprev = xp.concatenate([out[1:], h0[None]] if reverse else [h0[None], out[:-1]], axis=0)
        dzf = self._flat(dz)
        gx = xp.matmul(dz, w_ih) if need[0] else None
        gw_ih = self.weight_grad(dzf, self._flat(x)) if need[3] else None
        gw_hh = self.weight_grad(dzf, self._flat(hprev)) if need[4] else None
        gb = self._bias_grad(dzf) if need[5] or need[6] else None
        gb_hh = (xp.copy(gb) if need[5] else gb) if need[6] else None
        return gx, gh, dc, gw_ih, gw_hh, gb if need[5] else None, gb_hh, ghr

    # -- GRU ----------------------------------------------------------------------------------------
    def _gru_act(self, xw: Any, hw: Any, h: Any) -> Any:
        """``xw``/``hw`` (N, 3H) the input and hidden products (with biases); ``xw`` becomes ``[r, z, n]`` in
        place; returns ``h' = n + z (h - n)``."""
        hs = h.shape[-1]
        rz = xw[:, : 2 * hs]
        rz += hw[:, : 2 * hs]
        self._sigmoid_(rz)
        n = xw[:, 2 * hs :]
        n += xw[:, :hs] * hw[:, 2 * hs :]
        self._tanh_(n)
        h1 = h - n
        h1 *= xw[:, hs : 2 * hs]
        h1 += n
        return h1

    def _gru_dz(self, dx: Any, dh: Any, gh: Any, act: Any, hn: Any, h: Any) -> Any:
        """Fill ``dx`` and ``dh`` (N, 3H: the gradients of the input and hidden products) from ``gh``; return
        the direct part of ``h``'s gradient, ``gh z``."""
        hs = h.shape[-1]
        r, z, n = act[:, :hs], act[:, hs : 2 * hs], act[:, 2 * hs :]
        dn = gh * (1.0 - z)
        dn *= 1.0 - n * n
        dx[:, 2 * hs :] = dn
        dzp = h - n
        dzp *= gh
        dzp *= z * (1.0 - z)
        dx[:, hs : 2 * hs] = dzp
        drp = dn * hn
        drp *= r * (1.0 - r)
        dx[:, :hs] = drp
        dh[:, : 2 * hs] = dx[:, : 2 * hs]
        dh[:, 2 * hs :] = dn * r
        return gh * z

    def gru_cell(self, x: Any, h: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any) -> tuple[Any, Any]:
        """``(h', saved)``: ``r, z = sigmoid(...)``, ``n = tanh(x_n + r hn)``, ``h' = n + z (h - n)``."""
        xw, hw = self._mm_t(x, w_ih), self._mm_t(h, w_hh)
        if b_ih is not None:
            xw += b_ih
            hw += b_hh
        return self._gru_act(xw, hw, h), (xw, hw[:, 2 * h.shape[-1] :])

    def gru_cell_backward(
        self, gh: Any, saved: Any, x: Any, h: Any, w_ih: Any, w_hh: Any, need: tuple[bool, ...], lazy: bool = False
    ) -> tuple[Any, ...]:
        """Gradients ``(gx, gh, gw_ih, gw_hh, gb_ih, gb_hh)`` (``need``: one flag per input in that order;
        ``lazy`` as in ``lstm_cell_backward``)."""
        act, hn = saved
        dx, dh = self.xp.empty_like(act), self.xp.empty_like(act)
        direct = self._gru_dz(dx, dh, gh, act, hn, h)
        gx, gw_ih, gb_ih = self._linear_grads(dx, x, w_ih, need[0], need[2], need[4])
        gh0, gw_hh, gb_hh = self._linear_grads(dh, h, w_hh, need[1], need[3], need[5])
        return gx, (gh0 + direct if need[1] else None), gw_ih, gw_hh, gb_ih, gb_hh

    def gru_layer(
        self, x: Any, h0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, reverse: bool
    ) -> tuple[Any, Any, Any]:
        """One GRU layer in one direction over ``x`` (T, N, I): ``(out, h_T, saved)``."""
        xp = self.xp
        steps, hs = x.shape[0], h0.shape[-1]
        acts = self._mm_t(x, w_ih)  # (T, N, 3H)
        if b_ih is not None:
            acts += b_ih
        out, hns = xp.empty_like(acts[..., :hs]), xp.empty_like(acts[..., :hs])
        h = h0
        for t in range(steps - 1, -1, -1) if reverse else range(steps):
            hw = self._mm_t(h, w_hh)
            if b_hh is not None:
                hw += b_hh
            hns[t] = hw[:, 2 * hs :]
            out[t] = h = self._gru_act(acts[t], hw, h)
        return out, h, (acts, hns)

    def gru_layer_backward(
        self, gout: Any, gh: Any, saved: Any, x: Any, h0: Any, w_ih: Any, w_hh: Any, out: Any, reverse: bool,
        need: tuple[bool, ...],
    ) -> tuple[Any, ...]:  # fmt: skip
        """Gradients ``(gx, gh0, gw_ih, gw_hh, gb_ih, gb_hh)`` from those of ``out`` and ``h_T`` (either None)."""
        xp = self.xp
        acts, hns = saved
        steps = x.shape[0]
        dx, dh = xp.empty_like(acts), xp.empty_like(acts)
        hprev = xp.concatenate([out[1:], h0[None]] if reverse else [h0[None], out[:-1]], axis=0)
        for t in range(steps) if reverse else range(steps - 1, -1, -1):
            g = gh if gout is None else (gout[t] if gh is None else gout[t] + gh)
            if g is None:
                g = xp.zeros_like(h0)
            gh = self._gru_dz(dx[t], dh[t], g, acts[t], hns[t], hprev[t])
            gh += self._mm(dh[t], w_hh)
        gw_ih, gb_ih = self._layer_weight_grads(dx, x, need[2], need[4])
        gw_hh, gb_hh = self._layer_weight_grads(dh, hprev, need[3], need[5])
        return xp.matmul(dx, w_ih) if need[0] else None, gh, gw_ih, gw_hh, gb_ih, gb_hh

    def _layer_weight_grads(self, dz: Any, x: Any, need_w: bool, need_b: bool) -> tuple[Any, Any]:
        """``(gw, gb)`` summed over all steps: ``dz`` (T, N, G) and ``x`` (T, N, I) flattened, one product."""
        dzf = self._flat(dz)
        gw = self.weight_grad(dzf, self._flat(x)) if need_w else None
        return gw, (self._bias_grad(dzf) if need_b else None)

    # -- Elman --------------------------------------------------------------------------------------
    def _rnn_act_(self, z: Any, nonlinearity: str) -> Any:
        return self._tanh_(z) if nonlinearity == "tanh" else self.xp.maximum(z, 0.0, out=z)

    def _rnn_dz(self, gh: Any, h1: Any, nonlinearity: str) -> Any:
        return gh * (1.0 - h1 * h1) if nonlinearity == "tanh" else gh * (h1 > 0)

    def rnn_cell(
        self, x: Any, h: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, nonlinearity: str
    ) -> tuple[Any, Any]:
        """``(h', saved)``: ``h' = tanh(x w_ih^T + b_ih + h w_hh^T + b_hh)`` (or relu)."""
        z = self._mm_t(x, w_ih)
        z += self._mm_t(h, w_hh)
        if b_ih is not None:
            z += b_ih
            z += b_hh
        return self._rnn_act_(z, nonlinearity), None

    def rnn_cell_backward(
        self, gh: Any, h1: Any, x: Any, h: Any, w_ih: Any, w_hh: Any, nonlinearity: str, need: tuple[bool, ...],
        lazy: bool = False,
    ) -> tuple[Any, ...]:  # fmt: skip
        """Gradients ``(gx, gh, gw_ih, gw_hh, gb_ih, gb_hh)`` from the step's output ``h1`` (``lazy`` as in
        ``lstm_cell_backward``)."""
        dz = self._rnn_dz(gh, h1, nonlinearity)
        gx, gw_ih, gb_ih = self._linear_grads(dz, x, w_ih, need[0], need[2], need[4])
        gh0, gw_hh, _ = self._linear_grads(dz, h, w_hh, need[1], need[3], False)
        gb_hh = (self.xp.copy(gb_ih) if need[4] else self._bias_grad(dz)) if need[5] else None  # one sum
        return gx, gh0, gw_ih, gw_hh, gb_ih, gb_hh

    def rnn_layer(
        self, x: Any, h0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, nonlinearity: str, reverse: bool
    ) -> tuple[Any, Any, Any]:
        """One Elman layer in one direction over ``x`` (T, N, I): ``(out, h_T, None)``."""
        steps = x.shape[0]
        out = self._mm_t(x, w_ih)  # (T, N, H): the pre-activations, then the outputs in place
        if b_ih is not None:
            out += b_ih + b_hh
        h = h0
        for t in range(steps - 1, -1, -1) if reverse else range(steps):
            z = out[t]
            z += self._mm_t(h, w_hh)
            h = self._rnn_act_(z, nonlinearity)
        return out, self.xp.copy(h), None

    def rnn_layer_backward(
        self, gout: Any, gh: Any, x: Any, h0: Any, w_ih: Any, w_hh: Any, out: Any, nonlinearity: str,
        reverse: bool, need: tuple[bool, ...],
    ) -> tuple[Any, ...]:  # fmt: skip
        """Gradients ``(gx, gh0, gw_ih, gw_hh, gb_ih, gb_hh)`` from those of ``out`` and ``h_T`` (either None)."""
        xp = self.xp
        steps = x.shape[0]
        dz = xp.empty_like(out)
        for t in range(steps) if reverse else range(steps - 1, -1, -1):
            g = gh if gout is None else (gout[t] if gh is None else gout[t] + gh)
            dz[t] = 0.0 if g is None else self._rnn_dz(g, out[t], nonlinearity)
            gh = self._mm(dz[t], w_hh)
        hprev = xp.concatenate([out[1:], h0[None]] if reverse else [h0[None], out[:-1]], axis=0)
        gw_ih, gb = self._layer_weight_grads(dz, x, need[2], need[4] or need[5])
        gw_hh, _ = self._layer_weight_grads(dz, hprev, need[3], False)
        gb_hh = (xp.copy(gb) if need[4] else gb) if need[5] else None
        return xp.matmul(dz, w_ih) if need[0] else None, gh, gw_ih, gw_hh, gb if need[4] else None, gb_hh

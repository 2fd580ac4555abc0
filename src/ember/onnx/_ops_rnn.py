"""ONNX ``RNN``, ``GRU`` and ``LSTM`` as Ember ops: a Python loop over time steps, gradients through it.

The input projection ``X @ W^T + Wb`` of every step is one matmul up front; each step then adds the
recurrent projection and applies the gates (ONNX's orders: LSTM ``i o f c``, GRU ``z r h``). Sequence
lengths shorter than the input mask the outputs to zero and freeze each sequence's state at its end.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import _creation, ops
from .._tensor import Tensor
from ..nn import functional as F

__all__ = ["OPS"]

_ALPHA_BETA = {"Affine": 2, "LeakyRelu": 1, "ThresholdedRelu": 1, "ScaledTanh": 2, "HardSigmoid": 2, "Elu": 1}


def _activation(name: str, alpha: float | None, beta: float | None) -> Callable[[Tensor], Tensor]:
    if name == "Relu":
        return ops.relu
    if name == "Tanh":
        return ops.tanh
    if name == "Sigmoid":
        return ops.sigmoid
    if name == "Affine":
        return lambda x: alpha * x + beta
    if name == "LeakyRelu":
        return lambda x: F.leaky_relu(x, 0.01 if alpha is None else alpha)
    if name == "ThresholdedRelu":
        return lambda x: ops.where(x > (1.0 if alpha is None else alpha), x, x * 0)
    if name == "ScaledTanh":
        return lambda x: alpha * ops.tanh(beta * x)
    if name == "HardSigmoid":
        return lambda x: ops.clamp((0.2 if alpha is None else alpha) * x + (0.5 if beta is None else beta), 0, 1)
    if name == "Elu":
        return lambda x: F.elu(x, 1.0 if alpha is None else alpha)
    if name == "Softsign":
        return F.softsign
    if name == "Softplus":
        return F.softplus
    raise ValueError(f"unknown RNN activation {name!r}")


def _activations(a: Any, defaults: list[str], n_dir: int) -> list[list[Callable[[Tensor], Tensor]]]:
    """Per direction, the activation functions (attribute ``activations`` with its alphas/betas)."""
    names = list(a.get("activations") or defaults * n_dir)
    if len(names) == len(defaults) and n_dir == 2:
        names = names * 2
    alphas, betas = list(a.get("activation_alpha") or []), list(a.get("activation_beta") or [])
    fns = []
    for name in names:
        k = _ALPHA_BETA.get(name, 0)
        al = alphas.pop(0) if k >= 1 and alphas else None
        be = betas.pop(0) if k >= 2 and betas else None
        fns.append(_activation(name, al, be))
    per = len(defaults)
    return [fns[d * per : (d + 1) * per] for d in range(n_dir)]


def _run(a: Any, x: Tensor, w: Tensor, r: Tensor, b: Any, lens: Any, states: list[Any], n_gates: int,
         defaults: list[str], step: Callable[..., tuple[Tensor, ...]]) -> tuple[Any, ...]:  # fmt: skip
    """The shared loop: returns (Y, final state per kind)."""
    layout = a.get("layout", 0)
    if layout:
        x = x.transpose(0, 1)
        states = [s.transpose(0, 1) if isinstance(s, Tensor) else s for s in states]
    seq, batch, _ = x.shape
    hidden = a["hidden_size"]
    direction = a.get("direction", "forward")
    n_dir = 2 if direction == "bidirectional" else 1
    acts = _activations(a, defaults, n_dir)
    clip = a.get("clip")
    steps_of = [int(v) for v in lens.tolist()] if isinstance(lens, Tensor) else [seq] * batch
    ys, finals = [], []
    for d in range(n_dir):
        reverse = direction == "reverse" or d == 1
        wb = b[d, : n_gates * hidden] if b is not None else None
        rb = b[d, n_gates * hidden :] if b is not None else None
        proj = ops.matmul(x, w[d].transpose(0, 1))
        if wb is not None:
            proj = proj + wb
        state = [s[d] if isinstance(s, Tensor) else _creation.zeros(batch, hidden, dtype=x.dtype, device=x.device)
                 for s in states]  # fmt: skip
        outs: list[Any] = [None] * seq
        for k in range(seq):
            t = seq - 1 - k if reverse else k
            new = step(proj[t], state, r[d], rb, acts[d], clip, d)
            active = [t < n for n in steps_of]  # a shorter sequence holds its state (and outputs 0) past its end
            if all(active):
                state = list(new)
                outs[t] = new[0]
            else:
                m = _creation.tensor(active, device=x.device).reshape(batch, 1).to(x.dtype)
                state = [m * n_ + (1 - m) * s for n_, s in zip(new, state)]
                outs[t] = new[0] * m
        ys.append(ops.stack(outs))
        finals.append(state)
    y = ops.stack(ys, 1)  # (seq, dirs, batch, hidden)
    final = [ops.stack([f[k] for f in finals]) for k in range(len(states))]
    if layout:
        y = y.permute(2, 0, 1, 3)
        final = [f.transpose(0, 1) for f in final]
    return (y, *final)


def _clip(x: Tensor, clip: Any) -> Tensor:
    return x if clip is None else ops.clamp(x, -clip, clip)


def rnn(a: Any, x: Tensor, w: Tensor, r: Tensor, b: Any = None, lens: Any = None, h0: Any = None) -> tuple[Any, ...]:
    def step(xp: Tensor, state: list[Tensor], rw: Tensor, rb: Any, act: list[Any], clip: Any, d: int) -> Any:
        z = xp + ops.matmul(state[0], rw.transpose(0, 1))
        if rb is not None:
            z = z + rb
        return (act[0](_clip(z, clip)),)

    return _run(a, x, w, r, b, lens, [h0], 1, ["Tanh"], step)


def gru(a: Any, x: Tensor, w: Tensor, r: Tensor, b: Any = None, lens: Any = None, h0: Any = None) -> tuple[Any, ...]:
    hsz = a["hidden_size"]
    before_reset = a.get("linear_before_reset", 0)

    def step(xp: Tensor, state: list[Tensor], rw: Tensor, rb: Any, act: list[Any], clip: Any, d: int) -> Any:
        h = state[0]
        xz, xr, xh = xp[:, :hsz], xp[:, hsz : 2 * hsz], xp[:, 2 * hsz :]
        rz, rr, rh = rw[:hsz], rw[hsz : 2 * hsz], rw[2 * hsz :]
        bz, br, bh = (rb[:hsz], rb[hsz : 2 * hsz], rb[2 * hsz :]) if rb is not None else (0, 0, 0)
        z = act[0](_clip(xz + ops.matmul(h, rz.transpose(0, 1)) + bz, clip))
        rg = act[0](_clip(xr + ops.matmul(h, rr.transpose(0, 1)) + br, clip))
        if before_reset:
            cand = xh + rg * (ops.matmul(h, rh.transpose(0, 1)) + bh)
        else:
            cand = xh + ops.matmul(rg * h, rh.transpose(0, 1)) + bh
        hc = act[1](_clip(cand, clip))
        return ((1 - z) * hc + z * h,)

    return _run(a, x, w, r, b, lens, [h0], 3, ["Sigmoid", "Tanh"], step)


def lstm(a: Any, x: Tensor, w: Tensor, r: Tensor, b: Any = None, lens: Any = None, h0: Any = None, c0: Any = None,
         p: Any = None) -> tuple[Any, ...]:  # fmt: skip
    hsz = a["hidden_size"]
    couple = a.get("input_forget", 0)

    def step(xp: Tensor, state: list[Tensor], rw: Tensor, rb: Any, act: list[Any], clip: Any, d: int) -> Any:
        h, c = state
        g = xp + ops.matmul(h, rw.transpose(0, 1))
        if rb is not None:
            g = g + rb
        gi, go, gf, gc = g[:, :hsz], g[:, hsz : 2 * hsz], g[:, 2 * hsz : 3 * hsz], g[:, 3 * hsz :]
        pi, po, pf = (p[d, :hsz], p[d, hsz : 2 * hsz], p[d, 2 * hsz :]) if p is not None else (None, None, None)
        i = act[0](_clip(gi + pi * c if pi is not None else gi, clip))
        f = 1 - i if couple else act[0](_clip(gf + pf * c if pf is not None else gf, clip))
        c_new = f * c + i * act[1](_clip(gc, clip))
        o = act[0](_clip(go + po * c_new if po is not None else go, clip))
        return o * act[2](c_new), c_new

    return _run(a, x, w, r, b, lens, [h0, c0], 4, ["Sigmoid", "Tanh", "Tanh"], step)


OPS: dict[str, Callable[..., Any]] = {"RNN": rnn, "GRU": gru, "LSTM": lstm}

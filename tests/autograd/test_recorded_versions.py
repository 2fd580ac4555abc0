"""Nodes whose inputs were already written in place before forward (an optimizer's parameters: version > 0) take
the engine's array fast path only while every input is still at its recorded version; a change after forward is
refused as before, for one- and several-output operators (``Function.apply``'s recording, ``_engine_checks``)."""

import numpy as np
import pytest

import ember
from ember.nn._rnn_ops import lstm_cell


def _param(*shape, seed=0):
    w = ember.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)
    with ember.no_grad():
        w.add_(1.0)  # version 1, as after an optimizer step
    return w


def test_matmul_after_an_in_place_step_gets_its_gradient_and_refuses_a_later_change():
    w = _param(3, 2)
    x = ember.tensor(np.ones((4, 3)), requires_grad=True)
    (x @ w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.full((3, 2), 4.0))
    y = x @ w
    with ember.no_grad():
        w.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()


@pytest.mark.parametrize("changed", [None, "w_hh", "h"])
def test_a_cell_of_several_outputs(changed):
    n, i, h = 2, 3, 4
    ws = [_param(4 * h, i, seed=1), _param(4 * h, h, seed=2), _param(4 * h, seed=3), _param(4 * h, seed=4)]
    x = ember.tensor(np.ones((n, i)))
    hx = _param(n, h, seed=5)
    c = ember.zeros(n, h, dtype=ember.float64)
    h1, c1 = lstm_cell(x, hx, c, *ws)
    loss = h1.sum() + c1.sum()
    if changed is None:
        ref = [w.detach().clone() for w in ws]
        loss.backward()
        for w, r in zip(ws, ref, strict=True):
            assert w.grad is not None and np.all(np.isfinite(w.grad.numpy()))
            np.testing.assert_array_equal(w.detach().numpy(), r.numpy())
        return
    with ember.no_grad():
        (ws[1] if changed == "w_hh" else hx).add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        loss.backward()

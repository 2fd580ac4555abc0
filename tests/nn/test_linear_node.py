"""F.linear as one node: gradients (first and second order) against finite differences and PyTorch,
and a weight gradient laid out like the weight (the optimizer updates it without a copy)."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck


def _r(*shape, seed=0):
    return np.random.default_rng(seed + len(shape)).standard_normal(shape)


@pytest.mark.parametrize("xshape", [(5,), (4, 5), (2, 3, 5)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_gradcheck(xshape, with_bias):
    x = ember.tensor(_r(*xshape), requires_grad=True)
    w = ember.tensor(_r(3, 5, seed=1), requires_grad=True)
    b = ember.tensor(_r(3, seed=2), requires_grad=True) if with_bias else None
    args = [x, w] + ([b] if with_bias else [])

    def fn(*a):
        return F.linear(a[0], a[1], a[2] if with_bias else None)

    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)


def test_linear_matches_torch_float32(torch):
    xa, wa, ba = _r(4, 6).astype("f4"), _r(3, 6, seed=1).astype("f4"), _r(3, seed=2).astype("f4")
    out = {}
    for lib in (ember, torch):
        x, w, b = (lib.tensor(a, requires_grad=True) for a in (xa, wa, ba))
        y = lib.nn.functional.linear(x, w, b)
        (y * y).sum().backward()
        out[lib.__name__] = [np.array(t.tolist()) for t in (y, x.grad, w.grad, b.grad)]
    for e, t in zip(out["ember"], out["torch"]):
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-5)


def test_weight_gradient_is_contiguous():
    layer = ember.nn.Linear(6, 3)
    layer(ember.randn(4, 6)).sum().backward()
    assert layer.weight.grad.is_contiguous()
    assert layer.weight.grad.shape == (3, 6)


def test_input_changed_in_place_after_linear_raises_only_when_needed():
    w = ember.tensor(_r(3, 5), requires_grad=True)
    x = ember.tensor(_r(2, 5)) * 1  # no grad: its value is needed for w's gradient
    y = F.linear(x, w)
    x.add_(1)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()
    w2 = ember.tensor(_r(3, 5))  # no grad: x's gradient needs w's value, x's value is not needed
    xg = ember.tensor(_r(2, 5), requires_grad=True)
    h = xg * 1
    y = F.linear(h, w2)
    h.mul_(2)
    y.sum().backward()
    np.testing.assert_allclose(np.array(xg.grad.tolist()), np.tile(np.array(w2.tolist()).sum(0), (2, 1)))

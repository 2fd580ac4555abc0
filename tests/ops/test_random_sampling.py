"""In-place samplers, normal/poisson/binomial: moments within 6 standard errors over seeded draws, the same seed
giving the same draws, generators accepted, PyTorch's rules for gradients and bad arguments."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.testing import torch_or_none

torch = torch_or_none()
N = 40_000

CASES = {
    "uniform_": (lambda t, g: t.uniform_(2.0, 5.0, generator=g), 3.5, 0.75),
    "normal_": (lambda t, g: t.normal_(1.0, 2.0, generator=g), 1.0, 4.0),
    "exponential_": (lambda t, g: t.exponential_(2.0, generator=g), 0.5, 0.25),
    "geometric_": (lambda t, g: t.geometric_(0.3, generator=g), 1 / 0.3, 0.7 / 0.09),
    "log_normal_": (
        lambda t, g: t.log_normal_(0.0, 0.5, generator=g),
        math.exp(0.125),
        (math.e**0.25 - 1) * math.e**0.25,
    ),
    "bernoulli_": (lambda t, g: t.bernoulli_(0.3, generator=g), 0.3, 0.21),
    "random_(10)": (lambda t, g: t.random_(10, generator=g), 4.5, 99 / 12),
    "random_(3, 7)": (lambda t, g: t.random_(3, 7, generator=g), 4.5, 15 / 12),
    "poisson": (lambda t, g: ember.poisson(t.fill_(3.0), g), 3.0, 3.0),
    "binomial": (lambda t, g: ember.binomial(t.fill_(10.0), ember.full((N,), 0.3), g), 3.0, 2.1),
    "normal(t, t)": (lambda t, g: ember.normal(t.fill_(1.0), ember.full((N,), 2.0), generator=g), 1.0, 4.0),
    "normal(f, t)": (lambda t, g: ember.normal(1.0, ember.full((N,), 2.0), generator=g), 1.0, 4.0),
    "normal(t, f)": (lambda t, g: ember.normal(t.fill_(1.0), 2.0, generator=g), 1.0, 4.0),
    "normal(f, f, size)": (lambda t, g: ember.normal(1.0, 3.0, (N,), generator=g), 1.0, 9.0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_moments_and_reproducibility(name):
    draw, mean, var = CASES[name]
    g = ember.Generator().manual_seed(7)
    x = draw(ember.empty(N, dtype=ember.float64), g).double().numpy()
    se_mean = math.sqrt(var / N)
    assert abs(x.mean() - mean) < 6 * se_mean, (x.mean(), mean)
    assert abs(x.var() - var) < 6 * math.sqrt(2 * var * var / N) + 6 * se_mean * abs(mean) + 0.1 * var, (x.var(), var)
    again = draw(ember.empty(N, dtype=ember.float64), ember.Generator().manual_seed(7)).double().numpy()
    np.testing.assert_array_equal(x, again)


def test_cauchy_median_and_integer_ranges():
    ember.manual_seed(0)
    c = ember.empty(N).cauchy_(2.0, 0.5).numpy()
    assert abs(np.median(c) - 2.0) < 0.05
    i8 = ember.zeros(N, dtype=ember.int8).random_().numpy()
    assert i8.min() >= 0 and i8.max() == 127
    b = ember.zeros(1000, dtype=ember.bool).random_().numpy()
    assert set(b.tolist()) == {False, True}
    f = ember.zeros(N).random_().numpy()
    assert f.min() >= 0 and f.max() <= 2**24 and f.max() > 2**23 and (f == np.floor(f)).all()
    h = ember.empty(N, dtype=ember.float16).uniform_(-1, 1)
    assert h.dtype == ember.float16 and h.numpy().min() >= -1 and h.numpy().max() <= 1


def test_in_place_rules_and_gradients_as_pytorch():
    x = ember.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        x.uniform_()
    with ember.no_grad():
        x.normal_()
    y = x * 2
    v = y._vc[0]
    y.exponential_()
    assert y._vc[0] == v + 1
    m, s = ember.zeros(3, requires_grad=True), ember.ones(3, requires_grad=True)
    ember.normal(m, s).sum().backward()
    assert m.grad.tolist() == [0.0, 0.0, 0.0] and s.grad.tolist() == [0.0, 0.0, 0.0]
    if torch:  # PyTorch: torch.normal is not reparameterised, its gradients are zero
        tm, ts = torch.zeros(3, requires_grad=True), torch.ones(3, requires_grad=True)
        torch.normal(tm, ts).sum().backward()
        assert tm.grad.tolist() == [0.0, 0.0, 0.0] and ts.grad.tolist() == [0.0, 0.0, 0.0]


def test_bad_arguments():
    t = ember.empty(3)
    with pytest.raises(ValueError, match="from <= to"):
        t.uniform_(2, 1)
    with pytest.raises(ValueError, match="std"):
        t.normal_(0, -1)
    with pytest.raises(ValueError, match="lambd"):
        t.exponential_(0)
    with pytest.raises(ValueError, match="p in"):
        t.geometric_(1.5)
    with pytest.raises(ValueError, match="'from' < 'to'"):
        t.random_(5, 5)
    with pytest.raises(TypeError, match=r"ember\.Generator"):
        t.normal_(generator=np.random.default_rng(0))
    with pytest.raises(TypeError, match="floating"):
        ember.zeros(3, dtype=ember.int64).normal_()
    with pytest.raises(RuntimeError, match="cannot broadcast"):
        ember.normal(ember.zeros(2), ember.ones(3))
    with pytest.raises(TypeError, match="size"):
        ember.normal(0.0, 1.0)

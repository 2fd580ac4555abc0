"""ember.autograd.functional against torch.autograd.functional."""

import numpy as np
import pytest

import ember
from ember.autograd import functional as AF
from ember.testing import assert_close

rng = np.random.default_rng(0)
X = rng.standard_normal((3,))
V = rng.standard_normal((3,))
W = rng.standard_normal((2, 3))


def f_e(x):
    return (ember.tensor(W) @ x.tanh()) * x[:2].exp()


def f_t(torch):
    def f(x):
        return (torch.tensor(W) @ x.tanh()) * x[:2].exp()

    return f


def s_e(x):
    return (x.tanh() * x).sum() + (x * x * x).sum()


def s_t(x):
    return (x.tanh() * x).sum() + (x * x * x).sum()


def test_vjp(torch):
    u = rng.standard_normal(2)
    _, g = AF.vjp(f_e, ember.tensor(X), ember.tensor(u))
    _, gt = torch.autograd.functional.vjp(f_t(torch), torch.tensor(X), torch.tensor(u))
    assert_close(g, gt, rtol=1e-10)


def test_jvp(torch):
    _, jv = AF.jvp(f_e, ember.tensor(X), ember.tensor(V))
    _, jvt = torch.autograd.functional.jvp(f_t(torch), torch.tensor(X), torch.tensor(V))
    assert_close(jv, jvt, rtol=1e-10)


def test_jacobian(torch):
    j = AF.jacobian(f_e, ember.tensor(X))
    jt = torch.autograd.functional.jacobian(f_t(torch), torch.tensor(X))
    assert j.shape == (2, 3)
    assert_close(j, jt, rtol=1e-10)


def test_hessian_and_hvp(torch):
    h = AF.hessian(s_e, ember.tensor(X))
    ht = torch.autograd.functional.hessian(s_t, torch.tensor(X))
    assert_close(h, ht, rtol=1e-10)
    _, hv = AF.hvp(s_e, ember.tensor(X), ember.tensor(V))
    assert_close(hv, ht @ torch.tensor(V), rtol=1e-10)


def test_hessian_without_torch_matches_closed_form():
    x = ember.tensor(X)
    h = AF.hessian(lambda t: (t * t * t).sum(), x).numpy()
    np.testing.assert_allclose(h, np.diag(6 * X), rtol=1e-12)


def test_grad_allow_unused():
    a = ember.tensor(1.0, dtype=ember.float64, requires_grad=True)
    b = ember.tensor(2.0, dtype=ember.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="not used"):
        ember.autograd.grad(a * 2, [a, b])
    ga, gb = ember.autograd.grad(a * 2, [a, b], allow_unused=True)
    assert ga.item() == 2.0 and gb is None

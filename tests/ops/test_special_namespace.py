"""``ember.special``: every ``torch.special`` name exists; values and gradients equal PyTorch's (float64 gradcheck and
parity); functions PyTorch gives no derivative give none here either."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.testing import check_op, torch_or_none

torch = torch_or_none()
X = np.array([-2.0, -0.5, 0.3, 1.0, 2.5, 7.0])


def _pair(name, *fixed):
    e = lambda *a: getattr(ember.special, name)(*a, *fixed)
    t = (lambda *a: getattr(torch.special, name)(*a, *fixed)) if torch else None
    return e, t


def test_every_torch_special_name_exists():
    if torch is None:
        pytest.skip("needs torch")
    names = {n for n in dir(torch.special) if not n.startswith("_")} - {"common_args", "multi_dim_common", "torch"}
    missing = sorted(n for n in names if not hasattr(ember.special, n))
    assert not missing, missing


@pytest.mark.parametrize("name", ["i0", "i0e", "i1", "i1e", "erfcx", "log_ndtr", "ndtr"])
def test_differentiable_unary(name):
    e, t = _pair(name)
    check_op(e, X, torch_fn=t, second_order=name in ("i0", "ndtr"))


def test_at_zero_and_domain_edges():
    e, t = _pair("i1")
    check_op(e, np.array([0.0, 1.0]), torch_fn=t, finite_differences=False)
    e, t = _pair("i1e")
    check_op(e, np.array([0.0, -1.0]), torch_fn=t, finite_differences=False)
    e, t = _pair("ndtri")
    check_op(e, np.array([0.01, 0.3, 0.5, 0.99]), torch_fn=t)
    e, t = _pair("entr")
    check_op(e, np.array([0.2, 1.0, 3.0]), torch_fn=t)
    check_op(e, np.array([0.0, -1.0, 0.5]), torch_fn=t, finite_differences=False)


def test_binary():
    e, t = _pair("xlog1py")
    check_op(e, np.array([0.5, 1.0, 2.0]), np.array([0.5, -0.5, 3.0]), torch_fn=t)
    check_op(e, np.array([0.0, 0.0, 2.0]), np.array([-1.0, 0.5, 3.0]), torch_fn=t, finite_differences=False)
    q = np.array([1.0, 2.0, 0.5])
    ez = lambda q: ember.special.zeta(ember.tensor([2.0, 3.5, 4.0], dtype=q.dtype), q)
    tz = (lambda q: torch.special.zeta(torch.tensor([2.0, 3.5, 4.0], dtype=q.dtype), q)) if torch else None
    check_op(ez, q, torch_fn=tz)
    eg = lambda x: ember.special.gammaincc(ember.tensor([2.0, 3.5, 4.0], dtype=x.dtype), x)
    tg = (lambda x: torch.special.gammaincc(torch.tensor([2.0, 3.5, 4.0], dtype=x.dtype), x)) if torch else None
    check_op(eg, q, torch_fn=tg)
    a = ember.tensor([2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="zeta"):
        ember.special.zeta(a, ember.tensor([1.0])).sum().backward()
    with pytest.raises(RuntimeError, match="igammac"):
        ember.special.gammaincc(a, ember.tensor([1.0])).sum().backward()


NOGRAD = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "spherical_bessel_j0",
]  # fmt: skip


@pytest.mark.parametrize("name", NOGRAD)
def test_functions_without_gradient(name):
    x = ember.tensor(np.abs(X) if "_k" in name or "_y" in name else X, requires_grad=True)
    y = getattr(ember.special, name)(x)
    assert not y.requires_grad  # PyTorch: no grad_fn
    if torch:  # SciPy and PyTorch's Cephes approximations differ by ~3e-8 near zeros
        want = getattr(torch.special, name)(torch.tensor(x.detach().numpy())).numpy()
        np.testing.assert_allclose(y.numpy(), want, rtol=2e-7, atol=1e-7)


POLY = [
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
    "legendre_polynomial_p",
]  # fmt: skip


@pytest.mark.parametrize("name", POLY)
def test_polynomials(name):
    x = np.linspace(-1.0, 1.0, 7)
    fn = getattr(ember.special, name)
    for n in (0, 1, 2, 5, 9, -1, ember.tensor([0, 1, 2, 3, 4, 5, 9])):
        got = fn(ember.tensor(x), n)
        assert not got.requires_grad
        if torch:
            tn = torch.tensor(n.numpy()) if isinstance(n, ember.Tensor) else n
            want = getattr(torch.special, name)(torch.tensor(x), tn).numpy()
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-10, err_msg=f"{name} n={n}")


@pytest.mark.parametrize(
    "name", ["expit", "psi", "gammaln", "logit", "sinc", "exp2", "expm1", "log1p", "erfinv", "erf", "erfc"]
)
def test_aliases_match(name):
    e, t = _pair(name)
    check_op(e, np.array([0.2, 0.4, 0.7]), torch_fn=t, rtol=1e-6 if name == "psi" else None)


def test_reductions_and_multigammaln():
    for name in ("softmax", "log_softmax", "logsumexp"):
        e, t = _pair(name, 0)
        check_op(e, np.array([[0.2, 0.4], [0.7, -1.0]]), torch_fn=t)
    e, t = _pair("multigammaln", 3)
    check_op(e, np.array([2.0, 3.5]), torch_fn=t)
    eg = lambda x: ember.special.gammainc(ember.tensor([2.0, 3.0], dtype=x.dtype), x)
    tg = (lambda x: torch.special.gammainc(torch.tensor([2.0, 3.0], dtype=x.dtype), x)) if torch else None
    check_op(eg, np.array([0.5, 2.0]), torch_fn=tg)

"""lgamma/digamma/polygamma, Gamma sampling gradients, cholesky and solve_triangular: gradcheck + PyTorch parity."""

import numpy as np
import pytest

import ember
from ember.backends import NumpyBackend
from ember.testing import check_op, torch_or_none

rng = np.random.default_rng(3)
NP = NumpyBackend()  # the reference special kernels (scipy.special when installed)


def _host_only() -> NumpyBackend:
    """A NumPy backend without SciPy: its special kernels run the host fallbacks."""
    be = NumpyBackend()
    be.__dict__["special"] = None
    return be


POS = rng.uniform(0.2, 6.0, (3, 4))


@pytest.mark.parametrize("name", ["lgamma", "digamma"])
def test_gamma_family_parity(name):
    check_op(getattr(ember, name), POS, torch_fn=lambda x: getattr(__import__("torch"), name)(x), second_order=True)
    x = ember.tensor(POS)
    assert np.allclose(getattr(x, name)().numpy(), getattr(ember, name)(x).numpy())


@pytest.mark.parametrize("n", [1, 2, 3])
def test_polygamma_parity(n):
    check_op(lambda x: ember.polygamma(n, x), POS, torch_fn=lambda x: __import__("torch").polygamma(n, x), rtol=2e-4)


def test_mvlgamma_parity():
    x = rng.uniform(1.6, 5.0, (4,))
    check_op(lambda t: ember.mvlgamma(t, 3), x, torch_fn=lambda t: __import__("torch").mvlgamma(t, 3))
    # below (p - 1) / 2 PyTorch 2.13 computes the same sum of lgammas (inf at a pole); p < 1 is refused
    below = np.array([0.2, 0.0, 0.5, 1.0, -0.3])
    torch = torch_or_none()
    if torch is not None:
        want = torch.mvlgamma(torch.tensor(below), 3).numpy()
        np.testing.assert_allclose(ember.mvlgamma(ember.tensor(below), 3).numpy(), want, rtol=1e-12)
    with pytest.raises(RuntimeError, match="mvlgamma"):
        ember.mvlgamma(ember.tensor([2.0]), 0)


def test_pure_numpy_fallback_matches_scipy():
    sp = pytest.importorskip("scipy.special")
    x = np.concatenate([np.geomspace(1e-3, 200, 40), [-0.5, -2.3, -7.9]])
    want = [sp.gammaln(x), sp.digamma(x)] + [sp.polygamma(n, x[:40]) for n in (1, 2, 3)]
    be = _host_only()
    got = [be.lgamma(x), be.digamma(x)] + [be.polygamma(n, x[:40]) for n in (1, 2, 3)]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


def test_standard_gamma_grad_matches_inverse_cdf_derivative():
    """d sample / d alpha with the CDF value fixed, against finite differences of SciPy's inverse CDF."""
    sp = pytest.importorskip("scipy.special")
    alpha = np.array([0.05, 0.3, 1.0, 2.5, 9.0, 60.0, 800.0])
    for u in (0.01, 0.3, 0.7, 0.995):
        x = sp.gammaincinv(alpha, u)
        h = 1e-5 * alpha
        fd = (sp.gammaincinv(alpha + h, u) - sp.gammaincinv(alpha - h, u)) / (2 * h)
        np.testing.assert_allclose(NP.standard_gamma_grad(x, alpha), fd, rtol=1e-6)


def test_standard_gamma_grad_matches_torch():
    torch = torch_or_none()
    if torch is None:
        pytest.skip("torch not installed")
    torch.manual_seed(0)
    alpha = torch.tensor([0.2, 0.7, 1.0, 3.0, 20.0, 500.0], dtype=torch.float64).repeat(50)
    x = torch._standard_gamma(alpha)
    mine = NP.standard_gamma_grad(x.numpy(), alpha.numpy())
    # torch's kernel is an approximation (relative error ~1e-4); ours is the exact series
    np.testing.assert_allclose(mine, torch._standard_gamma_grad(alpha, x).numpy(), rtol=2e-3)


def test_standard_gamma_sample_gradient_flows():
    ember.manual_seed(0)
    a = ember.tensor([0.5, 2.0, 7.0], dtype=ember.float64, requires_grad=True)
    z = ember.ops._random._standard_gamma(a)
    z.sum().backward()
    want = NP.standard_gamma_grad(z.detach().numpy(), a.detach().numpy())
    np.testing.assert_allclose(a.grad.numpy(), want)


def _spd(*batch, n=3):
    a = rng.standard_normal((*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def test_cholesky_parity():
    torch = __import__("torch") if torch_or_none() else None
    A = _spd(2)

    def sym(fn):  # the gradient of a symmetric input is symmetrised (as PyTorch's)
        return lambda a: fn((a + a.transpose(-2, -1)) / 2)

    check_op(sym(ember.linalg.cholesky), A, torch_fn=sym(torch.linalg.cholesky) if torch else None, second_order=True)
    up = ember.linalg.cholesky(ember.tensor(A), upper=True)
    np.testing.assert_allclose((up.transpose(-2, -1) @ up).numpy(), A, rtol=1e-10)
    with pytest.raises(ValueError, match="positive-definite"):
        ember.linalg.cholesky(ember.tensor([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(RuntimeError, match="square"):
        ember.linalg.cholesky(ember.zeros(2, 3))


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular_parity(upper, left, unit):
    torch = __import__("torch") if torch_or_none() else None
    A = rng.standard_normal((2, 3, 3)) + 4 * np.eye(3)
    B = rng.standard_normal((2, 3, 2) if left else (2, 2, 3))

    def f(lib):
        return lambda a, b: lib.linalg.solve_triangular(a, b, upper=upper, left=left, unitriangular=unit)

    check_op(f(ember), A, B, torch_fn=f(torch) if torch else None)


def test_solve_triangular_broadcasts_batch():
    A = ember.tensor(np.tril(rng.standard_normal((3, 3))) + 3 * np.eye(3))
    B = ember.tensor(rng.standard_normal((4, 3, 2)))
    X = ember.linalg.solve_triangular(A, B, upper=False)
    np.testing.assert_allclose((A @ X).numpy(), B.numpy(), atol=1e-10)


def test_igamma_parity_and_gradients():
    a = rng.uniform(0.3, 5.0, (2, 3))
    x = rng.uniform(0.05, 8.0, (2, 3))
    # torch has no derivative in ``a``: compare the gradient in x with torch, check both by finite differences
    check_op(
        lambda x_: ember.igamma(ember.tensor(a).to(x_.dtype), x_),
        x,
        torch_fn=lambda x_: __import__("torch").igamma(__import__("torch").tensor(a).to(x_.dtype), x_),
    )
    check_op(ember.igamma, a, x)


def test_gammainc_fallback_matches_scipy():
    sp = pytest.importorskip("scipy.special")
    a = np.array([0.05, 0.5, 1.0, 3.0, 30.0, 300.0, 2.0])
    x = np.array([0.01, 2.0, 0.5, 7.0, 25.0, 330.0, 0.0])
    np.testing.assert_allclose(_host_only().igamma(a, x), sp.gammainc(a, x), rtol=1e-10, atol=1e-15)

"""LU/LDL, the *_ex variants, Cholesky solves, lstsq, Householder products, matrix_exp and the small linalg helpers:
float64 gradcheck and forward/backward parity with PyTorch (same code under both libraries)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.testing import check_op, torch_or_none

torch = torch_or_none()
# the same code under both libraries uses torch's deprecated spellings (triangular_solve, lu_solve)
pytestmark = pytest.mark.filterwarnings("ignore:torch.*is deprecated:UserWarning")
rng = np.random.default_rng(1)


def _both(fn):
    return (lambda *a: fn(ember, *a)), ((lambda *a: fn(torch, *a)) if torch else None)


def _spd(*batch, n=4):
    a = rng.standard_normal((*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("part", ["all", "L", "U", "factor"])
def test_lu(shape, part):
    def f(L, a):
        if part == "factor":
            return L.linalg.lu_factor(a)
        P, Lo, U = L.linalg.lu(a)
        return {"all": (P, Lo, U), "L": Lo, "U": U}[part]

    e, t = _both(f)
    check_op(e, rng.standard_normal(shape), torch_fn=t)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve(left, adjoint):
    def f(L, a, b):
        LU, piv = L.linalg.lu_factor(a)
        return L.linalg.lu_solve(LU, piv, b if left else b.mT, left=left, adjoint=adjoint)

    e, t = _both(f)
    check_op(e, rng.standard_normal((2, 4, 4)), rng.standard_normal((2, 4, 3)), torch_fn=t)
    e = lambda a, b: ember.lu_solve(b, *ember.linalg.lu_factor(a))  # torch.lu_solve: deprecated, warns
    t = (lambda a, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), b)) if torch else None
    check_op(e, rng.standard_normal((4, 4)), rng.standard_normal((4, 2)), torch_fn=t)


def test_lu_unpack_and_singular():
    e, t = _both(lambda L, a: tuple(L.lu_unpack(*L.linalg.lu_factor(a))))
    check_op(e, rng.standard_normal((2, 3, 3)), torch_fn=t)
    sing = np.array([[0.0, 1.0], [0.0, 2.0]])
    with pytest.raises(RuntimeError, match="is zero"):
        ember.linalg.lu_factor(ember.tensor(sing))
    _, piv, info = ember.linalg.lu_factor_ex(ember.tensor(np.stack([sing, np.eye(2)])))
    assert info.tolist() == [1, 0] and piv.dtype == ember.int32
    if torch:
        np.testing.assert_array_equal(
            info.numpy(), torch.linalg.lu_factor_ex(torch.tensor(np.stack([sing, np.eye(2)]))).info
        )


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse(upper):
    Lc = np.linalg.cholesky(_spd(2))
    Lc = np.swapaxes(Lc, -1, -2) if upper else Lc
    e, t = _both(lambda L, b, f: L.cholesky_solve(b, f, upper))
    check_op(e, rng.standard_normal((2, 4, 3)), Lc, torch_fn=t, finite_differences=False)
    e, t = _both(lambda L, f: L.cholesky_inverse(f, upper))
    check_op(e, Lc[0], torch_fn=t, finite_differences=False)


def test_cholesky_solve_gradient_is_pytorchs_full_factor_gradient():
    # PyTorch's gradient to L is not restricted to L's triangle: finite differences of the triangle-reading forward
    # would differ, so check the closed form through its symmetric part, which both agree on
    b = ember.tensor(rng.standard_normal((4, 2)), requires_grad=True)
    Lc = ember.tensor(np.linalg.cholesky(_spd()), requires_grad=True)
    ember.cholesky_solve(b, Lc).sum().backward()
    assert np.abs(np.triu(Lc.grad.numpy(), 1)).max() > 0  # not triangular, as PyTorch's
    ember.autograd.gradcheck(lambda b: ember.cholesky_solve(b, Lc.detach()), [b])


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("upper", [False, True])
def test_triangular_solve(transpose, upper):
    e, t = _both(lambda L, b, a: tuple(L.triangular_solve(b, a, upper=upper, transpose=transpose)))
    a = rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)
    check_op(e, rng.standard_normal((2, 4, 3)), a, torch_fn=t)


@pytest.mark.parametrize(("a_shape", "b_shape"), [((5, 3), (5, 2)), ((3, 5), (3, 2)), ((2, 6, 4), (2, 6, 3))])
@pytest.mark.parametrize("driver", [None, "gelsd"])
def test_lstsq(a_shape, b_shape, driver):
    e, t = _both(lambda L, a, b: L.linalg.lstsq(a, b, driver=driver).solution)
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    check_op(e, a, b, torch_fn=t)
    if torch:
        er = ember.linalg.lstsq(ember.tensor(a), ember.tensor(b), driver=driver)
        tr = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
        for name in ("residuals", "rank", "singular_values"):
            got, want = getattr(er, name), getattr(tr, name)
            assert got.shape == tuple(want.shape), name
            np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-10, err_msg=name)


def test_householder_product_and_matrix_exp():
    e, t = _both(lambda L, a, tau: L.linalg.householder_product(a, tau))
    check_op(e, rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 2)), torch_fn=t)
    e, t = _both(lambda L, a: L.linalg.matrix_exp(a))
    check_op(e, rng.standard_normal((2, 4, 4)), torch_fn=t, second_order=True)
    big = rng.standard_normal((3, 3)) * 20  # scaling and squaring
    e(ember.tensor(big))
    if torch:
        np.testing.assert_allclose(e(ember.tensor(big)).numpy(), t(torch.tensor(big)).numpy(), rtol=1e-9)


def test_tensor_helpers():
    T = rng.standard_normal((6, 4, 3, 8))
    e, t = _both(lambda L, a: L.linalg.tensorinv(a, 2))
    check_op(e, T, torch_fn=t, rtol=1e-3, atol=1e-4)
    e, t = _both(lambda L, a, b: L.linalg.tensorsolve(a, b))
    check_op(e, T, rng.standard_normal((6, 4)), torch_fn=t, rtol=1e-3, atol=1e-4)
    x = rng.standard_normal((2, 4))
    for n in (None, 2, 6):
        e, t = _both(lambda L, a, n=n: L.linalg.vander(a, N=n))
        check_op(e, x, torch_fn=t)
    e, t = _both(lambda L, a, b: L.linalg.vecdot(a, b, dim=-1))
    check_op(e, x, rng.standard_normal((3, 1, 4)), torch_fn=t)
    e, t = _both(lambda L, a: L.linalg.diagonal(a, offset=1))
    check_op(e, rng.standard_normal((2, 3, 4)), torch_fn=t)


def test_ex_variants_report_info():
    bad = np.stack([_spd(), -np.eye(4), np.diag([1.0, 2, -1, 3])])
    e, t = _both(lambda L, a: tuple(L.linalg.cholesky_ex(a)))
    check_op(e, _spd(2), torch_fn=t, finite_differences=False)
    got = ember.linalg.cholesky_ex(ember.tensor(bad))
    assert got.info.tolist() == [0, 1, 3]
    sing = np.stack([rng.standard_normal((4, 4)), np.zeros((4, 4))])
    inv, info = ember.linalg.inv_ex(ember.tensor(sing))
    assert info.tolist()[1] > 0 and info.tolist()[0] == 0 and np.isnan(inv.numpy()[1]).all()
    e, t = _both(lambda L, a: L.linalg.inv_ex(a).inverse)
    check_op(e, rng.standard_normal((2, 3, 3)), torch_fn=t)
    e, t = _both(lambda L, a, b: L.linalg.solve_ex(a, b).result)
    check_op(e, rng.standard_normal((2, 3, 3)), rng.standard_normal((2, 3, 2)), torch_fn=t)
    if torch:
        assert torch.linalg.cholesky_ex(torch.tensor(bad)).info.tolist() == [0, 1, 3]
        with pytest.raises(RuntimeError):
            ember.linalg.inv_ex(ember.tensor(sing), check_errors=True)


def test_ldl():
    pytest.importorskip("scipy") if ember.backends.get_backend().name == "numpy" else None
    s = rng.standard_normal((2, 4, 4))
    s = s + np.swapaxes(s, -1, -2)
    b = rng.standard_normal((2, 4, 3))
    LD, piv = ember.linalg.ldl_factor(ember.tensor(s))
    X = ember.linalg.ldl_solve(LD, piv, ember.tensor(b))
    np.testing.assert_allclose(s @ X.numpy(), b, atol=1e-10)
    if torch:
        tLD, tpiv = torch.linalg.ldl_factor(torch.tensor(s))
        np.testing.assert_allclose(LD.numpy(), tLD.numpy(), atol=1e-12)
        np.testing.assert_array_equal(piv.numpy(), tpiv.numpy())
    assert ember.linalg.ldl_factor_ex(ember.tensor(s)).info.tolist() == [0, 0]


@pytest.mark.parametrize("hermitian", [True, False])
def test_ldl_of_complex_matrices(hermitian):
    """Complex Hermitian matrices need LAPACK's Hermitian routines (hetrf/hetrs), complex symmetric ones the
    symmetric ones (sytrf/sytrs): the solve must reproduce B and the factor PyTorch's."""
    pytest.importorskip("scipy") if ember.backends.get_backend().name == "numpy" else None
    a = rng.standard_normal((3, 5, 5)) + 1j * rng.standard_normal((3, 5, 5))
    a = a + (np.conj(np.swapaxes(a, -1, -2)) if hermitian else np.swapaxes(a, -1, -2))
    b = rng.standard_normal((3, 5, 2)) + 1j * rng.standard_normal((3, 5, 2))
    LD, piv = ember.linalg.ldl_factor(ember.tensor(a), hermitian=hermitian)
    X = ember.linalg.ldl_solve(LD, piv, ember.tensor(b), hermitian=hermitian)
    np.testing.assert_allclose(a @ X.numpy(), b, atol=1e-10)
    if torch:
        tLD, tpiv = torch.linalg.ldl_factor(torch.tensor(a), hermitian=hermitian)
        np.testing.assert_allclose(LD.numpy(), tLD.numpy(), atol=1e-12)
        np.testing.assert_array_equal(piv.numpy(), tpiv.numpy())


def test_bad_shapes_are_named():
    with pytest.raises(RuntimeError, match=r"lu_solve.*do not match"):
        LU, piv = ember.linalg.lu_factor(ember.eye(3))
        ember.linalg.lu_solve(LU, piv, ember.zeros(4, 2))
    with pytest.raises(RuntimeError, match="tensorinv"):
        ember.linalg.tensorinv(ember.zeros(2, 3, 4), 1)
    with pytest.raises(ValueError, match="driver"):
        ember.linalg.lstsq(ember.eye(2), ember.eye(2), driver="nope")
    with pytest.raises(ValueError, match="greater than 1"):
        ember.linalg.vander(ember.ones(3), N=1)
    with pytest.raises(RuntimeError, match="square"):
        ember.linalg.matrix_exp(ember.zeros(2, 3))


def _solve_cases(lib):
    rng = np.random.RandomState(0)
    out = []
    for ashape, bshape in [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3, 4)), ((3, 3), (2, 3, 1)),
                           ((2, 1, 3, 3), (4, 3, 2)), ((2, 3, 3), (2, 3))]:  # fmt: skip
        a = lib.tensor(rng.randn(*ashape) + 3 * np.eye(ashape[-1]), requires_grad=True)
        b = lib.tensor(rng.randn(*bshape), requires_grad=True)
        x = lib.linalg.solve(a, b)
        (x * x).sum().backward()
        out += [x.detach().numpy(), a.grad.numpy(), b.grad.numpy()]
    return out


def test_solve_broadcasts_and_differentiates_as_torch():
    torch = pytest.importorskip("torch")
    for g, w in zip(_solve_cases(ember), _solve_cases(torch), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


def test_solve_is_a_factorisation_not_an_inverse():
    """On the 10x10 Hilbert matrix (condition ~1.6e13) an LU solve is off by ~1e-4; the inverse times B was off by
    ~8e-3, as is what ``inv(A) @ b`` gives here."""
    h = 1.0 / (np.arange(10)[:, None] + np.arange(10)[None, :] + 1.0)
    x = ember.linalg.solve(ember.tensor(h), ember.tensor(h @ np.ones(10))).numpy()
    assert np.abs(x - 1).max() < 1e-3

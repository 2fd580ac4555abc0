"""SVD, QR, eigh, norms, cond, rank and pinv: float64 gradcheck and forward/backward parity with PyTorch.

Singular and eigen vectors are defined up to sign, so gradients are checked through functions that do not depend
on the sign (reconstructions, squares, absolute values), as PyTorch's own tests do.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.testing import check_op, torch_or_none

torch = torch_or_none()
rng = np.random.default_rng(0)
SHAPES = [(4, 4), (5, 3), (3, 5), (2, 4, 3)]


def _both(fn):
    """``fn(lib, *tensors)`` as an Ember function and a torch function."""
    return (lambda *a: fn(ember, *a)), ((lambda *a: fn(torch, *a)) if torch else None)


def _svd_invariant(L, a, full):
    U, S, Vh = L.linalg.svd(a, full_matrices=full)
    k = S.shape[-1]
    recon = U[..., :k] @ L.diag_embed(S) @ Vh[..., :k, :]
    vabs = Vh[..., :k, :].abs().sum(-1).sum(-1)[..., None, None]
    return recon * S.sum(-1)[..., None, None] + (U[..., :k] * U[..., :k]).sum(-1)[..., None] + vabs


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("full", [False, True])
def test_svd(shape, full):
    e, t = _both(lambda L, a: _svd_invariant(L, a, full))
    check_op(e, rng.standard_normal(shape), torch_fn=t, name=f"svd{shape}")


@pytest.mark.parametrize("shape", SHAPES)
def test_svdvals_and_torch_svd(shape):
    e, t = _both(lambda L, a: L.linalg.svdvals(a))
    check_op(e, rng.standard_normal(shape), torch_fn=t, second_order=True)
    a = rng.standard_normal(shape)
    U, S, V = ember.svd(ember.tensor(a))
    np.testing.assert_allclose((U @ ember.diag_embed(S) @ V.mT).numpy(), a, atol=1e-12)
    if torch:
        tU, _, tV = torch.svd(torch.tensor(a), some=False)
        eU, _, eV = ember.svd(ember.tensor(a), some=False)
        assert eU.shape == tuple(tU.shape) and eV.shape == tuple(tV.shape)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("part", ["Q", "R", "both"])
def test_qr(shape, part):
    def f(L, a):
        Q, R = L.linalg.qr(a)
        return {"Q": Q, "R": R, "both": Q @ R * 2 + R.sum()}[part]

    e, t = _both(f)
    check_op(e, rng.standard_normal(shape), torch_fn=t)


def test_qr_modes_and_refusals():
    a = ember.tensor(rng.standard_normal((5, 3)), requires_grad=True)
    Q, R = ember.linalg.qr(a, mode="complete")
    assert Q.shape == (5, 5) and R.shape == (5, 3)
    np.testing.assert_allclose((Q @ R).detach().numpy(), a.detach().numpy(), atol=1e-12)
    with pytest.raises(RuntimeError, match="mode='complete' and nrows > ncols"):
        Q.sum().backward()
    Q, R = ember.linalg.qr(a, mode="r")
    assert Q.shape == (0,)
    with pytest.raises(RuntimeError, match="mode='r'"):
        R.sum().backward()
    with pytest.raises(ValueError, match="mode"):
        ember.linalg.qr(a, mode="full")
    Q, R = ember.qr(ember.tensor(rng.standard_normal((5, 3))), some=False)
    assert Q.shape == (5, 5)


def _sym(a):
    return a + a.transpose(-2, -1)


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(shape, uplo):
    def f(L, a):
        w, v = L.linalg.eigh(_sym(a), UPLO=uplo)
        return w[..., None] * v.abs() + (v * v).sum(-2)[..., None]

    e, t = _both(f)
    check_op(e, rng.standard_normal(shape), torch_fn=t)
    e, t = _both(lambda L, a: L.linalg.eigvalsh(_sym(a), UPLO=uplo))
    check_op(e, rng.standard_normal(shape), torch_fn=t, second_order=True)


def test_eigh_reads_one_triangle_and_checks_shapes():
    a = rng.standard_normal((3, 3))
    lo = ember.linalg.eigvalsh(ember.tensor(a)).numpy()
    np.testing.assert_allclose(lo, np.linalg.eigvalsh(np.tril(a) + np.tril(a, -1).T), atol=1e-12)
    with pytest.raises(RuntimeError, match="square"):
        ember.linalg.eigh(ember.zeros(2, 3))
    with pytest.raises(ValueError, match="UPLO"):
        ember.linalg.eigh(ember.eye(2), UPLO="X")


ORDS = [2, 1, 0, 3, 1.5, 0.5, -1, math.inf, -math.inf]


@pytest.mark.parametrize("ord", ORDS)
@pytest.mark.parametrize("dim", [None, 1, (0, 1)])
def test_vector_norm(ord, dim):
    e, t = _both(lambda L, a: L.linalg.vector_norm(a, ord, dim))
    check_op(e, rng.standard_normal((3, 4)), torch_fn=t, finite_differences=ord != 0)
    x = rng.standard_normal((3, 4))
    x[0, 1] = 0.0
    x[1] = 0.0  # zeros and a zero row: PyTorch's masked gradients, never NaN
    check_op(e, x, torch_fn=t, finite_differences=False)


def test_vector_norm_ties_split_the_gradient():
    x = ember.tensor([[1.0, -3.0, 3.0], [2.0, 0.0, -1.0]], requires_grad=True)
    ember.linalg.vector_norm(x, math.inf, 1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, -0.5, 0.5], [1, 0, 0]])


@pytest.mark.parametrize("ord", ["fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf])
def test_matrix_norm(ord):
    e, t = _both(lambda L, a: L.linalg.matrix_norm(a, ord))
    check_op(e, rng.standard_normal((2, 4, 3)), torch_fn=t)
    e, t = _both(lambda L, a: L.linalg.matrix_norm(a, ord, (0, 2), True))
    check_op(e, rng.standard_normal((4, 2, 3)), torch_fn=t)


@pytest.mark.parametrize("ord", [None, 2, -2, 1, -1, math.inf, -math.inf, "fro", "nuc"])
def test_cond(ord):
    a = rng.standard_normal((2, 3, 3))
    # torch 2.13's own cond backward fails for p other than None/±2 (it writes into a tensor it saved): compare
    # the values with PyTorch and check Ember's gradient by finite differences alone
    two = ord in (None, 2, -2)
    e, t = _both(lambda L, m: L.linalg.cond(m, ord))
    check_op(e, a, torch_fn=t if two else None)
    if torch and not two:
        np.testing.assert_allclose(e(ember.tensor(a)).numpy(), t(torch.tensor(a)).numpy(), rtol=1e-10)


def test_linalg_norm_dispatch():
    a = rng.standard_normal((2, 4, 3))
    for ord, dim in [(None, None), (None, (1, 2)), ("nuc", (1, 2)), (3, 2), (None, 0)]:
        e, t = _both(lambda L, m, o=ord, d=dim: L.linalg.norm(m, o, d))
        check_op(e, a, torch_fn=t)
    for ord in (None, 2, "fro", math.inf):
        e, t = _both(lambda L, m, o=ord: L.linalg.norm(m, o))
        check_op(e, a[0], torch_fn=t)
    with pytest.raises(RuntimeError, match="1-D or 2-D"):
        ember.linalg.norm(ember.tensor(a), 2)


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 3, 3)])
def test_pinv(shape):
    e, t = _both(lambda L, a: L.linalg.pinv(a))
    check_op(e, rng.standard_normal(shape), torch_fn=t, second_order=shape == (4, 3))


def test_pinv_rank_deficient_and_hermitian():
    r = rng.standard_normal((4, 1)) @ rng.standard_normal((1, 3))  # rank 1: the normal equations are singular
    e, t = _both(lambda L, a: L.linalg.pinv(a))
    check_op(e, r, torch_fn=t, finite_differences=False)
    p = ember.linalg.pinv(ember.tensor(r)).numpy()
    np.testing.assert_allclose(p, np.linalg.pinv(r), atol=1e-12)
    h = rng.standard_normal((2, 3, 3))
    h = h + np.swapaxes(h, -1, -2)
    e, t = _both(lambda L, a: L.linalg.pinv(a, hermitian=True))
    check_op(e, h, torch_fn=t, finite_differences=False)
    e, t = _both(lambda L, a: L.linalg.pinv(a, atol=0.5, rtol=0.1))
    check_op(e, np.diag([3.0, 1.0, 0.4]), torch_fn=t, finite_differences=False)
    e, t = _both(lambda L, a: L.pinverse(a, rcond=0.2))
    check_op(e, np.diag([3.0, 1.0, 0.4]), torch_fn=t, finite_differences=False)


def test_matrix_rank():
    r = rng.standard_normal((4, 1)) @ rng.standard_normal((1, 3))
    batch = np.stack([r, r * 0, np.eye(4, 3)])
    cases = [dict(), dict(atol=0.5, rtol=0.1), dict(hermitian=True)]
    for kw in cases:
        x = batch if not kw.get("hermitian") else np.stack([r @ r.T, np.eye(4)])
        got = ember.linalg.matrix_rank(ember.tensor(x), **kw)
        assert got.dtype == ember.int64
        if torch:
            np.testing.assert_array_equal(got.numpy(), torch.linalg.matrix_rank(torch.tensor(x), **kw).numpy())


def _eig_invariant(L, a):
    """Eigenvalues and the eigenvectors' moduli: independent of each eigenvector's phase."""
    w, v = L.linalg.eig(a)
    return L.cat([w.real, w.imag, v.abs().flatten(-2)], -1)


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3)])
@pytest.mark.parametrize("kind", ["real", "complex"])
def test_eig(shape, kind):
    """Real and complex inputs (real ones have complex-conjugate eigenvalue pairs): values and gradients as PyTorch."""
    a = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if kind == "complex" else 0)
    e, t = _both(_eig_invariant)
    check_op(e, a, torch_fn=t, name=f"eig{shape}{kind}")
    e, t = _both(lambda L, a: L.cat([L.linalg.eigvals(a).real, L.linalg.eigvals(a).imag], -1))
    check_op(e, a, torch_fn=t, name=f"eigvals{shape}{kind}")


def test_eig_results_and_phase_dependent_loss():
    a = ember.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    w, v = ember.linalg.eig(a)
    assert w.dtype == ember.complex128 and v.dtype == ember.complex128
    lhs, rhs = (a.detach().to(ember.complex128) @ v).detach().numpy(), (v * w[None, :]).detach().numpy()
    np.testing.assert_allclose(lhs, rhs, atol=1e-12)
    assert ember.linalg.eig(ember.eye(2, dtype=ember.float32)).eigenvalues.dtype == ember.complex64
    z = ember.tensor(rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3)), requires_grad=True)
    with pytest.raises(ValueError, match="e\\^\\{i phi\\}"):  # the loss reads the eigenvectors' phase
        ember.linalg.eig(z).eigenvectors.real.sum().backward()
    with pytest.raises(ValueError, match="square"):
        ember.linalg.eig(ember.ones(2, 3))

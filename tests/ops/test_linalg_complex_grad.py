"""Gradients through complex inputs of the linear-algebra operators (Cholesky, Svd, Det, Slogdet, Eigh, Inv, Lu,
Qr, Solve and what is built on them): a complex128 finite-difference gradcheck, and forward and backward parity
with PyTorch in complex128 and complex64 (``check_op``: PyTorch's conjugate Wirtinger convention, ``x.grad``).

Singular and eigen vectors of complex matrices are defined up to a phase per vector, so their gradients are checked
through losses that do not depend on it (as PyTorch's OpInfo wrappers do); a loss that does raises a RuntimeError
in both libraries. Inputs of the Hermitian decompositions go through ``A A^H + n I`` or ``A + A^H`` (PyTorch's
``gradcheck_wrapper_hermitian_input``): their gradient is defined on Hermitian matrices only.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.testing import check_op, torch_or_none

torch = torch_or_none()
rng = np.random.default_rng(15)


def c(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _pd(L, a):
    """A Hermitian positive-definite matrix from any square ``a``."""
    n = a.shape[-1]
    return a @ a.mH + n * L.eye(n, dtype=a.dtype)


def _herm(L, a):
    return a + a.mH


def _svd_invariant(L, a, full=False):
    """Phase-invariant functions of the SVD: the reconstruction, S, |U|, |Vh| and U's column products."""
    U, S, Vh = L.linalg.svd(a, full_matrices=full)
    k = S.shape[-1]
    U, Vh = U[..., :k], Vh[..., :k, :]
    recon = U @ L.diag_embed(S.to(U.dtype)) @ Vh
    gram = (U[..., :1, :] * U.conj()).sum(-1)  # sum_j U_0j conj(U_ij): each column's phase cancels
    return recon * S.sum(-1)[..., None, None], U.abs(), Vh.abs(), gram


def _eigh_invariant(L, a, uplo="L"):
    w, v = L.linalg.eigh(_herm(L, a), UPLO=uplo)
    return w, v.abs(), v @ L.diag_embed(w.to(v.dtype)) @ v.mH


def _lu_factors(L, a):
    _, lo, up = L.linalg.lu(a)
    return lo, up


def _torch_svd(L, a, some=True):
    U, S, V = L.svd(a, some=some)
    k = S.shape[-1]
    return U[..., :k] @ L.diag_embed(S.to(U.dtype)) @ V[..., :k].mH, S, V[..., :k].abs()


def _svd_lowrank(L, a):
    U, S, V = L.svd_lowrank(a, q=min(a.shape[-2:]))
    return U @ L.diag_embed(S.to(U.dtype)) @ V.mH, S


def _row_scaled(L, a):
    """``a`` with its first row multiplied by 2i in place (through a view of a clone)."""
    b = a.clone()
    b[..., 0, :].mul_(2j)
    return b


def _dominant(*shape: int) -> np.ndarray:
    """A matrix whose diagonal dominates: LU pivots on it whatever the pivoting rule (|z| or |re| + |im|)."""
    return c(*shape) + 6 * np.eye(shape[-2], shape[-1])


#: name -> (fn(lib, *inputs), inputs): each an operator's complex gradient, batched where the operator allows
CASES = {
    "inv": (lambda L, a: L.linalg.inv(a), [c(2, 3, 3)]),
    "inverse": (lambda L, a: L.inverse(a), [c(3, 3)]),
    "inv_ex": (lambda L, a: L.linalg.inv_ex(a).inverse, [c(2, 3, 3)]),
    "matrix_power_neg": (lambda L, a: L.linalg.matrix_power(a, -3), [c(2, 3, 3)]),
    "tensorinv": (lambda L, a: L.linalg.tensorinv(a, ind=1), [c(6, 2, 3)]),
    "det": (lambda L, a: L.linalg.det(a), [c(2, 3, 3)]),
    "torch_det": (lambda L, a: L.det(a), [c(4, 4)]),
    "slogdet": (lambda L, a: tuple(L.linalg.slogdet(a)), [c(2, 3, 3)]),
    "slogdet_sign": (lambda L, a: L.linalg.slogdet(a).sign, [c(3, 3)]),
    "logdet": (lambda L, a: L.logdet(a), [c(2, 3, 3)]),
    "solve": (lambda L, a, b: L.linalg.solve(a, b), [c(2, 3, 3), c(2, 3, 2)]),
    "solve_vector": (lambda L, a, b: L.linalg.solve(a, b), [c(3, 3), c(3)]),
    "solve_broadcast": (lambda L, a, b: L.linalg.solve(a, b), [c(3, 3), c(2, 3, 2)]),
    "solve_right": (lambda L, a, b: L.linalg.solve(a, b, left=False), [c(3, 3), c(2, 3)]),
    "solve_ex": (lambda L, a, b: L.linalg.solve_ex(a, b).result, [c(2, 3, 3), c(2, 3, 1)]),
    "tensorsolve": (lambda L, a, b: L.linalg.tensorsolve(a, b), [c(2, 3, 6), c(2, 3)]),
    "cholesky": (lambda L, a: L.linalg.cholesky(_pd(L, a)), [c(2, 3, 3)]),
    "cholesky_upper": (lambda L, a: L.linalg.cholesky(_pd(L, a), upper=True), [c(3, 3)]),
    "cholesky_ex": (lambda L, a: L.linalg.cholesky_ex(_pd(L, a)).L, [c(2, 3, 3)]),
    "cholesky_solve": (lambda L, b, a: L.cholesky_solve(b, L.linalg.cholesky(_pd(L, a))), [c(3, 2), c(3, 3)]),
    "qr_tall": (lambda L, a: tuple(L.linalg.qr(a)), [c(2, 5, 3)]),
    "qr_square": (lambda L, a: tuple(L.linalg.qr(a)), [c(3, 3)]),
    "qr_wide": (lambda L, a: tuple(L.linalg.qr(a)), [c(2, 3, 5)]),
    "qr_complete_square": (lambda L, a: tuple(L.linalg.qr(a, mode="complete")), [c(4, 4)]),
    "eigh": (lambda L, a: _eigh_invariant(L, a), [c(2, 3, 3)]),
    "eigh_upper": (lambda L, a: _eigh_invariant(L, a, "U"), [c(4, 4)]),
    "eigvalsh": (lambda L, a: L.linalg.eigvalsh(_herm(L, a)), [c(2, 3, 3)]),
    "svd_square": (lambda L, a: _svd_invariant(L, a), [c(2, 3, 3)]),
    "svd_tall": (lambda L, a: _svd_invariant(L, a), [c(5, 3)]),
    "svd_wide": (lambda L, a: _svd_invariant(L, a), [c(2, 3, 5)]),
    "svd_full": (lambda L, a: _svd_invariant(L, a, True), [c(3, 5)]),
    "svdvals": (lambda L, a: L.linalg.svdvals(a), [c(2, 4, 3)]),
    "torch_svd": (lambda L, a: _torch_svd(L, a), [c(2, 4, 3)]),
    "torch_svd_some_false": (lambda L, a: _torch_svd(L, a, False), [c(3, 4)]),
    "svd_lowrank": (lambda L, a: _svd_lowrank(L, a), [c(4, 3)]),
    "cond": (lambda L, a: L.linalg.cond(a), [c(2, 3, 3)]),
    "cond_-2": (lambda L, a: L.linalg.cond(a, -2), [c(3, 3)]),
    "matrix_norm_nuc": (lambda L, a: L.linalg.matrix_norm(a, "nuc"), [c(2, 3, 4)]),
    "matrix_norm_2": (lambda L, a: L.linalg.matrix_norm(a, 2), [c(4, 3)]),
    "norm_nuc": (lambda L, a: L.norm(a, "nuc"), [c(3, 4)]),
    "pinv_hermitian": (lambda L, a: L.linalg.pinv(_herm(L, a), hermitian=True), [c(3, 3)]),
    "lu_square": (_lu_factors, [_dominant(2, 3, 3)]),
    "lu_tall": (_lu_factors, [_dominant(5, 3)]),
    "lu_wide": (_lu_factors, [_dominant(2, 3, 5)]),
    "lu_factor": (lambda L, a: L.linalg.lu_factor(a).LU, [_dominant(2, 3, 3)]),
    "lu_factor_ex": (lambda L, a: L.linalg.lu_factor_ex(a).LU, [_dominant(4, 3)]),
    "lu_solve": (lambda L, a, b: L.linalg.lu_solve(*L.linalg.lu_factor(a), b), [_dominant(3, 3), c(3, 2)]),
    "lu_solve_adjoint": (
        lambda L, a, b: L.linalg.lu_solve(*L.linalg.lu_factor(a), b, adjoint=True, left=False),
        [_dominant(3, 3), c(2, 3)]),
    "householder_product": (lambda L, a, tau: L.linalg.householder_product(a, tau), [c(2, 4, 3), c(2, 2)]),
    "lu_unpack": (lambda L, a: L.lu_unpack(*L.linalg.lu_factor(a))[1:], [_dominant(2, 3, 3)]),
    # PyTorch's older top-level names
    "torch_cholesky_upper": (lambda L, a: L.cholesky(_pd(L, a), upper=True), [c(2, 3, 3)]),
    "torch_lu": (lambda L, a: L.lu(a)[0], [_dominant(2, 3, 3)]),
    "pinverse": (lambda L, a: L.pinverse(a), [c(3, 4)]),
    "torch_matrix_power_neg": (lambda L, a: L.matrix_power(a, -2), [c(3, 3)]),
    # views and in-place writes before the operator
    "inv_of_transpose": (lambda L, a: L.linalg.inv(a.mT), [c(2, 3, 3)]),
    "det_of_row_scaled": (lambda L, a: L.linalg.det(_row_scaled(L, a)), [c(2, 3, 3)]),
    "slogdet_of_slice": (lambda L, a: tuple(L.linalg.slogdet(a[..., 1:, :3])), [c(2, 4, 4)]),
    "solve_of_views": (lambda L, a, b: L.linalg.solve(a.mT, b[..., 1:]), [c(3, 3), c(3, 3)]),
    "cholesky_of_transpose": (lambda L, a: L.linalg.cholesky(_pd(L, a.mT)), [c(3, 3)]),
    "qr_of_slice": (lambda L, a: tuple(L.linalg.qr(a[1:])), [c(5, 3)]),
    "svd_of_row_scaled": (lambda L, a: _svd_invariant(L, _row_scaled(L, a)), [c(3, 4)]),
    "eigh_of_slice": (lambda L, a: _eigh_invariant(L, a[..., :3, 1:]), [c(2, 3, 4)]),
    "lu_of_transpose": (lambda L, a: _lu_factors(L, a.mT), [_dominant(3, 3)]),
}  # fmt: skip
#: cases whose complex64 run needs looser tolerances than check_op's float32 ones (eigen/singular vectors)
LOOSE32 = {"eigh", "eigh_upper", "svd_square", "svd_tall", "svd_wide", "svd_full", "torch_svd",
           "torch_svd_some_false", "svd_lowrank", "cond", "cond_-2", "pinv_hermitian", "matrix_power_neg"}  # fmt: skip


def _fns(fn):
    return (lambda *a: fn(ember, *a)), ((lambda *a: fn(torch, *a)) if torch else None)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.filterwarnings("ignore:torch.(cholesky|lu) is deprecated:UserWarning")  # (PyTorch's deprecations)
def test_complex_gradients_match_pytorch_and_finite_differences(name):
    fn, vals = CASES[name]
    e, t = _fns(fn)
    check_op(e, *vals, torch_fn=t, dtypes=("float64",), name=name)  # gradcheck (complex128) and complex128 parity
    tol = (1e-3, 1e-4) if name in LOOSE32 else (None, None)
    check_op(e, *vals, torch_fn=t, dtypes=("float32",), rtol=tol[0], atol=tol[1], finite_differences=False, name=name)


SECOND_ORDER = {
    "inv": lambda L, a: L.linalg.inv(a),
    "det": lambda L, a: L.linalg.det(a),
    "slogdet": lambda L, a: tuple(L.linalg.slogdet(a)),
    "solve": lambda L, a: L.linalg.solve(a, a[..., :1] * 2),
    "cholesky": lambda L, a: L.linalg.cholesky(_pd(L, a)),
    "svdvals": lambda L, a: L.linalg.svdvals(a),
    "eigvalsh": lambda L, a: L.linalg.eigvalsh(_herm(L, a)),
    "qr": lambda L, a: tuple(L.linalg.qr(a)),
    "lu": lambda L, a: _lu_factors(L, a + 6 * L.eye(3, dtype=a.dtype)),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_complex_second_order_gradients(name):
    """The backward rules are Tensor compositions of complex-safe operators, so they differentiate again."""
    fn = SECOND_ORDER[name]
    x = ember.tensor(c(3, 3), requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda t: fn(ember, t), [x])


@pytest.mark.parametrize(
    "loss",
    [
        lambda L, a: L.linalg.svd(a, full_matrices=False).U.real.sum(),
        lambda L, a: L.linalg.svd(a).Vh.imag.sum(),
        lambda L, a: L.svd(a).V[..., 0].real.sum(),
        lambda L, a: L.linalg.svd(a).U.abs().sum() + L.linalg.svd(a).U[..., 1, 0].real.sum(),
    ],
)
def test_svd_loss_depending_on_the_phase_raises_as_in_pytorch(loss):
    a = c(2, 3, 4)
    for L in (ember, torch) if torch else (ember,):
        x = L.tensor(a, requires_grad=True)
        with pytest.raises(RuntimeError, match=r"svd_backward: The singular vectors in the complex case .*ill-defined"):
            loss(L, x).backward()


def test_eigh_loss_depending_on_the_phase_raises_as_in_pytorch():
    a = c(3, 3)
    a = a + a.conj().T
    for L in (ember, torch) if torch else (ember,):
        x = L.tensor(a, requires_grad=True)
        with pytest.raises(RuntimeError, match=r"linalg_eigh_backward: The eigenvectors in the complex case .*"):
            L.linalg.eigh(x).eigenvectors.real.sum().backward()
        L.linalg.eigh(x).eigenvectors.abs().sum().backward()  # invariant: no error
        assert x.grad is not None


def test_phase_invariant_products_of_singular_vectors_get_pytorch_gradients():
    """``U Vh`` (the polar factor) does not depend on the phases: the diagonal terms of the backward cancel."""
    a = c(2, 4, 4)
    got = {}
    for L in (ember, torch) if torch else (ember,):
        x = L.tensor(a, requires_grad=True)
        U, _, Vh = L.linalg.svd(x)
        (U @ Vh).real.sum().backward()
        got[L.__name__] = np.asarray(x.grad.numpy())
    if torch:
        np.testing.assert_allclose(got["ember"], got["torch"], rtol=1e-9, atol=1e-11)
    xe = ember.tensor(a, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: (lambda U, S, Vh: U @ Vh)(*ember.linalg.svd(t)), [xe])


def test_complex_slogdet_sign_is_differentiable_and_torch_svd_returns_v():
    a = c(3, 4)
    s = ember.linalg.slogdet(ember.tensor(a[:, :3], requires_grad=True))
    assert s.sign.requires_grad and not s.logabsdet.dtype.is_complex
    assert not ember.linalg.slogdet(ember.tensor(a.real[:, :3], requires_grad=True)).sign.requires_grad
    U, S, V = ember.svd(ember.tensor(a))
    np.testing.assert_allclose((U @ ember.diag_embed(S.to(U.dtype)) @ V.mH).numpy(), a, atol=1e-12)  # V, not V^T
    for some in (True, False):
        U, S, V = ember.svd(ember.tensor(a), some=some, compute_uv=False)
        assert U.shape == (3, 3) and V.shape == (4, 4) and not U.numpy().any() and not V.numpy().any()
        if torch:
            tU, _, tV = torch.svd(torch.tensor(a), some=some, compute_uv=False)
            assert tuple(tU.shape) == U.shape and tuple(tV.shape) == V.shape


@pytest.mark.parametrize(
    "op",
    [
        lambda L, a: L.linalg.inv(a),
        lambda L, a: L.linalg.det(a),
        lambda L, a: L.linalg.slogdet(a).sign,
        lambda L, a: L.linalg.cholesky(_pd(L, a)),
        lambda L, a: L.linalg.svd(a).S,
        lambda L, a: L.linalg.eigh(_herm(L, a)).eigenvalues,
        lambda L, a: L.linalg.qr(a).R,
        lambda L, a: L.linalg.solve(a, a),
    ],
)
def test_output_modified_in_place_refuses_backward_as_in_pytorch(op):
    """The operators that save their outputs for backward refuse one changed in place (PyTorch: its version check)."""
    a = c(3, 3)
    for L in (ember, torch) if torch else (ember,):
        x = L.tensor(a, requires_grad=True)
        y = op(L, x)
        y.mul_(2)
        with pytest.raises(RuntimeError, match=r"modified by an inplace operation|modified in place"):
            y.abs().sum().backward()


def test_cond_fro_gradient_passes_gradcheck():
    """PyTorch 2.13's backward of ``linalg.cond(A, 'fro')`` fails (an in-place change of inv_ex's output it saved),
    for real and complex A; Ember's gradient is checked against finite differences only."""
    for a in (c(2, 3, 3), c(3, 3).real):
        x = ember.tensor(a, requires_grad=True)
        assert ember.autograd.gradcheck(lambda t: ember.linalg.cond(t, "fro"), [x])


def test_det_gradient_of_singular_matrices_is_the_cofactor_matrix():
    """A singular matrix has no inverse, but its determinant's gradient is the (conjugate) cofactor matrix, as in
    PyTorch (its SVD branch): real and complex, rank n-1 and n-2, and a batch mixing singular and regular ones.

    PyTorch 2.13 gives zeros for the complex ``[[1, 2, 3], [2, 4, 6], [1, 0, 1]]`` (its own gradcheck fails there);
    that case is checked against finite differences only."""
    low = rng.standard_normal((3, 2)) @ rng.standard_normal((2, 3))
    mats = [
        np.array([[1.0, 2, 3], [2, 4, 6], [1, 0, 1]]),
        c(3, 2) @ c(2, 3),
        c(4, 2) @ c(2, 4),
        np.stack([low, rng.standard_normal((3, 3))]),
        np.stack([low + 0j, c(3, 3)]),
    ]
    for m in mats:
        x = ember.tensor(m, requires_grad=True)
        assert ember.autograd.gradcheck(lambda t: ember.linalg.det(t), [x])
        if torch is None:
            continue
        gy = np.full(m.shape[:-2], 1 + 0.5j if m.dtype.kind == "c" else 1.0)
        (want,) = torch.autograd.grad(torch.linalg.det(t := torch.tensor(m, requires_grad=True)), [t], torch.tensor(gy))
        (got,) = ember.autograd.grad(ember.linalg.det(x), [x], ember.tensor(gy))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-9, atol=1e-12)
    x = ember.tensor(mats[0] + 0j, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: ember.linalg.det(t), [x])


COMPILED = {
    "det": lambda x: ember.linalg.det(x).abs(),
    "slogdet": lambda x: ember.linalg.slogdet(x).logabsdet + ember.linalg.slogdet(x).sign.real,
    "inv_solve": lambda x: ember.linalg.inv(x).abs().sum() + ember.linalg.solve(x, x[:, :1]).abs().sum(),
    "qr_cholesky_lu": lambda x: (
        ember.linalg.qr(x).Q.abs().sum()
        + ember.linalg.cholesky(_pd(ember, x)).abs().sum()
        + ember.linalg.lu(x).U.abs().sum()
    ),
    "svd": lambda x: (lambda U, S, Vh: (U @ Vh).real.sum() + S.sum())(*ember.linalg.svd(x)),
}


@pytest.mark.parametrize("name", sorted(COMPILED))
@pytest.mark.parametrize("kind", ["real", "complex"])
@pytest.mark.filterwarnings("ignore:ember.compile.*runs eagerly:UserWarning")  # (svd's phase check reads a value)
def test_compiled_gradients_equal_eager_ones(name, kind):
    """``ember.compile`` replays give eager's gradients bit for bit (slogdet of one matrix: NumPy's namedtuple of
    scalars used to break the replay with a TypeError)."""
    fn = COMPILED[name]
    compiled = ember.compile(fn)
    for _ in range(3):
        a = c(3, 3) if kind == "complex" else c(3, 3).real
        xe, xc = ember.tensor(a, requires_grad=True), ember.tensor(a, requires_grad=True)
        fn(xe).backward()
        compiled(xc).backward()
        np.testing.assert_array_equal(xc.grad.numpy(), xe.grad.numpy())

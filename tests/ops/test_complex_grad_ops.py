"""Operators that joined ``ember.autograd.COMPLEX_GRAD_OPS`` after op_db's complex sweep: complex values and
gradients (PyTorch's conjugate Wirtinger convention) against PyTorch, and Ember's complex gradcheck.

op_db's first complex samples of ``cholesky_solve``/``cholesky_inverse`` are empty matrices, so these cases use
full ones: they found that both computed ``(L L^T)^-1`` instead of ``(L L^H)^-1`` for complex factors."""

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

rng = np.random.default_rng(25)


def c(*shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


_A = c(3, 3)
_L = np.linalg.cholesky(_A @ _A.conj().T + 3 * np.eye(3))
_T = np.triu(c(3, 3)) + 3 * np.eye(3)
_LU, _PIV = (t.numpy() for t in torch.linalg.lu_factor(torch.tensor(_A + np.eye(3))))

CASES = {
    "as_strided": (lambda L, x: L.as_strided(x, (2, 2), (1, 2), 1), [c(9)]),
    "sum_to_size": (lambda L, x: x.sum_to_size(1, 3), [c(2, 3)]),
    "sinc": (lambda L, x: L.sinc(x), [c(4)]),
    "unfold": (lambda L, x: L.nn.functional.unfold(x, 2, padding=1), [c(1, 2, 3, 3)]),
    "cholesky_solve": (lambda L, b, f: L.cholesky_solve(b, L.tril(f)), [c(3, 2), _L]),
    "cholesky_solve_upper": (lambda L, b, f: L.cholesky_solve(b, L.triu(f), upper=True), [c(2, 3, 2), _L.conj().T]),
    "cholesky_inverse": (lambda L, f: L.cholesky_inverse(L.tril(f)), [_L]),
    "cholesky_inverse_upper": (lambda L, f: L.cholesky_inverse(L.triu(f), upper=True), [_L.conj().T]),
    "solve_triangular": (lambda L, t, b: L.linalg.solve_triangular(t, b, upper=True), [_T, c(3, 2)]),
    "solve_triangular_right": (lambda L, t, b: L.linalg.solve_triangular(t, b, upper=True, left=False), [_T, c(2, 3)]),
    "solve_triangular_unit": (
        lambda L, t, b: L.linalg.solve_triangular(t, b, upper=False, unitriangular=True), [_T.T, c(3, 2)]),
    "triangular_solve_transpose": (
        lambda L, b, t: L.triangular_solve(b, t, upper=True, transpose=True)[0], [c(3, 2), _T]),
    "lu_solve": (lambda L, b, lu: L.lu_solve(b, lu, L.tensor(_PIV, dtype=L.int32)), [c(3, 2), _LU]),
    "matrix_exp": (lambda L, x: L.linalg.matrix_exp(x), [c(2, 3, 3) * 0.5]),
    "pinv_wide": (lambda L, x: L.linalg.pinv(x), [c(3, 4)]),
    "pinv_tall": (lambda L, x: L.linalg.pinv(x), [c(4, 3)]),
    "conv1d_groups": (
        lambda L, x, w, b: L.nn.functional.conv1d(x, w, b, padding=2, stride=2, dilation=2, groups=2),
        [c(2, 4, 7), c(6, 2, 3), c(6)]),
    "conv2d_real_weight": (lambda L, x, w: L.nn.functional.conv2d(x, w.to(x.dtype), padding=1),
                           [c(1, 2, 4, 4), np.ones((3, 2, 3, 3)) * 0.5]),
    "conv_transpose3d": (
        lambda L, x, w: L.nn.functional.conv_transpose3d(x, w, stride=(1, 2, 1), output_padding=(0, 1, 0)),
        [c(1, 2, 3, 3, 2), c(2, 2, 2, 2, 2)]),
    "lstsq": (lambda L, a, b: L.linalg.lstsq(a, b).solution, [c(4, 3), c(4, 2)]),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_complex_values_and_gradients_match_pytorch(name):
    fn, vals = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch.triangular_solve/lu_solve are deprecated in torch
        ts = [torch.tensor(v, requires_grad=True) for v in vals]
        want = fn(torch, *ts)
    r = np.random.default_rng(1)
    gy = r.standard_normal(tuple(want.shape)) + 1j * r.standard_normal(tuple(want.shape))
    want_g = torch.autograd.grad([want], ts, [torch.tensor(gy)], allow_unused=True)
    xs = [ember.tensor(v, requires_grad=True) for v in vals]
    got = fn(ember, *xs)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    got_g = ember.autograd.grad([got], xs, [ember.tensor(gy)], allow_unused=True)
    for g, w in zip(got_g, want_g, strict=True):
        if w is None:
            assert g is None or not g.numpy().any()
            continue
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-9, atol=1e-12)
    assert ember.autograd.gradcheck(lambda *a: fn(ember, *a), xs)

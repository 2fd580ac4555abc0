"""Calls PyTorch computes and Ember refused (op_db samples, gopdb17): lu_factor of empty matrices, arange with bool
bounds, normal(layout=), fractional_max_pool3d of an empty batch, grid_sample's bicubic mode; and ormqr, missing
before; each beside torch."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

from .test_opdb_sweep_fixes import same  # noqa: E402 - after the skip, as the module they come from


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 3), (0, 0), (2, 3, 0), (0, 3, 3), (2, 0, 4, 4)])
def test_lu_factor_of_empty_matrices(shape):
    same(lambda L: tuple(L.linalg.lu_factor(L.zeros(shape, dtype=L.float64))))
    same(lambda L: tuple(L.linalg.lu_factor_ex(L.zeros(shape, dtype=L.float64))))


@pytest.mark.parametrize(
    "args", [(True,), (False, 3), (0, True), (True, 5, 2), (0, 4, True)], ids=["end", "start", "end2", "s", "step"]
)
def test_arange_takes_bools_as_numbers(args):
    same(lambda L: L.arange(*args))
    same(lambda L: L.arange(*args, dtype=L.float32))


def test_normal_takes_layout():
    for L in (torch, ember):
        L.manual_seed(0)
        assert tuple(L.normal(0.0, 1.0, (2, 3), layout=L.strided).shape) == (2, 3)
    with pytest.raises(RuntimeError):
        ember.normal(0.0, 1.0, (2,), layout=ember.sparse_coo)


@pytest.mark.parametrize("sp", [2, 3])
def test_fractional_max_pool_of_an_empty_batch(sp):
    def run(L):
        x = L.zeros((0, 2) + (5,) * sp, requires_grad=True)
        f = getattr(L.nn.functional, f"fractional_max_pool{sp}d")
        v, i = f(x, 2, output_size=3, return_indices=True, _random_samples=L.zeros(0, 2, sp))
        (g,) = L.autograd.grad(v.sum(), [x])
        return v, i, g

    same(run)


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_bicubic(padding_mode, align_corners):
    rng = np.random.default_rng(0)
    x, g = rng.normal(size=(2, 3, 5, 6)), rng.uniform(-1.3, 1.3, size=(2, 4, 3, 2))
    g[0, 0, 0], g[0, 0, 1] = (1.0, -1.0), (0.0, 0.2)  # (on the border, on a pixel)
    w = rng.normal(size=(2, 3, 4, 3))

    def run(L):
        X, G = L.tensor(x, requires_grad=True), L.tensor(g, requires_grad=True)
        y = L.nn.functional.grid_sample(X, G, mode="bicubic", padding_mode=padding_mode, align_corners=align_corners)
        return (y, *L.autograd.grad((y * L.tensor(w)).sum(), [X, G]))

    same(run, rtol=1e-9, atol=1e-10)
    xs = [ember.tensor(x[:1, :1, :4, :4], requires_grad=True), ember.tensor(g[:1, :2, :2] * 0.9, requires_grad=True)]
    fn = lambda a, b: ember.nn.functional.grid_sample(
        a, b, mode="bicubic", padding_mode=padding_mode, align_corners=align_corners
    )
    assert ember.autograd.gradcheck(fn, xs)


def test_grid_sample_bicubic_needs_a_4d_input():
    for L in (torch, ember):
        with pytest.raises(RuntimeError):
            L.nn.functional.grid_sample(
                L.zeros(1, 1, 2, 2, 2), L.zeros(1, 1, 1, 1, 3), mode="bicubic", align_corners=False
            )


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize(
    "shapes", [((5, 3), (5, 2), True), ((5, 3), (2, 5), False), ((2, 4, 4), (2, 4, 3), True), ((3, 5), (4, 3), False)]
)
def test_ormqr(shapes, transpose):
    (sa, sc, left), rng = shapes, np.random.default_rng(3)
    a, tau = (t.numpy() for t in torch.geqrf(torch.tensor(rng.normal(size=sa))))
    c = rng.normal(size=sc)

    def run(L):
        A, T, C = (L.tensor(v, requires_grad=True) for v in (a, tau, c))
        y = L.ormqr(A, T, C, left, transpose)
        wt = L.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)))
        return (y, *L.autograd.grad((y * wt).sum(), [A, T, C]))

    same(run, rtol=1e-9, atol=1e-10)
    xs = [ember.tensor(v, requires_grad=True) for v in (a, tau, c)]
    assert ember.autograd.gradcheck(lambda x, t, o: ember.ormqr(x, t, o, left, transpose), xs)


def test_ormqr_shape_checks():
    for L in (torch, ember):
        for args in [
            (L.ones(5, 3), L.ones(4), L.ones(5, 2)),
            (L.ones(5, 3), L.ones(3), L.ones(4, 2)),
            (L.ones(3), L.ones(3), L.ones(3, 2)),
        ]:
            with pytest.raises(RuntimeError):
                L.ormqr(*args)


@pytest.mark.parametrize("minlength", [0, 6])
@pytest.mark.parametrize("weights", [None, [0.5, 1.0, 2.0, 0.25, 3.0]], ids=["counts", "weights"])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_bincount_of_small_integer_dtypes(dtype, weights, minlength):
    """(torch backend: a uint8 input reached torch's index_put_ as a mask: IndexError)"""
    same(
        lambda L: L.bincount(
            L.tensor([0, 1, 1, 0, 3], dtype=getattr(L, dtype)),
            None if weights is None else L.tensor(weights),
            minlength,
        )
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda L: L.zeros(0, 3).argmax(-1),
        lambda L: L.zeros(0, 3).argmin(1, keepdim=True),
        lambda L: L.zeros(2, 0, 3).argmax(2),
        lambda L: L.zeros(()).argmax(0),
    ],
    ids=["argmax", "argmin_keepdim", "middle_empty", "0d"],
)
def test_argmax_over_a_nonempty_dim_of_an_empty_tensor(call):
    """(refused: any empty tensor was, not only an empty reduced dim; lu_factor of an empty batch hit it)"""
    same(call)


@pytest.mark.parametrize(
    "shape_dim",
    [((5, 1, 5), -2), ((1, 3), 0), ((0, 3), 0), ((3, 0, 2), 1), ((2, 2, 2), 1)],
    ids=["size1_dim", "one_row", "empty_dim", "empty_selected", "plain"],
)
def test_unique_consecutive_with_dim(shape_dim):
    """(a dim of size 1 crashed inside NumPy: a reshape with -1 and no rows)"""
    shape, dim = shape_dim
    x = (np.arange(int(np.prod(shape))) // 3 % 2).reshape(shape).astype(np.float64)
    same(lambda L: tuple(L.unique_consecutive(L.tensor(x), return_inverse=True, return_counts=True, dim=dim)))


@pytest.mark.parametrize("shape_dim", [((0, 3), 1), ((0, 0), 0), ((2, 0, 0), 1)])
def test_unique_consecutive_refuses_empty_slices(shape_dim):
    for L in (torch, ember):
        with pytest.raises(RuntimeError):
            L.unique_consecutive(L.zeros(shape_dim[0]), dim=shape_dim[1])

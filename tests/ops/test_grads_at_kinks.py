"""Gradients (first and second order) at zeros, ties and branch points, beside torch: where Ember's came out nan or
another one-sided derivative than PyTorch's (std of a constant slice, clamp's tied bounds, smooth_l1/huber at
d = 0, atan2 at the origin, elu/celu/selu at 0, hardswish at +-3, logit at 0 and 1). Found by running op_db's
samples with their inputs set to zeros and constants (gopdb17)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

from .test_opdb_sweep_fixes import same  # noqa: E402 - after the skip, as the module they come from


def _grads(L, fn, values, second=True):
    """``fn``'s value, its gradients (create_graph) with respect to each input and (``second``) the gradient of
    ``sum <w, g>``."""
    xs = [L.tensor(np.asarray(v, dtype=np.float64), requires_grad=True) for v in values]
    y = fn(L, *xs)
    gs = L.autograd.grad(y.sum(), xs, create_graph=True, allow_unused=True)
    gs = [L.zeros_like(x) if g is None else g for x, g in zip(xs, gs, strict=True)]
    w = [L.tensor(np.cos(np.arange(x.numel())).reshape(tuple(x.shape)) + 1.5) for x in xs]
    terms = [(g * wi).sum() for g, wi in zip(gs, w, strict=True) if g.requires_grad]
    if not second:
        return (y.detach(), *[g.detach() for g in gs])
    if not terms:
        return (y.detach(), *[g.detach() for g in gs], *[L.zeros_like(x) for x in xs])
    hs = L.autograd.grad(sum(terms), xs, allow_unused=True)
    return (y.detach(), *[g.detach() for g in gs], *[L.zeros_like(x) if h is None else h for x, h in zip(xs, hs)])


# -- std of a constant slice: sqrt's inf derivative at 0 times var's zero gradient gave nan; PyTorch's is 0 ----------
STD_CASES = {
    "std": lambda L, x: L.std(x),
    "std_dim": lambda L, x: L.std(x.reshape(2, 3), dim=1),
    "std_keepdim": lambda L, x: L.std(x.reshape(2, 3), dim=0, keepdim=True),
    "std_correction0": lambda L, x: L.std(x, correction=0),
    "std_unbiased_false": lambda L, x: L.std(x.reshape(3, 2), 1, False),
    "std_mean": lambda L, x: L.std_mean(x.reshape(2, 3), dim=1)[0],
    "Tensor.std": lambda L, x: x.reshape(2, 3).std(1),
}


@pytest.mark.parametrize(
    "values", [[1.5] * 6, [0.0] * 6, [1.0, 1.0, 1.0, 2.0, -1.0, 4.0]], ids=["const", "zeros", "mix"]
)
@pytest.mark.parametrize("name", sorted(STD_CASES))
def test_std_gradient_of_a_constant_slice_is_zero(name, values):
    same(lambda L: _grads(L, STD_CASES[name], [values]))


def test_masked_std_gradient_of_a_constant_slice_is_torch_std_s():
    """torch.masked.std (a prototype) gives nan here, torch.std 0: Ember's masked.std is std's (0)."""
    x = [2.0, 2.0, 2.0, 5.0]
    m = [True, True, True, False]

    def run(L):
        if L is ember:
            return _grads(L, lambda L, t: L.masked.std(t, 0, mask=L.tensor(m)), [x])
        return _grads(L, lambda L, t: L.std(t[:3]), [x])

    same(run)


# -- clamp with tensor bounds: PyTorch gives a tie to the input (lo <= x <= hi), lo where x < lo < hi, hi where
# x > hi or hi < lo (Ember split ties in halves, as maximum/minimum) --------------------------------------------------
CLAMP_X = [0.0, 1.0, 2.0, 0.5, -1.0, 3.0, 1.0, 0.25]
CLAMP_LO = [0.0, 1.0, 1.0, 0.0, 0.0, 2.0, 2.0, 0.25]
CLAMP_HI = [0.0, 2.0, 1.0, 0.5, 1.0, 2.0, 0.0, 0.5]
CLAMP_CASES = {
    "both": (lambda L, x, lo, hi: L.clamp(x, lo, hi), [CLAMP_X, CLAMP_LO, CLAMP_HI]),
    "min": (lambda L, x, lo: L.clamp(x, min=lo), [CLAMP_X, CLAMP_LO]),
    "max": (lambda L, x, hi: L.clamp(x, max=hi), [CLAMP_X, CLAMP_HI]),
    "clamp_min": (lambda L, x, lo: L.clamp_min(x, lo), [CLAMP_X, CLAMP_LO]),
    "clamp_max": (lambda L, x, hi: L.clamp_max(x, hi), [CLAMP_X, CLAMP_HI]),
    "method": (lambda L, x, lo, hi: x.clamp(lo, hi), [CLAMP_X, CLAMP_LO, CLAMP_HI]),
    "broadcast_bound": (
        lambda L, x, lo: L.clamp(x.reshape(2, 4), lo.reshape(1, 4)),
        [CLAMP_X, [0.0, 1.0, 1.0, 0.5]],
    ),
    "broadcast_input": (lambda L, x, hi: L.clamp(x[:4], max=hi.reshape(2, 4)), [CLAMP_X, CLAMP_HI]),
}


@pytest.mark.parametrize("name", sorted(CLAMP_CASES))
def test_clamp_with_tensor_bounds_gives_ties_pytorchs_gradients(name):
    fn, values = CLAMP_CASES[name]
    same(lambda L: _grads(L, fn, values))


@pytest.mark.parametrize(
    "dtypes", [("int64", "float32"), ("float32", "float64"), ("int32", "int64"), ("float64", "int64")]
)
def test_clamp_with_tensor_bounds_promotes_as_pytorch(dtypes):
    x, b = dtypes
    same(
        lambda L: (
            L.clamp(L.tensor([0, 3, 7], dtype=getattr(L, x)), L.tensor([1, 1, 1], dtype=getattr(L, b)), None),
            L.clamp(L.tensor([0, 3, 7], dtype=getattr(L, x)), L.tensor(2, dtype=getattr(L, b)), L.tensor(5)),
            L.clamp(L.tensor([0, 3, 7], dtype=getattr(L, x)), None, L.tensor([[4], [6]], dtype=getattr(L, b))),
        )
    )


def test_clamp_with_tensor_bounds_passes_gradcheck_away_from_ties():
    rng = np.random.default_rng(0)
    x, lo, hi = rng.normal(size=(3, 5)), rng.normal(size=(5,)) - 0.5, rng.normal(size=(3, 1)) + 0.7
    xs = [ember.tensor(v, requires_grad=True) for v in (x, lo, hi)]
    assert ember.autograd.gradcheck(lambda a, b, c: ember.clamp(a, b, c), xs)
    assert ember.autograd.gradgradcheck(lambda a, b, c: ember.clamp(a, b, c), xs)


# -- smooth_l1 / huber at d = 0: the quadratic branch squared |d|, whose second derivative at 0 came out 0 ----------
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("loss", ["smooth_l1_loss", "huber_loss"])
def test_smooth_l1_and_huber_second_derivative_at_zero_difference(loss, reduction):
    x, t = [0.0, 0.3, 2.0, -0.2, 0.0, -5.0], [0.0, 0.0, 0.0, 0.0, 0.0, math.inf]
    kw = {"beta": 0.5} if loss == "smooth_l1_loss" else {"delta": 0.5}

    def run(L):
        fn = getattr(L.nn.functional, loss)
        return _grads(L, lambda L, a: fn(a, L.tensor(t, dtype=L.float64), reduction=reduction, **kw), [x])

    same(run)


# -- atan2 at the origin (and where a*a + b*b underflows): PyTorch's gradient is 0, Ember's was nan ------------------
def test_atan2_gradient_at_the_origin_is_zero():
    a, b = [0.0, 1e-200, 0.0, -0.0, 1.0, 0.0], [0.0, 1e-200, 1e-200, -0.0, 0.5, -2.0]
    same(lambda L: _grads(L, lambda L, x, y: L.atan2(x, y), [a, b], second=False))


def test_atan2_second_derivative_away_from_the_origin():
    a, b = [1e-3, 1.0, 0.0, -3.0], [1e-3, 0.5, -2.0, 0.25]
    same(lambda L: _grads(L, lambda L, x, y: L.atan2(x, y), [a, b]))


# -- elu/celu/selu at 0: PyTorch's first derivative is the negative branch's, its second 0 (Ember's was alpha) ------
ELU_CASES = {
    "elu": lambda L, x: L.nn.functional.elu(x),
    "elu_alpha2": lambda L, x: L.nn.functional.elu(x, alpha=2.0),
    "celu_alpha2": lambda L, x: L.nn.functional.celu(x, alpha=2.0),
    "celu_alpha05": lambda L, x: L.nn.functional.celu(x, alpha=0.5),
    "selu": lambda L, x: L.nn.functional.selu(x),
    "hardswish": lambda L, x: L.nn.functional.hardswish(x),
}


@pytest.mark.parametrize("name", sorted(ELU_CASES))
def test_activation_gradients_at_their_branch_points(name):
    x = [0.0, -0.0, -1.0, 1.0, -3.0, 3.0, 2.5, -2.5]
    same(lambda L: _grads(L, ELU_CASES[name], [x]))


# -- logit: its derivative 1 / (p (1 - p)) is inf at 0 and 1 (Ember's chain through log and a division gave nan) ------
def test_logit_gradient_at_0_and_1_is_inf():
    same(lambda L: _grads(L, lambda L, x: L.logit(x), [[0.0, 0.5, 0.25]], second=False))
    same(lambda L: _grads(L, lambda L, x: L.logit(x), [[1.0, 0.5]], second=False))
    same(lambda L: _grads(L, lambda L, x: L.logit(x), [[0.5, 0.25, 0.9]]))


def test_logit_with_eps_is_constant_outside_the_band():
    """Outside [eps, 1 - eps] logit(x, eps) is constant: first and second derivatives 0. PyTorch's first is 0 and
    its second nan there (its double backward does not mask): Ember's second derivative is the true 0."""
    x = [0.0, 0.05, 0.1, 0.5, 0.95, 1.0]
    e = _grads(ember, lambda L, t: L.logit(t, 0.1), [x])
    same(lambda L: _grads(L, lambda L, t: L.logit(t, 0.1), [x], second=False))
    np.testing.assert_array_equal(e[2].numpy()[[0, 1, 4, 5]], 0.0)
    t = _grads(torch, lambda L, t: L.logit(t, 0.1), [x])
    np.testing.assert_allclose(e[2].numpy()[[2, 3]], t[2].numpy()[[2, 3]], rtol=1e-12)


# -- the 2-norm at 0: Ember's second derivative is 0, PyTorch's nan (undefined; op_db marks gradgrad at zero an
# expected failure). Where an eps clamps the norm, the function is linear near 0 and 0 is the true value -----------
def test_normalize_second_derivative_at_zero_is_the_true_zero():
    x = [0.0, 0.0, 0.0, 0.0]
    fns = {
        "normalize": lambda L, t: L.nn.functional.normalize(t.reshape(2, 2)),
        "renorm": lambda L, t: L.renorm(t.reshape(2, 2), 2, 0, 1.0),
    }
    for fn in fns.values():
        e, t = _grads(ember, fn, [x]), _grads(torch, fn, [x])
        np.testing.assert_allclose(e[1].numpy(), t[1].numpy(), rtol=1e-12)  # first order: PyTorch's
        np.testing.assert_array_equal(e[2].numpy(), 0.0)  # x / eps (or x) near 0: no curvature
        assert np.isnan(t[2].numpy()).all()  # PyTorch's (a bug: 0 * nan through its clamp)


def test_vector_norm_second_derivative_at_zero_is_zero():
    for fn in (
        lambda L, t: L.linalg.vector_norm(t),
        lambda L, t: L.linalg.norm(t.reshape(2, 2)),
        lambda L, t: L.norm(t),
        lambda L, t: L.dist(t, L.zeros_like(t)),
    ):
        e = _grads(ember, fn, [[0.0, 0.0, 0.0, 0.0]])
        np.testing.assert_array_equal(e[1].numpy(), 0.0)
        np.testing.assert_array_equal(e[2].numpy(), 0.0)

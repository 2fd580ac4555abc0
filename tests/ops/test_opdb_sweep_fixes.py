"""Differences from PyTorch that ``tools/opdb_sweep.py`` (op_db run through Ember) found: the same code under
Ember and torch, values, dtypes, shapes and gradients compared; errors checked for a type PyTorch code catches."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _np(x):
    if isinstance(x, ember.Tensor):
        return x.detach().numpy(), x.dtype.name
    return x.detach().numpy(), str(x.dtype).replace("torch.", "")


def same(fn, rtol=1e-7, atol=1e-12):
    """``fn(ember)`` and ``fn(torch)`` give the same values, shapes and dtypes (a tensor or a tuple of them)."""
    e, t = fn(ember), fn(torch)
    es, ts = (e, t) if isinstance(e, (tuple, list)) else ((e,), (t,))
    assert len(es) == len(ts)
    for a, b in zip(es, ts, strict=True):
        (an, ad), (bn, bd) = _np(a), _np(b)
        assert an.shape == bn.shape, f"shape {an.shape} != torch {bn.shape}"
        assert ad == bd, f"dtype {ad} != torch {bd}"
        np.testing.assert_allclose(an, bn, rtol=rtol, atol=atol, equal_nan=True)
    return e


# -- writes through a 0-d view (NumPy's a[2] is a scalar copy; a[2, ...] is the view) ----------------------------
ZERO_D_WRITES = {
    "copy_": lambda L, x: x[2].copy_(L.tensor(9.0, dtype=L.float64)),
    "fill_": lambda L, x: x.select(0, 1).fill_(7.0),
    "add_": lambda L, x: x[-1].add_(1.5),
    "mul_": lambda L, x: x.view(5)[3].mul_(3.0),
    "2d": lambda L, x: x.view(5, 1)[4, 0].sub_(2.0),
    "index_fill_": lambda L, x: x[1].index_fill_(0, L.tensor(0), -1.0),
}


@pytest.mark.parametrize("grad", [False, True], ids=["plain", "graph"])
@pytest.mark.parametrize("name", sorted(ZERO_D_WRITES))
def test_inplace_writes_through_a_0d_view_reach_the_base(name, grad):
    def run(L):
        leaf = L.tensor(np.arange(1.0, 6.0), dtype=L.float64, requires_grad=grad)
        x = leaf * 2.0
        ZERO_D_WRITES[name](L, x)
        if not grad:
            return x
        (g,) = L.autograd.grad((x * L.tensor(np.arange(5.0), dtype=L.float64)).sum(), [leaf])
        return x, g

    same(run)


def test_select_scatter_of_a_0d_source_into_a_vector():
    src = np.array([1.0, 2.0, 3.0, 4.0, 5.0])

    def run(L):
        x = L.tensor(src, requires_grad=True)
        s = L.tensor(9.0, dtype=L.float64, requires_grad=True)
        y = L.select_scatter(x, s, 0, -2)
        gx, gs = L.autograd.grad((y * L.tensor(np.arange(5.0), dtype=L.float64)).sum(), [x, s])
        return y, gx, gs

    same(run)


def test_frexp_mantissa_gradient_is_two_to_the_minus_exponent():
    values = np.array([1.5, 3.0, -0.2, 0.0, 1e-310, 1.7e308, -np.inf, 7.0, np.nan])

    def run(L):
        x = L.tensor(values, requires_grad=True)
        m, e = L.frexp(x)
        (g,) = L.autograd.grad((m * L.tensor(np.arange(9.0), dtype=L.float64)).sum(), [x])
        return m, e, g

    same(run)
    x = ember.tensor([0.3, -5.0, 1e5], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: ember.frexp(t).mantissa, (x,))
    assert not ember.frexp(x).exponent.requires_grad

"""Operators whose arrays come from backend kernels (pad, gather/scatter, sort/unique): float64 gradchecks
(first and second order) and forward+backward parity with PyTorch, on whichever backend runs the suite."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck
from ember.testing import torch_or_none

torch = torch_or_none()
needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
rng = np.random.default_rng(7)


def leaf(a):
    return ember.tensor(a, dtype=ember.float64, requires_grad=True)


def parity(fn, *arrays, upstream_seed=0, tol=1e-12):
    """``fn(lib, *tensors)`` and its gradients (for a random upstream) equal under ember and torch."""
    outs = {}
    for lib in (ember, torch):
        xs = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays]
        y = fn(lib, *xs)
        up = np.random.default_rng(upstream_seed).standard_normal(tuple(y.shape))
        gs = lib.autograd.grad([y], xs, [lib.tensor(up, dtype=lib.float64)], allow_unused=True)
        outs[lib.__name__] = [y.detach().numpy()] + [None if g is None else g.detach().numpy() for g in gs]
    for a, b in zip(outs["ember"], outs["torch"], strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


# -- pad ---------------------------------------------------------------------------------------------
PAD_CASES = [  # input shape, pad widths (last dim first)
    ((2, 3, 7), (2, 3)),
    ((1, 2, 5, 6), (3, 2, 1, 0)),
    ((1, 2, 4, 5, 3), (2, 1, 0, 3, 1, 2)),
    ((2, 3, 6), (-1, 3)),
    ((1, 2, 5, 6), (2, -1, -1, 2)),
]


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("case", range(len(PAD_CASES)))
def test_pad_gradcheck_and_second_order(mode, case):
    shape, widths = PAD_CASES[case]
    x = leaf(rng.standard_normal(shape))
    kw = {"value": 0.5} if mode == "constant" else {}
    assert gradcheck(lambda t: F.pad(t, widths, mode=mode, **kw), [x])
    assert gradgradcheck(lambda t: F.pad(t, widths, mode=mode, **kw) ** 2, [x])


@needs_torch
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("case", range(len(PAD_CASES)))
def test_pad_matches_torch_forward_and_backward(mode, case):
    shape, widths = PAD_CASES[case]
    kw = {"value": -2.0} if mode == "constant" else {}
    parity(lambda L, t: L.nn.functional.pad(t, widths, mode=mode, **kw), rng.standard_normal(shape))


@needs_torch
def test_pad_of_a_view_and_in_place_after():
    x = rng.standard_normal((2, 4, 6))
    parity(lambda L, t: L.nn.functional.pad(t[:, 1:, ::2], (1, 2), mode="reflect") * 2, x)
    parity(lambda L, t: L.nn.functional.pad(t.transpose(1, 2), (2, 1, 1, 0), mode="replicate"), x)

    def in_place(L, t):
        y = L.nn.functional.pad(t * 1, (1, 1), mode="circular")
        y.mul_(3)
        return y

    parity(in_place, x)


def test_pad_does_not_alias_its_input():
    x = ember.arange(6.0).reshape(2, 3)
    y = F.pad(x, (-1, 0))
    y.add_(10)
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]

"""Max pooling's gradient with inf, NaN and -0.0 in the incoming gradient, run the same way under Ember and torch:
each window's gradient goes to its first maximum only (PyTorch's scatter), so an inf stays an inf there and puts
no NaN beside it (``g * hit`` did: inf * 0), and every other element is +0.0. Every geometry path of the NumPy
backend: the 2x2 pairs, disjoint windows, overlapping (the wide layout), a NaN input (the general pass), padding,
ceil_mode, dilation, 1-3 spatial dims, float32/float64, a non-contiguous gradient."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.backends import get_backend

rng = np.random.default_rng(5)

CASES = [  # (spatial, kernel, stride, padding, dilation, ceil_mode)
    ((8, 10), 2, 2, 0, 1, False),  # the 2x2 pairs
    ((9, 9), 3, 3, 0, 1, False),  # disjoint windows, the general pass
    ((9, 11), 3, 2, 1, 1, False),  # overlapping: the wide layout
    ((9, 11), 3, 2, 1, 1, True),
    ((10, 10), 2, 2, 1, 2, False),  # dilation
    ((7, 9), 2, 1, 0, 1, False),
    ((12,), 3, 2, 1, 1, False),
    ((5, 6, 7), 2, 2, 0, 1, True),
]


def _at_maxima(x, g, spatial, k, s, p, d, ceil, torch):
    """Where a -0.0 gradient lands (torch's indices of the windows whose gradient is -0.0)."""
    _, idx = getattr(torch.nn.functional, f"max_pool{len(spatial)}d")(torch.tensor(x), k, s, p, d, ceil, True)
    neg0 = (g == 0) & np.signbit(g)
    mask = np.zeros(x.shape, dtype=bool).reshape(*x.shape[:2], -1)
    flat_idx, flat_neg = idx.numpy().reshape(*g.shape[:2], -1), neg0.reshape(*g.shape[:2], -1)
    for a, b in zip(*np.nonzero(flat_neg.any(-1)), strict=True):
        mask[a, b, flat_idx[a, b][flat_neg[a, b]]] = True
    return mask.reshape(x.shape)


def _grads(torch, x, g, spatial, k, s, p, d, ceil):
    sp = len(spatial)
    xe = ember.tensor(x, requires_grad=True)
    getattr(F, f"max_pool{sp}d")(xe, k, s, p, d, ceil).backward(ember.tensor(g))
    xt = torch.tensor(x, requires_grad=True)
    getattr(torch.nn.functional, f"max_pool{sp}d")(xt, k, s, p, d, ceil).backward(torch.tensor(g))
    return xe.grad.numpy(), xt.grad.numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nan_input", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_max_pool_gradient_specials_match_torch(torch, case, nan_input, dtype):
    spatial, k, s, p, d, ceil = case
    pairs = case == CASES[0]
    x = np.round(rng.standard_normal((2, 3, *spatial)) * 2).astype(dtype)  # ties
    if nan_input:
        x.reshape(-1)[::37] = np.nan
    out = torch.nn.functional.__dict__[f"max_pool{len(spatial)}d"](torch.tensor(x), k, s, p, d, ceil).shape
    g = np.round(rng.standard_normal(tuple(out)) * 4).astype(dtype)  # integers: sums exact in any order
    flat = g.reshape(-1)
    flat[::5], flat[1::7], flat[2::11], flat[3::13] = np.inf, -np.inf, np.nan, -0.0
    got, want = _grads(torch, x, g, spatial, k, s, p, d, ceil)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)  # NaN where torch has NaN, inf where it has inf
    num = ~np.isnan(want)  # (a NaN's sign depends on the order of the sums)
    if pairs and not nan_input and get_backend().name == "numpy":  # the 2x2 scatter writes a -0.0 gradient
        num &= ~_at_maxima(x, g, spatial, k, s, p, d, ceil, torch)  # as it is (torch adds it to zeros: +0.0)
    np.testing.assert_array_equal(np.signbit(got[num]), np.signbit(want[num]))  # +0.0 where torch has +0.0
    # a non-contiguous incoming gradient, the same
    gt = np.ascontiguousarray(np.swapaxes(g, 0, 1))
    got2, _ = _grads(torch, x, np.swapaxes(gt, 0, 1), spatial, k, s, p, d, ceil)
    np.testing.assert_array_equal(got2.view(f"u{got2.itemsize}"), got.view(f"u{got.itemsize}"))

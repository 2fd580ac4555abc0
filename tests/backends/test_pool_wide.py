"""The wide-layout max pooling (overlapping windows) against a per-window loop: values, first-maximum
gradients with many ties, 1-d/2-d/3-d, padding, dilation, ceil mode, several plane blocks; and the strided
fallback when a window's maximum is NaN or the padding value."""

import numpy as np
import pytest

import ember.backends._kernels_wide as wide
from ember.backends._kernels_util import pool_geometry
from ember.backends.numpy_backend import NumpyBackend

BE = NumpyBackend()
rng = np.random.default_rng(5)


def loop_pool(x, g, k, s, p, d, ceil_mode):
    """Max pooling and its gradient window by window: the first maximum (NaN counts as one) gets it."""
    spatial = x.shape[2:]
    out = pool_geometry(spatial, k, s, p, d, ceil_mode)[1]
    y = np.empty(x.shape[:2] + out, dtype=x.dtype)
    gx = np.zeros_like(x)
    for n, c in np.ndindex(*x.shape[:2]):
        for j in np.ndindex(*out):
            pos = [tuple(j[i] * s[i] - p[i] + o[i] * d[i] for i in range(len(k))) for o in np.ndindex(*k)]
            pos = [q for q in pos if all(0 <= q[i] < spatial[i] for i in range(len(k)))]
            vals = [x[(n, c, *q)] for q in pos]
            best = next((i for i, v in enumerate(vals) if np.isnan(v)), None)
            if best is None:
                best = int(np.argmax(vals))  # the first maximum
            y[(n, c, *j)] = vals[best]
            gx[(n, c, *pos[best])] += g[(n, c, *j)]
    return y, gx


GEOMS = [  # spatial, kernel, stride, padding, dilation, ceil_mode
    ((9,), (3,), (2,), (1,), (1,), False),
    ((10,), (3,), (2,), (0,), (2,), True),
    ((7, 8), (3, 3), (2, 2), (1, 1), (1, 1), False),
    ((7, 7), (3, 2), (1, 1), (1, 0), (1, 1), False),
    ((8, 9), (3, 3), (2, 3), (1, 1), (1, 2), True),
    ((6, 6), (4, 4), (3, 3), (2, 1), (1, 1), True),
    ((5, 6, 5), (3, 3, 2), (2, 1, 1), (1, 1, 0), (1, 1, 1), False),
]


@pytest.mark.parametrize("spatial,k,s,p,d,ceil_mode", GEOMS)
def test_wide_max_pool_matches_a_window_loop(monkeypatch, spatial, k, s, p, d, ceil_mode):
    monkeypatch.setattr(wide, "_BLOCK_ELEMS", 200)  # several blocks of planes, the last one partial
    x = np.round(rng.standard_normal((3, 5, *spatial)) * 1.5)  # integers: many ties
    out = pool_geometry(spatial, k, s, p, d, ceil_mode)[1]
    g = rng.standard_normal((3, 5, *out))
    y_ref, gx_ref = loop_pool(x, g, k, s, p, d, ceil_mode)
    y, _ = BE.max_pool(x, k, s, p, d, ceil_mode)
    np.testing.assert_array_equal(y, y_ref)
    np.testing.assert_allclose(BE.max_pool_backward(g, x, y, None, k, s, p, d, ceil_mode), gx_ref, atol=1e-12)
    x32 = x.astype(np.float32)
    assert BE.max_pool(x32, k, s, p, d, ceil_mode)[0].dtype == np.float32


@pytest.mark.parametrize("special", [np.nan, -np.inf])
def test_overlapping_max_pool_with_nan_or_minus_inf_windows(special):
    k, s, p, d = (3, 3), (2, 2), (1, 1), (1, 1)
    x = np.round(rng.standard_normal((2, 3, 7, 7)))
    x[0, 1, :3, :3] = -np.inf  # a window of -inf only: its first element gets the gradient
    x[1, 2, 4, 5] = special
    g = rng.standard_normal((2, 3, 4, 4))
    y_ref, gx_ref = loop_pool(x, g, k, s, p, d, False)
    y, _ = BE.max_pool(x, k, s, p, d, False)
    np.testing.assert_array_equal(y, y_ref)
    np.testing.assert_allclose(BE.max_pool_backward(g, x, y, None, k, s, p, d, False), gx_ref, atol=1e-12)


def test_integer_max_pool_pads_with_the_lowest_integer():
    x = rng.integers(-5, 5, (2, 2, 7, 7)).astype(np.int32)
    x[0, 0, :2, :2] = np.iinfo(np.int32).min
    y_ref = loop_pool(x.astype(np.float64), np.zeros((2, 2, 4, 4)), (3, 3), (2, 2), (1, 1), (1, 1), False)[0]
    y = BE.max_pool(x, (3, 3), (2, 2), (1, 1), (1, 1), False)[0]
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, y_ref.astype(np.int32))


def test_every_geometry_case_is_overlapping():
    # the cases above exercise the wide layout only if neighbouring windows share elements
    for _, k, s, _, d, _ in GEOMS:
        assert any(s[i] < d[i] * (k[i] - 1) + 1 for i in range(len(k)))

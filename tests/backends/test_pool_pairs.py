"""The 2x2, stride-2 max pooling of the NumPy backend (``_kernels_pool._max_pool_pairs``): values and
first-maximum gradients against a per-window loop (many ties, odd sizes, non-contiguous inputs, -inf), the
positions it keeps (cached or not), the general path it leaves to when a NaN is present, and gradcheck/PyTorch
parity."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.backends._kernels_pool import PairIndex
from ember.backends.numpy_backend import NumpyBackend
from ember.testing import check_op

BE = NumpyBackend()
rng = np.random.default_rng(11)
K = (2, 2)
ONE = (1, 1)


def loop_pool(x, g):
    """2x2, stride-2 max pooling window by window: the first maximum in row-major order gets the gradient."""
    oh, ow = x.shape[2] // 2, x.shape[3] // 2
    y = np.empty(x.shape[:2] + (oh, ow), dtype=x.dtype)
    gx = np.zeros_like(x)
    for n, c, i, j in np.ndindex(*x.shape[:2], oh, ow):
        win = [(2 * i + a, 2 * j + b) for a in range(2) for b in range(2)]
        vals = [x[n, c, p, q] for p, q in win]
        best = int(np.argmax(vals))
        y[n, c, i, j] = vals[best]
        gx[(n, c, *win[best])] = g[n, c, i, j]
    return y, gx


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("spatial,ceil_mode", [((6, 8), False), ((7, 9), False), ((4, 5), False), ((6, 4), True)])
def test_pairs_match_a_window_loop(dtype, spatial, ceil_mode):
    x = np.maximum(np.round(rng.standard_normal((3, 4, *spatial)) * 1.5), 0).astype(dtype)  # ties: zeros, ints
    x[0, 0, :2, :2] = 0  # a whole window of zeros
    y, saved = BE.max_pool(x, K, K, (0, 0), ONE, ceil_mode, save=True)
    assert isinstance(saved, PairIndex)
    g = rng.standard_normal(y.shape).astype(dtype)
    y_ref, gx_ref = loop_pool(x, g)
    assert y.dtype == dtype and y.flags.c_contiguous
    np.testing.assert_array_equal(y, y_ref)
    gx = BE.max_pool_backward(g, x, y, saved, K, K, (0, 0), ONE, ceil_mode)
    np.testing.assert_array_equal(gx, gx_ref)
    # the general path (no positions) agrees
    np.testing.assert_array_equal(BE.max_pool_backward(g, x, y, None, K, K, (0, 0), ONE, ceil_mode), gx_ref)


@pytest.mark.parametrize("spatial", [(6, 8), (7, 9), (4, 515)])  # (width >= 255: the int64 offsets)
def test_pairs_positions_cached_or_not(monkeypatch, spatial):
    import ember.backends._kernels_pool as kp

    x = np.round(rng.standard_normal((2, 3, *spatial)))
    y, saved = BE.max_pool(x, K, K, (0, 0), ONE, False, save=True)
    monkeypatch.setattr(kp, "_CORNERS_CACHE_MAX", 0)
    monkeypatch.setattr(kp, "_corners_cache", {})
    y2, fresh = BE.max_pool(x, K, K, (0, 0), ONE, False, save=True)
    assert not kp._corners_cache  # too large for the cache: computed each time
    np.testing.assert_array_equal(y, y2)
    np.testing.assert_array_equal(saved.idx, fresh.idx)
    assert saved.idx.dtype == np.int64 and saved.idx.shape == y.shape
    # each position is its window's first maximum, in the input's flat C order
    h, w = spatial
    n, c, i, j = np.unravel_index(np.arange(y.size), y.shape)
    r, q = np.divmod(saved.idx.reshape(-1) - (n * 3 + c) * h * w, w)
    assert ((r // 2 == i) & (q // 2 == j)).all()
    np.testing.assert_array_equal(x[n, c, r, q], y.reshape(-1))


def test_pairs_on_non_contiguous_input_and_minus_inf():
    base = np.round(rng.standard_normal((2, 3, 8, 6)))
    x = base.transpose(0, 1, 3, 2)  # (2, 3, 6, 8), not C-contiguous
    x[1, 2, 2:4, 4:6] = -np.inf  # a window of -inf only: its first element gets the gradient
    y, saved = BE.max_pool(x, K, K, (0, 0), ONE, False, save=True)
    g = rng.standard_normal(y.shape)
    y_ref, gx_ref = loop_pool(np.ascontiguousarray(x), g)
    np.testing.assert_array_equal(y, y_ref)
    np.testing.assert_array_equal(BE.max_pool_backward(g, x, y, saved, K, K, (0, 0), ONE, False), gx_ref)


def test_pairs_keep_positions_only_when_asked_and_without_nan():
    x = rng.standard_normal((2, 2, 4, 4))
    assert BE.max_pool(x, K, K, (0, 0), ONE, False, save=False)[1] is None
    x[1, 0, 3, 2] = np.nan
    y, saved = BE.max_pool(x, K, K, (0, 0), ONE, False, save=True)
    assert saved is None  # the general backward handles NaN (it counts as the maximum)
    assert np.isnan(y[1, 0, 1, 1]) and np.isfinite(np.delete(y.ravel(), 2 * 4 + 3)).all()
    g = rng.standard_normal(y.shape)
    gx = BE.max_pool_backward(g, x, y, saved, K, K, (0, 0), ONE, False)
    assert gx[1, 0, 3, 2] == g[1, 0, 1, 1] and gx[1, 0, 2:4, 2:4].sum() == g[1, 0, 1, 1]


def test_infinities_of_both_signs_keep_the_pairs_path():
    # +inf and -inf together (their sum would be NaN) but no NaN: the positions are kept, and are right
    x = rng.standard_normal((2, 3, 4, 6))
    x[0, 0, 0, 1], x[0, 0, 1, 0], x[1, 2, 3, 5], x[1, 1, 0, :2] = np.inf, np.inf, -np.inf, -np.inf
    y, saved = BE.max_pool(x, K, K, (0, 0), ONE, False, save=True)
    assert isinstance(saved, PairIndex)
    g = rng.standard_normal(y.shape)
    y_ref, gx_ref = loop_pool(x, g)
    np.testing.assert_array_equal(y, y_ref)
    np.testing.assert_array_equal(BE.max_pool_backward(g, x, y, saved, K, K, (0, 0), ONE, False), gx_ref)


def test_other_geometries_keep_the_general_path():
    x = rng.standard_normal((1, 2, 6, 6))
    for args in [((2, 2), (2, 2), (1, 1), ONE, False), ((2, 2), (1, 1), (0, 0), ONE, False),
                 ((3, 3), (3, 3), (0, 0), ONE, False), ((2, 2), (2, 2), (0, 0), (2, 2), False)]:  # fmt: skip
        assert not isinstance(BE.max_pool(x, *args, save=True)[1], PairIndex)
    assert BE.max_pool(rng.integers(0, 5, (1, 1, 4, 4)), K, K, (0, 0), ONE, False, save=True)[1] is None


@pytest.mark.parametrize("shape", [(2, 3, 6, 8), (1, 2, 5, 7)])
def test_max_pool2d_2x2_gradcheck_and_torch_parity(shape):
    check_op(lambda x: F.max_pool2d(x, 2), rng.standard_normal(shape), torch_fn=lambda x: __import__(
        "torch").nn.functional.max_pool2d(x, 2), second_order=True, name="max_pool2d_2x2")  # fmt: skip


def test_relu_then_pool_ties_match_torch(torch):
    x = np.round(rng.standard_normal((4, 3, 8, 8)))
    g = rng.standard_normal((4, 3, 4, 4))
    xe = ember.tensor(x, dtype=ember.float32, requires_grad=True)
    F.max_pool2d(F.relu(xe), 2).backward(ember.tensor(g, dtype=ember.float32))
    xt = torch.tensor(x, dtype=torch.float32, requires_grad=True)
    torch.nn.functional.max_pool2d(torch.relu(xt), 2).backward(torch.tensor(g, dtype=torch.float32))
    np.testing.assert_array_equal(xe.grad.numpy(), xt.grad.numpy())

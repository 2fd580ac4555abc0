"""The reference kernels on CuPy (issue 28): there every array call is a kernel launch with a fixed host cost
(~10 µs) and no CPU cache to fit, so the NumPy-only blocking (cache-sized plane blocks, column chunks for
OpenBLAS) must not apply. Checked with NumPy's functions under another module name, as the kernels see CuPy's
namespace, counting the calls: their number must not grow with the batch, and the values are NumPy's."""

import math
from types import SimpleNamespace

import numpy as np

import ember.backends._kernels_wide as wide
from ember.backends._kernels_conv import ConvKernels
from ember.backends._kernels_util import pool_geometry
from ember.backends.numpy_backend import NumpyBackend

BE = NumpyBackend()
rng = np.random.default_rng(7)


class _Counting:
    """NumPy's functions, counted (on a GPU each is a kernel launch)."""

    __name__ = "counting"

    def __init__(self):
        self.calls = 0

    def __getattr__(self, name):
        f = getattr(np, name)
        if not callable(f) or isinstance(f, type):
            return f

        def call(*args, **kwargs):
            self.calls += 1
            return f(*args, **kwargs)

        return call


def test_the_wide_max_pool_launches_as_much_at_any_batch():
    """ResNet's 3x3 stride-2 pool: in NumPy's 2^16-element blocks, batch 64 at 224x224 made 3,690 launches forward
    and 12,714 backward."""
    k, s, p, d = (3, 3), (2, 2), (1, 1), (1, 1)

    def launches(n):
        xp = _Counting()
        x = rng.standard_normal((n, 64, 56, 56)).astype(np.float32)
        pads, out = pool_geometry((56, 56), k, s, p, d, False)
        grid = wide.WideGrid((56, 56), out, k, s, pads, d)
        y = wide.max_pool_wide(xp, x, grid, -np.inf)
        np.testing.assert_array_equal(y, BE.max_pool(x, k, s, p, d, False)[0])  # NumPy's blocks, the same values
        wide.max_pool_backward_wide(xp, np.ones_like(y), x, y, grid, -np.inf)
        return xp.calls

    assert launches(2) == launches(16) < 100


def test_a_small_weight_gradient_is_one_product_at_any_batch():
    """LeNet-5's first layer (6 outputs of 25 weights): NumPy sums the product over chunks of 2,048 columns; on
    CuPy that was 49 launches at batch 64."""
    w_shape = (6, 1, 5, 5)
    kk = math.prod(w_shape[1:])

    def launches(n):
        xp = _Counting()
        cols = rng.standard_normal((kk, n * 784)).astype(np.float32)
        gt = rng.standard_normal((6, n * 784)).astype(np.float32)
        fake = SimpleNamespace(xp=xp, gemm=lambda a, b, out=None: xp.matmul(a, b, out=out))  # (Backend.gemm's)
        gw = ConvKernels._weight_from(fake, cols, gt, 1, w_shape)
        np.testing.assert_allclose(gw, (gt @ cols.T).reshape(w_shape), rtol=1e-4, atol=1e-3)
        return xp.calls

    assert launches(4) == launches(64) <= 3


def test_im2col_on_a_device_is_one_gather_not_a_copy_per_offset(monkeypatch):
    """ResNet-18's inference made 440 of its 817 launches per step in im2col's copies and zero fills per kernel
    offset (7x7: 49 offsets); the window gather is the padded copy and one copy whatever the kernel."""
    be = NumpyBackend()
    monkeypatch.setattr(be, "xp", _Counting())

    def per_offset(*args):
        raise AssertionError("im2col copied per kernel offset on a device")

    monkeypatch.setattr(be, "_im2col_offsets", per_offset)
    x = rng.standard_normal((2, 3, 15, 15)).astype(np.float32)
    for k, s, p in ((7, 2, 3), (3, 1, 1), (1, 2, 0)):
        cols, out = be._im2col(x, (k, k), (s, s), ((p, p),) * 2, (1, 1))
        want = np.full_like(cols, np.nan)
        BE._im2col_offsets(x, want, (k, k), (s, s), ((p, p),) * 2, (1, 1), out)
        np.testing.assert_array_equal(cols, want)


class _Ufuncs(np.ndarray):
    """A NumPy array that counts the ufunc calls (``+=`` included) made with it: each is a launch on CuPy."""

    calls = 0

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        _Ufuncs.calls += 1
        plain = [a.view(np.ndarray) if isinstance(a, _Ufuncs) else a for a in inputs]
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(o.view(np.ndarray) if isinstance(o, _Ufuncs) else o for o in out)
        r = getattr(ufunc, method)(*plain, **kwargs)
        return out[0] if out is not None and len(out) == 1 else r


def test_global_average_pooling_is_one_reduction_whatever_the_plane():
    """ResNet's head (adaptive average pooling of 7x7 planes to 1x1) added the input into the output once per
    kernel offset: 49 launches forward and 49 backward on CuPy."""

    def launches(hw):
        x = rng.standard_normal((2, 3, hw, hw)).astype(np.float32)
        _Ufuncs.calls = 0
        y = BE.avg_pool(x.view(_Ufuncs), (hw, hw), (hw, hw), (0, 0), False, True, None)
        np.testing.assert_allclose(np.asarray(y), x.mean(axis=(2, 3), keepdims=True), rtol=1e-6)
        g = rng.standard_normal((2, 3, 1, 1)).astype(np.float32)
        gx = BE.avg_pool_backward(g.view(_Ufuncs), x.shape, (hw, hw), (hw, hw), (0, 0), False, True, None)
        np.testing.assert_allclose(np.asarray(gx), np.broadcast_to(g / hw**2, x.shape), rtol=1e-6)
        return _Ufuncs.calls

    assert launches(7) == launches(3) <= 4

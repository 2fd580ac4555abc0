"""The NumPy backend's ReLU forward kernel (``ActivationKernels.relu``): the same bits as ``np.maximum(x, 0)``
on every path (float32 rows against zeros with a tail, non-contiguous, float64, small), NaN and -0.0 included."""

import numpy as np
import pytest

from ember.backends.numpy_backend import NumpyBackend

BE = NumpyBackend()
rng = np.random.default_rng(3)


@pytest.mark.parametrize(
    "shape,dtype,transpose",
    [((64, 6, 28, 28), np.float32, False), ((7, 3001), np.float32, False), ((70, 300), np.float32, True),
     ((64, 120), np.float32, False), ((64, 16, 10, 10), np.float64, False)],
)  # fmt: skip
def test_relu_equals_maximum_with_zero(shape, dtype, transpose):
    x = rng.standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    flat[::97] = np.nan
    flat[1::89] = -0.0
    flat[-1] = np.inf
    if transpose:
        x = x.T
    ref = np.maximum(x, 0)
    y = BE.relu(x)
    assert y.shape == ref.shape and y.dtype == ref.dtype and y.flags.c_contiguous == ref.flags.c_contiguous
    np.testing.assert_array_equal(y.view(f"i{y.itemsize}"), ref.view(f"i{ref.itemsize}"))  # the same bits
    assert not np.shares_memory(y, x)


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize(
    "shape,dtype,transpose",
    [((8, 64, 32, 32), np.float32, False), ((7, 3001), np.float32, True), ((5, 4099), np.float64, False),
     ((3,), np.float32, False)],
)  # fmt: skip
def test_relu_backward_is_threshold_backward_on_blocks_and_threads(monkeypatch, threads, shape, dtype, transpose):
    # several blocks (and a short last one), split over threads or not, non-contiguous inputs, float64: the bits of
    # PyTorch's threshold_backward (0 where y <= 0, so -0.0 too; a NaN output passes g; a NaN g at y = 0 gives 0)
    import ember.backends._kernels_activation as ka
    import ember.backends._kernels_threads as kt

    monkeypatch.setattr(ka, "_RELU_BLOCK", 1000)
    monkeypatch.setattr(kt, "_MIN_ROWS_PART", 8)
    monkeypatch.setattr(kt, "kernel_threads", lambda: threads)
    y = np.maximum(rng.standard_normal(shape), 0).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    yf, gf = y.reshape(-1), g.reshape(-1)
    yf[::97], gf[::89], yf[1::53], yf[2::61] = np.nan, np.nan, -0.0, 0.0
    if transpose:
        y, g = y.T, g.T
    ref = np.where(y <= 0, dtype(0), g)
    got = BE.relu_backward(g, y)
    assert got.shape == ref.shape and got.dtype == ref.dtype
    np.testing.assert_array_equal(got.view(f"i{got.itemsize}"), ref.view(f"i{ref.itemsize}"))
    x = rng.standard_normal(shape).astype(dtype)  # the forward, split over threads, the same bits
    np.testing.assert_array_equal(BE.relu(x).view(f"i{x.itemsize}"), np.maximum(x, 0).view(f"i{x.itemsize}"))

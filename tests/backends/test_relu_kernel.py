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

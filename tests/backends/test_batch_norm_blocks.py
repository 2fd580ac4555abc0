"""NumPy's batch norm by blocks of channels (``_kernels_norm._bn_train_blocks``/``_bn_backward_blocks``) against
the general passes, and the same bits on any number of threads."""

import numpy as np
import pytest

import ember.backends._kernels_norm as kn
import ember.backends._kernels_threads as kt
from ember.backends.numpy_backend import NumpyBackend

BE = NumpyBackend()
rng = np.random.default_rng(5)

CASES = [  # x shape, affine (weight, bias given)
    ((8, 64, 32, 32), (True, True)),
    ((3, 5, 7, 9), (True, False)),
    ((2, 7, 13), (False, True)),
    ((1, 3, 4, 5, 6), (False, False)),
    ((5, 17, 3, 3), (True, True)),
]


def _run(x, w, b, g, running):
    y, mean, var, saved = BE.batch_norm_train(x, w, b, 1e-5, running)
    return [y, mean, var, *saved, *BE.batch_norm_train_backward(g, saved, w, True, w is not None, b is not None)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape,affine", CASES)
def test_blocked_batch_norm_matches_the_general_passes(monkeypatch, dtype, x_shape, affine):
    monkeypatch.setattr(kn, "_BN_BLOCK", 64)  # several blocks, of one channel or more
    c = x_shape[1]
    x = (rng.standard_normal((x_shape[1], x_shape[0], *x_shape[2:])) * 3 + 1).astype(dtype).swapaxes(0, 1)
    w = rng.standard_normal(c).astype(dtype) if affine[0] else None
    b = rng.standard_normal(c).astype(dtype) if affine[1] else None
    g = rng.standard_normal(x_shape).astype(dtype)
    runs = [(np.zeros(c, dtype), np.ones(c, dtype), 0.1) for _ in range(2)]
    assert kn._blocked(np, x, dtype)
    got = _run(x, w, b, g, runs[0])
    monkeypatch.setattr(kn, "_blocked", lambda *a: False)
    ref = _run(x, w, b, g, runs[1])
    tol = 2e-5 if dtype == np.float32 else 1e-12
    for a, r in zip(got, ref, strict=True):
        if r is None:
            assert a is None
            continue
        assert a.dtype == dtype and a.shape == r.shape
        np.testing.assert_allclose(a, r, rtol=tol, atol=tol)
    for a, r in zip(runs[0][:2], runs[1][:2], strict=True):  # the running statistics, updated in place
        np.testing.assert_allclose(a, r, rtol=tol, atol=tol)


def test_blocked_batch_norm_gives_the_same_bits_on_any_number_of_threads(monkeypatch):
    monkeypatch.setattr(kn, "_BN_BLOCK", 64)
    x = rng.standard_normal((4, 9, 5, 7)).astype(np.float32)
    w, b = rng.standard_normal(9).astype(np.float32), rng.standard_normal(9).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    monkeypatch.setattr(kt, "kernel_threads", lambda: 1)
    one = _run(x, w, b, g, None)
    monkeypatch.setattr(kt, "_MIN_ROWS_PART", 8)
    monkeypatch.setattr(kt, "kernel_threads", lambda: 3)
    for a, r in zip(_run(x, w, b, g, None), one, strict=True):
        np.testing.assert_array_equal(a, r)


def test_mixed_precision_and_half_inputs_take_the_general_passes():
    x = np.zeros((2, 3, 4, 4), dtype=np.float16)
    assert not kn._blocked(np, x, np.float32)  # float16 x with float32 parameters
    assert not kn._blocked(np, x, np.float16)
    assert not kn._blocked(np, np.zeros((4, 3), np.float32), np.float32)  # (N, C): no spatial dim

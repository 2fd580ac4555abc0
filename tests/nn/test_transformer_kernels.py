"""Kernel-level checks of the small GPT's paths: row scatter-adds (an embedding's gradient) bit-identical to
NumPy's ``add.at`` on the NumPy backend (close to it on others)."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F

rng = np.random.default_rng(280)


@pytest.mark.parametrize(
    "shape,index",
    [
        ((256, 16), rng.integers(0, 256, 2048)),  # an embedding's rows, many repeated
        ((5, 3, 2), rng.integers(-5, 5, (4, 7))),  # negative rows, a 2-d index, 3-d target
        ((4, 3), np.array([], dtype=np.int64)),
        ((0, 3), np.array([], dtype=np.int64)),
    ],
)
def test_index_add_of_rows_is_add_at_bit_for_bit(shape, index):
    be = ember.zeros(1)._backend
    values = rng.standard_normal(index.shape + shape[1:]).astype(np.float32)
    want = np.zeros(shape, np.float32)
    np.add.at(want, (index,), values)
    got = be.asarray(np.zeros(shape, np.float32))
    be.index_add(got, (be.asarray(index),), be.asarray(values))
    if be.name == "numpy":  # the same additions in the same order
        np.testing.assert_array_equal(be.to_numpy(got), want)
    else:  # torch's index_put_ with accumulate sums in its own order
        np.testing.assert_allclose(be.to_numpy(got), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("row", [4, -5])
def test_index_add_of_rows_out_of_range_is_an_error(row):
    be = ember.zeros(1)._backend
    target, values = be.asarray(np.zeros((4, 3), np.float32)), be.asarray(np.ones((2, 3), np.float32))
    with pytest.raises((IndexError, RuntimeError)):
        be.index_add(target, (be.asarray(np.array([0, row])),), values)


def test_embedding_gradient_sums_repeated_rows_in_order():
    w = ember.tensor(rng.standard_normal((10, 4)), dtype=ember.float32, requires_grad=True)
    idx = ember.tensor(rng.integers(0, 10, (6, 5)))
    g = rng.standard_normal((6, 5, 4)).astype(np.float32)
    F.embedding(idx, w).backward(ember.tensor(g))
    want = np.zeros((10, 4), np.float32)
    np.add.at(want, idx.numpy().reshape(-1), g.reshape(-1, 4))
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-5, atol=1e-5)
    if w._backend.name == "numpy":
        np.testing.assert_array_equal(w.grad.numpy(), want)

"""``x.diagonal()`` is a writable view, as PyTorch's: writes through it reach ``x`` (values, autograd, compile).
NumPy's own diagonal is read-only: ``A.diagonal().fill_(1)`` used to fail with a misleading ShapeError."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _writes(lib):
    a = lib.zeros(2, 4, 4, dtype=lib.float64)
    a.diagonal(0, 1, 2).fill_(1)
    a.diagonal(1, 1, 2).add_(2)
    a.diagonal(-2, 2, 1).mul_(0).add_(3)  # dims given high-to-low: the offset counts the other way
    a[0].diagonal().sub_(0.5)
    return a


def test_writes_through_diagonal_views_reach_the_tensor_as_in_torch():
    np.testing.assert_array_equal(_writes(ember).numpy(), _writes(torch).numpy())


@pytest.mark.parametrize("shape", [(3, 3), (3, 5), (5, 3), (2, 3, 4)])
@pytest.mark.parametrize("offset", [0, 1, -1, 2, -4, 9])
def test_diagonal_values_as_torch(shape, offset):
    a = np.arange(float(np.prod(shape))).reshape(shape)
    for d1, d2 in [(0, 1), (1, 0), (-1, -2), (0, -1)]:
        e, t = ember.tensor(a).diagonal(offset, d1, d2), torch.tensor(a).diagonal(offset, d1, d2)
        assert e.shape == tuple(t.shape)
        np.testing.assert_array_equal(e.numpy(), t.numpy())


def _grad(lib):
    x = lib.tensor(np.arange(9.0).reshape(3, 3), requires_grad=True)
    y = x * 1
    y.diagonal().mul_(3)
    (y * y).sum().backward()
    return y.detach().numpy(), x.grad.numpy()


def test_autograd_through_an_in_place_write_on_the_diagonal_as_torch():
    for a, b in zip(_grad(ember), _grad(torch), strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_compiled_function_writing_the_diagonal_replays_as_eager():
    def f(x):
        y = x * 1
        y.diagonal().add_(1)
        return y

    g = ember.compile(f)
    rng = np.random.default_rng(0)
    with ember.no_grad():
        for _ in range(4):
            x = ember.tensor(rng.standard_normal((3, 3)))
            assert np.array_equal(g(x).numpy(), f(x).numpy())
    assert g.stats["replays"] == 2

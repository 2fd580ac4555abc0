"""``Tensor.repeat`` returns new contiguous memory, as PyTorch's: it was a stride-0 view of the input whenever the
repeated dims had size 1 (``eye(3)[None].repeat(2, 1, 1)``), which in-place writes then refused (NumPy: read-only;
torch: overlapping memory), and ``repeat(1)`` aliased its input. Found through kornia's ``get_rotation_matrix2d``
(``eye_like(3, x)[:, :2, 2] = center``). Each case runs under PyTorch and Ember alike."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.testing import check_op

torch = pytest.importorskip("torch")

CASES = [((1, 3, 3), (2, 1, 1)), ((2,), (3,)), ((2, 1), (1, 3)), ((2,), (1,)), ((2, 3), (1, 1)), ((3,), (2, 1, 2)),
         ((1, 2), (2, 2)), ((2, 1, 2), (1, 3, 1))]  # fmt: skip


def _run(lib, shape, reps):
    a = lib.tensor(np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape), dtype=lib.float64, requires_grad=True)
    x = a * 1.0
    y = x.repeat(*reps)
    strides = y.stride()
    y2 = y * 1.0
    y2.view(-1)[0] = 100.0  # a write into the result (through a view of it)
    y.mul_(lib.arange(1.0, 1.0 + y.numel(), dtype=lib.float64).reshape(y.shape))  # and into it, in place
    (y * y2).sum().backward()
    return y.detach().numpy(), strides, x.detach().numpy(), a.grad.numpy()


@pytest.mark.parametrize(("shape", "reps"), CASES)
def test_repeat_is_new_memory_like_pytorch(shape, reps):
    got, want = _run(ember, shape, reps), _run(torch, shape, reps)
    np.testing.assert_array_equal(got[0], want[0])
    assert tuple(got[1]) == tuple(want[1])  # contiguous strides, never 0
    np.testing.assert_array_equal(got[2], want[2])  # the input was not written
    np.testing.assert_allclose(got[3], want[3], rtol=1e-12)


def test_repeated_eye_takes_a_slice_write():
    c = np.array([[4.5, 5.5], [5.0, 6.0]])
    out = {}
    for lib in (torch, ember):
        m = lib.eye(3, dtype=lib.float64)[None].repeat(2, 1, 1)
        m[:, :2, 2] = lib.tensor(c)
        out[lib.__name__] = m.numpy()
    np.testing.assert_array_equal(out["ember"], out["torch"])


@pytest.mark.parametrize(("shape", "reps"), CASES[:4])
def test_repeat_gradcheck_and_parity(shape, reps):
    x = np.random.default_rng(0).standard_normal(shape)
    check_op(lambda t: t.repeat(*reps), x, torch_fn=lambda t: t.repeat(*reps), second_order=True)

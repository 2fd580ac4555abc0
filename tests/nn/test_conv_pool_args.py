"""The size arguments of convolution and pooling (``_conv._tuple``): its fast paths for one int and for a tuple of
``n`` ints accept exactly what the general path accepts, and give the same tuples (PyTorch's rules: bools refused,
paddings >= 0, everything else >= 1, one int or a one-element sequence stands for all)."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember._errors import ShapeError, ValueRangeError
from ember.nn.functional._conv import _tuple

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    ("v", "name", "want"),
    [
        (2, "stride", (2, 2)),
        (0, "padding", (0, 0)),
        ((1, 3), "dilation", (1, 3)),
        ((0, 2), "padding", (0, 2)),
        ((4,), "kernel_size", (4, 4)),
        ([1, 2], "stride", (1, 2)),
        (np.int64(3), "stride", (3, 3)),
        ((np.int32(1), 2), "stride", (1, 2)),
        (torch.Size([2, 3]), "kernel_size", (2, 3)),  # a tuple subclass: the general path
    ],
)
def test_accepted_sizes(v, name, want):
    got = _tuple(v, 2, name, "op")
    assert got == want and type(got) is tuple and all(type(a) is int for a in got)


@pytest.mark.parametrize(
    ("v", "name", "err"),
    [
        (True, "stride", ShapeError),
        ((1, True), "stride", ShapeError),
        ((False, 0), "padding", ShapeError),
        (0, "stride", ValueRangeError),
        (-1, "padding", ValueRangeError),
        ((1, 0), "dilation", ValueRangeError),
        ((0, -1), "padding", ValueRangeError),
        ((1, 2, 3), "stride", ShapeError),
        ((1.0, 2), "stride", ShapeError),
        ("2", "stride", ShapeError),
    ],
)
def test_refused_sizes(v, name, err):
    with pytest.raises(err):
        _tuple(v, 2, name, "op")


@pytest.mark.parametrize("stride", [1, 2, (2, 1), (1,)])
@pytest.mark.parametrize("padding", [0, 1, (2, 0)])
def test_conv_and_pool_match_torch(stride, padding):
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((2, 3, 9, 8)), rng.standard_normal((4, 3, 3, 3)), rng.standard_normal(4)
    got = F.conv2d(ember.tensor(x), ember.tensor(w), ember.tensor(b), stride=stride, padding=padding)
    t_stride = stride * 2 if isinstance(stride, tuple) and len(stride) == 1 else stride
    tx, tw, tb = torch.tensor(x), torch.tensor(w), torch.tensor(b)
    want = torch.nn.functional.conv2d(tx, tw, tb, stride=t_stride, padding=padding)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    k = (3, 2)
    p = tuple(min(v, 1) for v in ((padding,) * 2 if isinstance(padding, int) else padding))  # at most half the kernel
    got = F.max_pool2d(ember.tensor(x), k, stride=stride, padding=p)
    want = torch.nn.functional.max_pool2d(tx, k, stride=t_stride, padding=p)
    np.testing.assert_array_equal(got.numpy(), want.numpy())

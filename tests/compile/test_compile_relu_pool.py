"""``ember.compile``'s exact rewrite of a Sequential's ReLU followed by a max pooling (``nn/_fuse.py``): recorded
pool first, so every replay runs the ReLU on the pooled elements; outputs and input gradients keep eager's bits
(ties, exact zeros, -0.0 in windows whose maximum is at most 0, inf/NaN/-0.0 gradients, NaN inputs, overlapping,
padded and dilated windows, 1-3 spatial dims). Off on other backends, with hooks, subclasses, ``return_indices``."""

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.backends import get_backend

NUMPY = get_backend().name == "numpy"
rng = np.random.default_rng(21)

POOLS = [  # (spatial, pool module)
    ((6, 8), lambda: nn.MaxPool2d(2)),
    ((7, 9), lambda: nn.MaxPool2d(2)),  # odd: the last row and column left out
    ((9, 11), lambda: nn.MaxPool2d(3, 2, 1)),  # overlapping, padded
    ((9, 11), lambda: nn.MaxPool2d(3, 2, 1, ceil_mode=True)),
    ((9, 9), lambda: nn.MaxPool2d(3)),  # disjoint, the general pass
    ((10, 10), lambda: nn.MaxPool2d(2, 2, 1, dilation=2)),
    ((12,), lambda: nn.MaxPool1d(2)),
    ((4, 6, 6), lambda: nn.MaxPool3d(2)),
]


def _data(shape, nan):
    a = np.round(rng.standard_normal(shape) * 1.5)  # ties and exact zeros
    flat = a.reshape(-1)
    flat[::7] = -0.0
    if len(shape) == 4 and shape[2] >= 2 and shape[3] >= 2:
        a[0, 0, :2, :2] = [[-1.0, -0.0], [-2.0, -3.0]]  # a maximum of -0.0 after a smaller element
        a[0, 1, :2, :2] = [[-0.0, -1.0], [0.0, -0.0]]
    if nan:
        flat[5::41] = np.nan
    return a


def _grad(y_shape):
    g = np.round(rng.standard_normal(y_shape) * 3)
    flat = g.reshape(-1)
    flat[::5], flat[1::6], flat[2::9] = -0.0, np.inf, np.nan
    return g


def _bits(t):
    a = t.detach().numpy()
    return a.view(f"u{a.itemsize}")


@pytest.fixture
def relu_inputs(monkeypatch):
    """The shapes the ReLU modules see (a spy on ``ReLU.fn``)."""
    seen = []
    act = nn.ReLU.fn

    def spy(x):
        seen.append(tuple(x.shape))
        return act(x)

    monkeypatch.setattr(nn.ReLU, "fn", staticmethod(spy))
    return seen


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("nan", [False, True])
@pytest.mark.parametrize("spatial,pool", POOLS)
def test_relu_pool_replays_keep_eager_bits(relu_inputs, spatial, pool, nan, dtype):
    seq = nn.Sequential(nn.ReLU(), pool(), nn.Flatten())

    def step(x, g):
        x.grad = None
        y = seq(x)
        (y * g).sum().backward()
        return y

    compiled = ember.compile(step)
    shape = (3, 2, *spatial)
    y_shape = tuple(seq(ember.zeros(shape)).shape)
    for i in range(4):
        a, g = _data(shape, nan), _grad(y_shape)
        xe = ember.tensor(a, dtype=dtype, requires_grad=True)
        ye = step(xe, ember.tensor(g, dtype=dtype))
        relu_inputs.clear()
        xc = ember.tensor(a, dtype=dtype, requires_grad=True)
        yc = compiled(xc, ember.tensor(g, dtype=dtype))
        np.testing.assert_array_equal(_bits(yc), _bits(ye))
        np.testing.assert_array_equal(_bits(xc.grad), _bits(xe.grad))
        if i == 0:  # the capture: pool first on NumPy
            assert relu_inputs == [(y_shape[0], 2, *pool()(ember.zeros(shape)).shape[2:])] if NUMPY else [shape]
    assert compiled.stats["replays"] >= 2


def test_lenet5_compiled_relu_runs_on_pooled_planes(relu_inputs):
    from ember.models import LeNet5Config

    ember.manual_seed(0)
    m = LeNet5Config().init()
    step = ember.compile(lambda x: m(x).sum())
    step(ember.randn(4, 1, 28, 28))
    want = [(4, 6, 14, 14), (4, 16, 5, 5)] if NUMPY else [(4, 6, 28, 28), (4, 16, 10, 10)]
    assert relu_inputs[:2] == want


class _MyReLU(nn.ReLU):
    pass


@pytest.mark.parametrize(
    "make",
    [
        lambda: (nn.ReLU(), nn.MaxPool2d(2, return_indices=True)),
        lambda: (_MyReLU(), nn.MaxPool2d(2)),
        lambda: (nn.ReLU(), nn.AvgPool2d(2)),
        lambda: (nn.MaxPool2d(2), nn.ReLU()),
    ],
)
def test_other_pairs_are_recorded_as_written(relu_inputs, make):
    a, b = make()
    seq = nn.Sequential(a, b)
    ember.compile(lambda x: seq(x))(ember.randn(2, 3, 8, 8))
    assert relu_inputs[0] == ((2, 3, 8, 8) if isinstance(a, nn.ReLU) else (2, 3, 4, 4))


@pytest.mark.parametrize("where", ["relu_fwd", "relu_pre", "pool_fwd", "pool_pre"])
def test_hooks_keep_the_order(relu_inputs, where):
    relu, pool = nn.ReLU(), nn.MaxPool2d(2)
    seen = []
    mod = relu if where.startswith("relu") else pool
    if where.endswith("pre"):
        mod.register_forward_pre_hook(lambda m, args: seen.append(tuple(args[0].shape)))
    else:
        mod.register_forward_hook(lambda m, args, out: seen.append(tuple(out.shape)))
    seq = nn.Sequential(relu, pool)
    ember.compile(lambda x: seq(x).sum())(ember.randn(2, 3, 8, 8))
    assert relu_inputs[0] == (2, 3, 8, 8)
    assert seen[0] == {"relu_fwd": (2, 3, 8, 8), "relu_pre": (2, 3, 8, 8), "pool_fwd": (2, 3, 4, 4),
                       "pool_pre": (2, 3, 8, 8)}[where]  # fmt: skip


def test_eager_keeps_pytorch_order(relu_inputs):
    seq = nn.Sequential(nn.ReLU(), nn.MaxPool2d(2))
    y = seq(ember.randn(2, 3, 8, 8, requires_grad=True))
    assert relu_inputs == [(2, 3, 8, 8)]
    assert y.grad_fn.name().startswith("MaxPool")

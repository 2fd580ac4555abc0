"""A gradient has its tensor's shape, 0-d included, however many paths reach the leaf (issue 29).

``x.grad`` of a 0-d leaf came back with shape (1,) (NumPy's ``ascontiguousarray`` makes 0-d arrays 1-d),
and PyTorch's own ``dynamic_net.py`` tutorial crashed at random on it. The same code runs under torch.
"""

import math
import random

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("L", [ember, torch], ids=lambda m: m.__name__)
@pytest.mark.parametrize("expr", [
    lambda L, x, y: x.sum(),
    lambda L, x, y: x.mean(),
    lambda L, x, y: L.diagflat(x).sum(),
    lambda L, x, y: x + y,
    lambda L, x, y: x * y + x,
    lambda L, x, y: (x * 2).sum() + (y * x).mean(),
    lambda L, x, y: L.stack([x, y, x]).sum(),
    lambda L, x, y: x.reshape(1, 1).expand(2, 3).sum() + y,
])  # fmt: skip
def test_zero_dim_leaves_get_zero_dim_gradients(L, expr):
    x = L.tensor(2.0, requires_grad=True)
    y = L.tensor(3.0, requires_grad=True)
    expr(L, x, y).backward()
    for t in (x, y):
        assert t.grad is None or tuple(t.grad.shape) == (), tuple(t.grad.shape)
    expr(L, x, y).backward()  # a second backward accumulates into the existing gradient
    for t in (x, y):
        assert t.grad is None or tuple(t.grad.shape) == ()


def test_leaves_of_any_shape_reached_by_several_paths():
    for shape in [(), (1,), (3,), (2, 1), (0,), (2, 0, 3)]:
        x = ember.ones(shape, requires_grad=True)
        ((x * 2).sum() + x.mean() + (x + x).sum()).backward()  # (the mean of an empty tensor is NaN)
        assert x.grad.shape == x.shape
        (gx,) = ember.autograd.grad((x * x).sum() + x.sum(), [x])
        assert gx.shape == x.shape


class _Dynamic:
    """PyTorch's examples_nn/dynamic_net.py: five 0-d parameters, ``e`` reused a random number of times."""

    def __init__(self, L, values):
        self.L = L
        self.params = [L.nn.Parameter(L.tensor(v, dtype=L.float64)) for v in values]

    def __call__(self, x):
        a, b, c, d, e = self.params
        y = a + b * x + c * x**2 + d * x**3
        for exp in range(4, random.randint(4, 6)):
            y = y + e * x**exp
        return y


def _train(L, steps=12):
    random.seed(0)
    model = _Dynamic(L, [0.1, -0.2, 0.3, -0.4, 0.5])
    x = L.linspace(-math.pi, math.pi, 200, dtype=L.float64)
    y = L.sin(x)
    criterion = L.nn.MSELoss(reduction="sum")
    opt = L.optim.SGD(model.params, lr=1e-8, momentum=0.9)
    for _ in range(steps):
        loss = criterion(model(x), y)
        opt.zero_grad()
        loss.backward()
        assert all(p.grad is None or tuple(p.grad.shape) == () for p in model.params)
        opt.step()
    return [p.item() for p in model.params]


def test_pytorch_dynamic_net_tutorial_trains_as_in_pytorch():
    np.testing.assert_allclose(_train(ember), _train(torch), rtol=1e-12)

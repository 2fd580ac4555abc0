"""``Tensor.where(condition, other)`` is ``where(condition, self, other)``, as in PyTorch."""

from __future__ import annotations

import numpy as np

import ember
from ember.testing import assert_close


def test_where_method_takes_self_as_the_values(torch) -> None:
    x = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]])
    y = np.array([10.0, 20.0, 30.0])
    xe = ember.tensor(x, requires_grad=True)
    ye = ember.tensor(y, requires_grad=True)
    out = xe.where(xe > 0, ye)
    (out * ember.arange(6.0, dtype=ember.float64).reshape(2, 3)).sum().backward()

    xt = torch.tensor(x, requires_grad=True)
    yt = torch.tensor(y, requires_grad=True)
    ref = xt.where(xt > 0, yt)
    (ref * torch.arange(6.0, dtype=torch.float64).reshape(2, 3)).sum().backward()

    assert_close(out, ref)
    assert_close(xe.grad, xt.grad)
    assert_close(ye.grad, yt.grad)
    assert_close(xe.where(xe > 0, 0.0), xt.where(xt > 0, 0.0))

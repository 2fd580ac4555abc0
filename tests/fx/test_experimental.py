"""``fx.experimental.optimization``: ``fuse`` and ``remove_dropout`` under Ember and PyTorch, same code."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.fx
import ember.fx.experimental.optimization
from ember.testing import torch_or_none

from ._fx_models import load_from_torch, node_list

torch = torch_or_none()
if torch is not None:
    import torch.fx.experimental.optimization
pytestmark = pytest.mark.skipif(torch is None, reason="torch not installed")


def _net(lib):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.b1 = nn.Conv1d(3, 4, 3), nn.BatchNorm1d(4)
            self.c2, self.b2 = nn.Conv2d(4, 4, 1), nn.BatchNorm2d(4)
            self.fc, self.bfc = nn.Linear(4, 6), nn.BatchNorm1d(6)
            self.side, self.bside = nn.Linear(6, 6), nn.BatchNorm1d(6)  # side's output is read twice: not folded
            self.drop = nn.Dropout(0.5)

        def forward(self, x):
            y = self.b1(self.c1(x)).unsqueeze(-1)
            y = self.b2(self.c2(y)).mean((2, 3))
            y = self.drop(self.bfc(self.fc(y)))
            s = self.side(y)
            return self.bside(s) + s

    return Net()


def _pair():
    t = _net(torch).double()
    with torch.no_grad():
        for m in t.modules():
            if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
                m.running_mean.uniform_(-0.5, 0.5), m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5), m.bias.uniform_(-0.5, 0.5)
    e = _net(ember).double()
    load_from_torch(e, t)
    return e.eval(), t.eval()


def test_fuse_and_remove_dropout_match_pytorch():
    e, t = _pair()
    x = np.random.default_rng(4).standard_normal((5, 3, 7))
    e_f, t_f = ember.fx.experimental.optimization.fuse(e), torch.fx.experimental.optimization.fuse(t)
    assert node_list(e_f) == node_list(t_f)
    assert sorted(n for n, _ in e_f.named_modules()) == sorted(n for n, _ in t_f.named_modules())
    eager = e(ember.tensor(x)).detach().numpy()
    np.testing.assert_allclose(e_f(ember.tensor(x)).detach().numpy(), eager, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(
        e_f(ember.tensor(x)).detach().numpy(), t_f(torch.tensor(x)).detach().numpy(), rtol=1e-9, atol=1e-11
    )
    assert isinstance(e.b1, ember.nn.BatchNorm1d), "fuse works on a copy unless inplace"
    e_d = ember.fx.experimental.optimization.remove_dropout(e.train())
    t_d = torch.fx.experimental.optimization.remove_dropout(t.train())
    assert node_list(e_d) == node_list(t_d) and ("call_module", "drop") not in node_list(e_d)

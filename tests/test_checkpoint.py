"""``ember.utils.checkpoint``: the same calls as ``torch.utils.checkpoint`` give the same outputs and gradients
(inputs and the parameters used inside); dropout inside a checkpoint draws the same mask when recomputed."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import ember
from ember.utils.checkpoint import checkpoint

torch = pytest.importorskip("torch")


def _net(lib):
    net = lib.nn.Sequential(
        lib.nn.Linear(4, 8), lib.nn.Tanh(), lib.nn.Linear(8, 8), lib.nn.Tanh(), lib.nn.Linear(8, 3), lib.nn.Tanh(),
        lib.nn.Linear(3, 2),
    ).double()  # fmt: skip
    for i, p in enumerate(net.parameters()):
        with lib.no_grad():
            p.copy_(lib.tensor(np.sin(np.arange(p.numel()) * 0.3 + i).reshape(tuple(p.shape))))
    return net


def _run(lib):
    ck = importlib.import_module(lib.__name__ + ".utils.checkpoint")
    net = _net(lib)
    x = lib.tensor(np.cos(np.arange(12.0)).reshape(3, 4), requires_grad=True)
    h = ck.checkpoint(lambda a, scale: net[2](net[1](net[0](a))) * scale, x, 2.0, use_reentrant=False)
    y = net[6](net[5](net[4](net[3](h))))
    (y**2).sum().backward()
    out = [y.detach().numpy(), x.grad.numpy(), net[0].weight.grad.numpy(), net[4].weight.grad.numpy()]
    for p in net.parameters():
        p.grad = None
    x.grad = None
    y2 = ck.checkpoint_sequential(net, 3, x, use_reentrant=False)
    (y2**2).sum().backward()
    return out + [y2.detach().numpy(), x.grad.numpy(), net[2].weight.grad.numpy()]


def test_checkpoint_matches_torch():
    for g, w in zip(_run(ember), _run(torch), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def _dropout_step(use_checkpoint):
    ember.manual_seed(3)
    lin = ember.nn.Linear(5, 5)
    x = ember.randn(4, 5, requires_grad=True)

    def block(a):
        return ember.nn.functional.dropout(lin(a), 0.5, training=True).tanh()

    y = checkpoint(block, x, use_reentrant=False) if use_checkpoint else block(x)
    y.sum().backward()
    after = ember.rand(3)  # the generator after backward: the recomputation put it back
    return y.detach().numpy(), x.grad.numpy(), lin.weight.grad.numpy(), after.numpy()


def test_dropout_recomputes_the_same_mask_and_restores_the_generator():
    for a, b in zip(_dropout_step(True), _dropout_step(False), strict=True):
        np.testing.assert_array_equal(a, b)


def test_outside_grad_mode_it_is_a_plain_call():
    with ember.no_grad():
        y = checkpoint(lambda a: a * 2, ember.ones(2, requires_grad=True))
    assert not y.requires_grad and y.tolist() == [2.0, 2.0]

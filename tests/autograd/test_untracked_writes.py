"""Writes autograd does not track, as PyTorch: through ``.data`` (its own version counter) and to the inputs a custom
Function did not save (only ``save_for_backward``'s tensors are checked). Found through torchdiffeq, whose
Runge-Kutta steps fill a scratch tensor with ``scratch.data[index] = value`` inside a Function that saves nothing.
Each program runs under PyTorch and Ember alike."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])


@LIBS
def test_data_has_its_own_version_counter(lib):
    x = lib.zeros(3)
    v = x._version
    x.data[0] = 5.0
    d = x.data
    d.add_(1.0)
    assert x._version == v and d._version == 1  # the writes reached x's values, not its version
    assert x.tolist() == [6.0, 1.0, 1.0]
    x.add_(1.0)
    assert x._version == v + 1 and x.detach()._version == x._version  # (detach() shares it)


def _unchecked_assign(lib):
    class UncheckedAssign(lib.autograd.Function):  # torchdiffeq's _UncheckedAssign
        @staticmethod
        def forward(ctx, scratch, value, index):
            ctx.index = index
            scratch.data[index] = value
            return scratch

        @staticmethod
        def backward(ctx, grad_scratch):
            return grad_scratch, grad_scratch[ctx.index], None

    return UncheckedAssign


def _rk_like(lib):
    """A scratch tensor filled column by column through .data while earlier columns feed later ones."""
    assign = _unchecked_assign(lib)
    w = lib.tensor(np.linspace(-1.0, 1.0, 6).reshape(2, 3), requires_grad=True)
    y0 = lib.tensor([0.5, -0.2, 0.3], requires_grad=True)
    k = lib.empty(3, 3)
    k = assign.apply(k, y0 * 2.0, (..., 0))
    for i in range(2):
        yi = y0 + (k[..., : i + 1] * 0.5).sum(-1)  # reads columns 0..i: a saved view of k
        k = assign.apply(k, lib.tanh(yi * w[i]), (..., i + 1))
    loss = (k * lib.arange(9.0).reshape(3, 3)).sum()
    loss.backward()
    return loss.item(), w.grad.numpy(), y0.grad.numpy()


def test_scratch_filled_through_data_gives_pytorchs_gradients():
    got, want = _rk_like(ember), _rk_like(torch)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    for g, w in zip(got[1:], want[1:], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert np.abs(got[1]).sum() > 0 and np.abs(got[2]).sum() > 0


def _functions(lib):
    class Double(lib.autograd.Function):  # saves nothing
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Square(lib.autograd.Function):  # saves its input
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    return Double, Square


@LIBS
def test_function_checks_only_what_it_saved(lib):
    double, square = _functions(lib)
    a = lib.ones(3, requires_grad=True)
    x = a.clone()
    y = double.apply(x)
    x.add_(1.0)  # an input it did not save: allowed
    y.sum().backward()
    assert a.grad.tolist() == [2.0, 2.0, 2.0]
    b = lib.ones(3, requires_grad=True)
    x = b.clone()
    y = square.apply(x)
    x.add_(1.0)  # the input it saved: refused at backward
    with pytest.raises(RuntimeError, match="modified"):
        y.sum().backward()

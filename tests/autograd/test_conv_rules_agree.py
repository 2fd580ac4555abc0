"""A convolution's gradients are the same bits whichever rule of its node runs: the array rule (a plain
``backward``), the rule on Tensors (``create_graph=True``, ``saved_tensors_hooks``), as PyTorch's, which computes
them all with ``convolution_backward``. On CUDA the rule on Tensors once took the input gradient from cuDNN's
transposed convolution, which rounded the last bit otherwise (H200, float64); its first-order gradients now come
from the array rule's kernel, ``conv_backward``, on every backend (NumPy's ``conv_weight`` too summed in another
order for some strides and paddings)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

CONVS = {
    "1d_stride_groups": ("conv1d", (2, 4, 9), (6, 2, 3), dict(stride=2, padding=1, groups=2)),
    "2d_dilation": ("conv2d", (1, 3, 8, 8), (5, 3, 3, 3), dict(padding=2, dilation=2)),
    "2d_same_even_kernel": ("conv2d", (2, 3, 7, 6), (4, 3, 2, 2), dict(padding="same")),
    "2d_stride_output_padding": ("conv2d", (2, 2, 8, 7), (3, 2, 3, 3), dict(stride=3, padding=1)),
    "3d": ("conv3d", (1, 2, 5, 4, 4), (3, 2, 2, 2, 2), {}),
}


@pytest.fixture(autouse=True)
def _deterministic(monkeypatch):
    if ember.get_default_device().type == "cuda":  # bits equal between calls: cuDNN's deterministic algorithms
        monkeypatch.setattr(ember.backends.cudnn, "deterministic", True)


def _grads(name, xs, ws, kw, dtype, how):
    rng = np.random.default_rng(3)
    x = ember.tensor(rng.standard_normal(xs), dtype=dtype, requires_grad=True)
    w = ember.tensor(rng.standard_normal(ws), dtype=dtype, requires_grad=True)
    conv = getattr(ember.nn.functional, name)
    if how == "hooks":
        with ember.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
            y = conv(x, w, None, **kw)
    else:
        y = conv(x, w, None, **kw)
    g = ember.tensor(rng.standard_normal(tuple(y.shape)), dtype=dtype)
    gx, gw = ember.autograd.grad(y, (x, w), g, create_graph=how == "create_graph")
    return [t.detach().cpu().numpy() for t in (gx, gw)], (x, w, g)


@pytest.mark.filterwarnings("ignore:Using padding='same'")  # (PyTorch's note on an even kernel)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", sorted(CONVS))
def test_every_rule_gives_the_same_bits_and_pytorchs_values(case, dtype):
    name, xs, ws, kw = CONVS[case]
    d = getattr(ember, dtype)
    plain, (x, w, g) = _grads(name, xs, ws, kw, d, "plain")
    for how in ("create_graph", "hooks"):
        other, _ = _grads(name, xs, ws, kw, d, how)
        for a, b in zip(other, plain, strict=True):
            np.testing.assert_array_equal(a, b, err_msg=how)
    tx, tw = (torch.tensor(t.detach().cpu().numpy(), requires_grad=True) for t in (x, w))
    ty = getattr(torch.nn.functional, name)(tx, tw, None, **kw)
    want = torch.autograd.grad(ty, (tx, tw), torch.tensor(g.cpu().numpy()))
    tol = 1e-12 if dtype == "float64" else 1e-5
    for a, b in zip(plain, want, strict=True):
        np.testing.assert_allclose(a, b.numpy(), rtol=tol, atol=tol)


def test_the_rule_on_tensors_calls_the_array_rules_kernel(monkeypatch):
    """``create_graph``'s first-order gradients come from ``conv_backward`` (input only, then weight only), the
    kernel of the array rule, not from ``conv_transpose``/``conv_weight``; the double backward stays right."""
    x = ember.randn(2, 3, 6, 6, dtype=ember.float64, requires_grad=True)
    w = ember.randn(4, 3, 3, 3, dtype=ember.float64, requires_grad=True)
    cls, calls = type(x._backend), []
    for name in ("conv_backward", "conv_transpose", "conv_weight"):
        kernel = getattr(cls, name)
        spy = lambda self, *a, _n=name, _k=kernel: calls.append((_n, *a[-2:])) or _k(self, *a)
        monkeypatch.setattr(cls, name, spy)
    f = lambda a, b: ember.nn.functional.conv2d(a, b, None, stride=2, padding=1)
    ember.autograd.grad(f(x, w).square().sum(), (x, w), create_graph=True)
    assert calls == [("conv_backward", True, False), ("conv_backward", False, True)]
    monkeypatch.undo()
    assert ember.autograd.gradgradcheck(f, (x, w))

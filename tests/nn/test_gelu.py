"""GELU as one operator (``Gelu``/``GeluTanh`` over the backend kernels ``gelu``/``gelu_backward``): gradcheck,
parity with PyTorch (values, views, 0-d, half precision, extremes), second order, anomaly mode, and what its
node keeps."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.testing import assert_close, check_op, torch_or_none

rng = np.random.default_rng(28)
MODES = ["none", "tanh"]


def TF():
    return __import__("torch").nn.functional


def _gelu(mode):
    return lambda x: F.gelu(x, approximate=mode)


def _tgelu(mode):
    return lambda x: TF().gelu(x, approximate=mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "label,x",
    [
        ("vector", rng.standard_normal(11) * 3),
        ("matrix", rng.standard_normal((4, 7)) * 2),
        ("scalar", np.array(0.7)),
        ("wide", np.linspace(-8.0, 8.0, 33)),
    ],
)
def test_gelu_check_op(mode, label, x):
    check_op(_gelu(mode), x, torch_fn=_tgelu(mode), second_order=True, name=f"gelu_{mode}_{label}")


@pytest.mark.parametrize("mode", MODES)
def test_gelu_of_a_view(mode):
    """A transposed, strided view in: the same values and gradients as on a contiguous copy."""
    base = rng.standard_normal((6, 8))
    check_op(
        lambda a: F.gelu(a.t()[::2], approximate=mode), base, torch_fn=lambda a: TF().gelu(a.t()[::2], approximate=mode)
    )


@pytest.mark.parametrize("mode", MODES)
def test_gelu_kernels_against_torch_at_extremes(mode):
    """Large, tiny and zero inputs: finite, and equal to torch's gelu and gelu_backward (float32 and float64)."""
    torch = torch_or_none()
    if torch is None:
        pytest.skip("torch is not installed")
    xs = np.array([-1e4, -40.0, -9.0, -5.5, -1e-20, 0.0, 1e-20, 5.5, 9.0, 40.0, 1e4])
    for dt in ("float32", "float64"):
        x = ember.tensor(xs, dtype=getattr(ember, dt), requires_grad=True)
        y = F.gelu(x, approximate=mode)
        g = ember.ones_like(y) * 0.5
        (gx,) = ember.autograd.grad(y, [x], g)
        tx = torch.tensor(xs, dtype=getattr(torch, dt), requires_grad=True)
        ty = TF().gelu(tx, approximate=mode)
        (tgx,) = torch.autograd.grad(ty, [tx], torch.full_like(ty, 0.5))
        assert np.isfinite(y.detach().numpy()).all() and np.isfinite(gx.numpy()).all()
        tol = 1e-6 if dt == "float32" else 1e-12
        assert_close(y, ty, rtol=tol, atol=tol, msg=f"gelu {mode} {dt}")
        assert_close(gx, tgx, rtol=tol, atol=tol, msg=f"gelu_backward {mode} {dt}")


@pytest.mark.parametrize("mode", MODES)
def test_gelu_half_precision_is_computed_in_float32(mode):
    """float16 in, float16 out, rounded once from a float32 computation (PyTorch's opmath)."""
    x32 = (rng.standard_normal(64) * 3).astype(np.float32)
    x = ember.tensor(x32, dtype=ember.float16, requires_grad=True)
    y = F.gelu(x, approximate=mode)
    assert y.dtype is ember.float16
    y.backward(ember.ones_like(y))
    ref = F.gelu(ember.tensor(x.detach().numpy().astype(np.float32)), approximate=mode).numpy()
    np.testing.assert_array_equal(y.detach().numpy(), ref.astype(np.float16))
    assert x.grad.dtype is ember.float16
    torch = torch_or_none()
    if torch is not None:
        tx = torch.tensor(x.detach().numpy(), requires_grad=True)
        ty = TF().gelu(tx, approximate=mode)
        ty.backward(torch.ones_like(ty))
        assert_close(y, ty, rtol=2e-3, atol=1e-3)
        assert_close(x.grad, tx.grad, rtol=2e-3, atol=1e-3)


@pytest.mark.parametrize("mode", MODES)
def test_gelu_is_one_node_keeping_its_input(mode):
    """One node (no Tensor ops in backward at first order), which keeps the input and no output."""
    x = ember.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    h = x * 1.0
    y = F.gelu(h, approximate=mode)
    node = y.grad_fn
    assert type(node).__name__ == ("Gelu" if mode == "none" else "GeluTanh")
    assert node.inputs[0] is h and not node._outs
    y.sum().backward()
    assert x.grad.shape == (3, 4)


@pytest.mark.parametrize("mode", MODES)
def test_gelu_anomaly_mode_and_create_graph_agree_with_the_kernel(mode):
    x0 = rng.standard_normal(9)
    grads = []
    for ctx in ("plain", "anomaly", "create_graph"):
        x = ember.tensor(x0, requires_grad=True)
        if ctx == "anomaly":
            with ember.autograd.detect_anomaly():
                (gx,) = ember.autograd.grad(F.gelu(x, approximate=mode).sum(), [x])
        else:
            (gx,) = ember.autograd.grad(F.gelu(x, approximate=mode).sum(), [x], create_graph=ctx == "create_graph")
        grads.append(gx.detach().numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=0, atol=0)
    np.testing.assert_allclose(grads[2], grads[0], rtol=1e-13, atol=1e-15)


def test_gelu_in_place_change_of_its_input_is_an_error():
    x = ember.tensor(rng.standard_normal(5), requires_grad=True)
    h = x * 2.0
    y = F.gelu(h)
    h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()


def test_gelu_rejects_unknown_approximation():
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh'"):
        F.gelu(ember.ones(2), approximate="fast")


@pytest.mark.parametrize("mode", MODES)
def test_gelu_float32_accuracy_over_several_blocks(mode):
    """float32 over [-9, 9] in several blocks (the NumPy kernel's tanh-of-a-polynomial Phi for exact GELU): within
    a few ulp of the float64 result (the bounds the kernel's docstring states), and PyTorch's non-finite results."""
    xs = np.concatenate([np.linspace(-9.0, 9.0, 150_001), [np.inf, -np.inf, np.nan]])
    x32 = ember.tensor(xs, dtype=ember.float32, requires_grad=True)
    x64 = ember.tensor(xs, dtype=ember.float64, requires_grad=True)
    ys, ds = [], []
    for x in (x32, x64):
        y = F.gelu(x, approximate=mode)
        (d,) = ember.autograd.grad(y, [x], ember.ones_like(y))
        ys.append(y.detach().numpy().astype(np.float64))
        ds.append(d.numpy().astype(np.float64))
    fin = slice(0, -3)
    dtol = 4e-7 if mode == "none" else 2e-6  # (torch's own float32 tanh-GELU gradient is 1.04e-6 off)
    assert np.abs(ys[0][fin] - ys[1][fin]).max() <= 2e-6
    assert np.abs(ds[0][fin] - ds[1][fin]).max() <= dtol
    on_torch = x32._backend.name == "torch"  # (torch's kernel: its +inf answer is the processor's, see below)
    np.testing.assert_array_equal(ys[0][-3 + on_torch :], [np.inf, np.nan, np.nan][on_torch:])
    assert np.isnan(ds[0][-3:]).all() and np.isnan(ds[1][-3:]).all()
    torch = torch_or_none()
    if torch is not None:
        # on Ember's device where torch has it (torch 2.11's CPU kernel gave NaN for gelu(inf) on the GPU machine)
        dev = str(x32.device) if x32.device.type == "cpu" or torch.cuda.is_available() else "cpu"
        tx = torch.tensor(xs, dtype=torch.float32, device=dev, requires_grad=True)
        ty = TF().gelu(tx, approximate=mode)
        (td,) = torch.autograd.grad(ty, [tx], torch.ones_like(ty))
        # at +inf torch's answer depends on the processor: NaN from its AVX-512 vector kernel (2.13 here), inf from
        # its scalar or AVX2 path; NumPy's Ember gives inf (asserted above), the torch backend torch's answer
        keep = np.ones_like(xs, bool) if on_torch else ~np.isposinf(xs)
        np.testing.assert_array_equal(np.isnan(ys[0])[keep], np.isnan(ty.detach().cpu().numpy())[keep])
        np.testing.assert_array_equal(np.isnan(ds[0])[keep], np.isnan(td.cpu().numpy())[keep])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gelu_backward_kernel_with_and_without_the_forward_saved_derivative(mode, dtype):
    """``gelu_backward(g, x)`` (torch's signature) and ``gelu_backward(g, x, saved=...)`` from ``gelu(keep=True)``
    agree, on a size spanning several blocks and on a broadcast gradient."""
    be = ember.zeros(1)._backend
    x = be.asarray((rng.standard_normal(150_001) * 3).astype(dtype))
    g = be.asarray(rng.standard_normal(150_001).astype(dtype))
    y, saved = be.gelu(x, mode, True)
    y0, none = be.gelu(x, mode)
    assert none is None
    np.testing.assert_array_equal(be.to_numpy(y), be.to_numpy(y0))
    tol = dict(rtol=1e-6, atol=1e-7) if dtype == "float32" else dict(rtol=1e-13, atol=0)
    for gg in (g, be.xp.broadcast_to(g[:1], g.shape)):
        np.testing.assert_allclose(
            be.to_numpy(be.gelu_backward(gg, x, mode)), be.to_numpy(be.gelu_backward(gg, x, mode, saved)), **tol
        )

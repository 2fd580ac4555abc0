"""Backend kernels: torch's native overrides against the reference kernels (NumPy), on plain arrays.

The reference kernels are checked against PyTorch through the operators (tests/nn); here every torch
override must give the reference's results for the same arguments, forward and backward, contiguous.
"""

import numpy as np
import pytest

from ember.backends.numpy_backend import NumpyBackend

torch = pytest.importorskip("torch")
from ember.backends.torch.kernels import TorchKernels  # noqa: E402

REF = NumpyBackend()  # the reference kernels, whichever backend serves the CPU in this run
rng = np.random.default_rng(11)


class _TorchOnly(TorchKernels):
    """The torch kernels alone (the torch backend mixes them in before the reference)."""


TK = _TorchOnly()


def _t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def close(t, a, tol=1e-10):
    assert t.is_contiguous()
    assert tuple(t.shape) == tuple(a.shape)
    np.testing.assert_allclose(t.numpy(), a, rtol=tol, atol=tol)


CONV = [  # x shape, w shape, stride, pads, dilation, groups
    ((2, 3, 7, 6), (4, 3, 3, 2), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    ((1, 4, 8, 8), (6, 2, 3, 3), (2, 1), ((1, 1), (2, 2)), (1, 2), 2),
    ((2, 2, 6, 5), (3, 2, 2, 3), (1, 1), ((0, 1), (1, 1)), (1, 1), 1),  # uneven: padding='same'
    ((2, 3, 9), (6, 1, 3), (2,), ((2, 2),), (2,), 3),
    ((1, 2, 4, 5, 4), (3, 2, 2, 3, 2), (1, 2, 1), ((1, 1), (0, 0), (1, 1)), (1, 1, 2), 1),
    ((3, 4, 5, 5), (4, 4, 1, 1), (2, 2), ((0, 0), (0, 0)), (1, 1), 1),
]


@pytest.mark.parametrize("case", range(len(CONV)))
def test_torch_conv_kernels_match_the_reference(case):
    xs, ws, s, pads, d, groups = CONV[case]
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    y, saved = REF.conv(x, w, s, pads, d, groups, True)
    yt, _ = TK.conv(_t(x), _t(w), s, pads, d, groups, True)
    close(yt, y)
    g = rng.standard_normal(y.shape)
    gx, gw = REF.conv_backward(g, x, w, saved, s, pads, d, groups)
    gxt, gwt = TK.conv_backward(_t(g), _t(x), _t(w), None, s, pads, d, groups)
    close(gxt, gx)
    close(gwt, gw)
    close(TK.conv_transpose(_t(g), _t(w), s, pads, d, groups, xs), REF.conv_transpose(g, w, s, pads, d, groups, xs))
    close(TK.conv_weight(_t(x), _t(g), s, pads, d, groups, ws), REF.conv_weight(x, g, s, pads, d, groups, ws))
    b = rng.standard_normal(ws[0])
    yb = REF.conv(x, w, s, pads, d, groups, bias=b)[0]
    np.testing.assert_allclose(yb, y + b.reshape((-1,) + (1,) * (len(xs) - 2)), rtol=1e-12, atol=1e-12)
    close(TK.conv(_t(x), _t(w), s, pads, d, groups, bias=_t(b))[0], yb)
    only_w = TK.conv_backward(_t(g), _t(x), _t(w), None, s, pads, d, groups, False, True)
    assert only_w[0] is None
    close(only_w[1], gw)


def test_torch_unfold_fold_match_the_reference():
    x = rng.standard_normal((2, 3, 6, 7))
    args = ((2, 3), (1, 2), ((1, 1), (2, 2)), (2, 1))
    cols = REF.unfold(x, *args)
    close(TK.unfold(_t(x), *args), cols)
    close(TK.fold(_t(cols), x.shape, *args), REF.fold(cols, x.shape, *args))


POOL = [  # x shape, kernel, stride, padding, dilation, ceil_mode
    ((2, 3, 6, 6), (2, 2), (2, 2), (0, 0), (1, 1), False),
    ((1, 2, 7, 7), (3, 3), (2, 2), (1, 1), (1, 1), True),
    ((1, 2, 8, 9), (2, 3), (1, 2), (1, 0), (2, 1), False),
    ((2, 2, 10), (3,), (2,), (1,), (2,), True),
    ((1, 2, 4, 5, 6), (2, 2, 2), (2, 1, 2), (1, 0, 1), (1, 1, 1), False),
]


@pytest.mark.parametrize("case", range(len(POOL)))
def test_torch_max_pool_kernels_match_the_reference(case):
    xs, k, s, p, d, ceil = POOL[case]
    x = np.maximum(np.round(rng.standard_normal(xs), 1), 0)  # ties: the first maximum must win in both
    y, _ = REF.max_pool(x, k, s, p, d, ceil)
    for save in (False, True):
        yt, saved = TK.max_pool(_t(x), k, s, p, d, ceil, save=save)
        close(yt, y)
        g = rng.standard_normal(y.shape)
        close(TK.max_pool_backward(_t(g), _t(x), yt, saved, k, s, p, d, ceil),
              REF.max_pool_backward(g, x, y, None, k, s, p, d, ceil))  # fmt: skip
        idx = TK.max_pool_indices(_t(x), yt, saved, k, s, p, d, ceil)
        np.testing.assert_array_equal(idx.numpy(), REF.max_pool_indices(x, y, None, k, s, p, d, ceil))


@pytest.mark.parametrize("case", range(len(POOL)))
@pytest.mark.parametrize("include_pad,divisor", [(True, None), (False, None), (True, 3)])
def test_torch_avg_pool_kernels_match_the_reference(case, include_pad, divisor):
    xs, k, s, p, _, ceil = POOL[case]
    x = rng.standard_normal(xs)
    y = REF.avg_pool(x, k, s, p, ceil, include_pad, divisor)
    close(TK.avg_pool(_t(x), k, s, p, ceil, include_pad, divisor), y)
    g = rng.standard_normal(y.shape)
    close(TK.avg_pool_backward(_t(g), xs, k, s, p, ceil, include_pad, divisor),
          REF.avg_pool_backward(g, xs, k, s, p, ceil, include_pad, divisor))  # fmt: skip


def test_torch_kernels_never_record_a_graph():
    x = _t(rng.standard_normal((1, 2, 5, 5))).requires_grad_()
    w = _t(rng.standard_normal((3, 2, 3, 3))).requires_grad_()
    y, _ = TK.conv(x, w, (1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    assert y.grad_fn is None and not y.requires_grad
    assert torch.is_grad_enabled()  # the kernel switched grad mode off only while it ran
    with pytest.raises(RuntimeError):
        TK.conv(x, w[:, :1], (1, 1), ((1, 1), (1, 1)), (1, 1), 1)  # channel mismatch inside torch
    assert torch.is_grad_enabled()
    with torch.no_grad():
        TK.conv(x, w, (1, 1), ((1, 1), (1, 1)), (1, 1), 1)
        assert not torch.is_grad_enabled()


@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 4), (2, 3, 4, 5), (1, 3, 2, 2, 2)])
@pytest.mark.parametrize("affine", [True, False])
def test_torch_batch_norm_eval_matches_the_reference(shape, affine):
    x = rng.standard_normal(shape)
    mean, var = rng.standard_normal(3), rng.uniform(0.5, 2, 3)
    w, b = (rng.standard_normal(3), rng.standard_normal(3)) if affine else (None, None)
    ref = REF.batch_norm_eval(x, mean, var, w, b, 1e-5)
    sh = (1, 3) + (1,) * (x.ndim - 2)
    expect = (x - mean.reshape(sh)) / np.sqrt(var.reshape(sh) + 1e-5)
    if affine:
        expect = expect * w.reshape(sh) + b.reshape(sh)
    np.testing.assert_allclose(ref, expect, rtol=1e-12, atol=1e-12)
    tw, tb = (_t(w), _t(b)) if affine else (None, None)
    close(TK.batch_norm_eval(_t(x), _t(mean), _t(var), tw, tb, 1e-5), ref)


@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 4), (2, 3, 4, 5), (1, 3, 2, 2, 2)])
@pytest.mark.parametrize("affine", ["both", "weight", "none"])
def test_batch_norm_train_kernels_match_the_closed_form_and_torch(shape, affine):
    x = rng.standard_normal(shape) * 2 + 0.5
    w = rng.standard_normal(3) if affine != "none" else None
    b = rng.standard_normal(3) if affine == "both" else None
    g = rng.standard_normal(shape)
    axes, sh = (0, *range(2, x.ndim)), (1, 3) + (1,) * (x.ndim - 2)
    n = x.size // 3
    mean, var = x.mean(axis=axes), x.var(axis=axes)
    xhat = (x - mean.reshape(sh)) / np.sqrt(var.reshape(sh) + 1e-5)
    wk = np.ones(3) if w is None else w
    expect_y = xhat * wk.reshape(sh) + (0 if b is None else b.reshape(sh))
    gb, gw = g.sum(axis=axes), (g * xhat).sum(axis=axes)
    expect_gx = (wk / np.sqrt(var + 1e-5)).reshape(sh) * (g - gb.reshape(sh) / n - xhat * gw.reshape(sh) / n)

    y, m, v, saved = REF.batch_norm_train(x, w, b, 1e-5)
    for got, want in ((y, expect_y), (m, mean), (v, var)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    gx, gw_, gb_ = REF.batch_norm_train_backward(g, saved, w, True, w is not None, b is not None)
    np.testing.assert_allclose(gx, expect_gx, rtol=1e-10, atol=1e-12)
    assert (gw_ is None) == (w is None) and (gb_ is None) == (b is None)
    if w is not None:
        np.testing.assert_allclose(gw_, gw, rtol=1e-12, atol=1e-12)
    if b is not None:
        np.testing.assert_allclose(gb_, gb, rtol=1e-12, atol=1e-12)
    assert REF.batch_norm_train_backward(g, saved, w, False, False, False) == (None, None, None)

    tw, tb = (None if w is None else _t(w)), (None if b is None else _t(b))
    ty, tm, tv, tsaved = TK.batch_norm_train(_t(x), tw, tb, 1e-5)
    close(ty, y), close(tm, m), close(tv, v, tol=1e-8)
    tgx, tgw, tgb = TK.batch_norm_train_backward(_t(g), tsaved, tw, True, w is not None, b is not None)
    close(tgx, gx)
    assert (tgw is None) == (w is None) and (tgb is None) == (b is None)
    if w is not None:
        close(tgw, gw_)
    if b is not None:
        close(tgb, gb_)


def test_batch_norm_train_kernel_keeps_its_saved_values_private():
    # the output must not alias what backward reads (a user may write the output in place)
    x = rng.standard_normal((4, 3, 2))
    for w, b in ((None, None), (None, np.ones(3)), (np.ones(3), None)):
        y, _, _, (xhat, _) = REF.batch_norm_train(x, w, b, 1e-5)
        assert not np.shares_memory(y, xhat)


@pytest.mark.parametrize("momentum,nesterov,wd,dampening", [(0.0, False, 0.0, 0.0), (0.9, False, 0.01, 0.1),
                                                            (0.9, True, 0.0, 0.0)])  # fmt: skip
def test_torch_sgd_step_matches_the_reference(momentum, nesterov, wd, dampening):
    p0, grads = rng.standard_normal((3, 4)), [rng.standard_normal((3, 4)) for _ in range(3)]
    p, pt = p0.copy(), _t(p0.copy())
    buf = buf_t = None
    for g in grads:
        buf = REF.sgd_step(p, g, buf, 0.1, wd, momentum, dampening, nesterov)
        buf_t = TK.sgd_step(pt, _t(g), buf_t, 0.1, wd, momentum, dampening, nesterov)
        close(pt, p, 1e-12)
    assert (buf is None) == (buf_t is None)


@pytest.mark.parametrize("amsgrad,decoupled,wd", [(False, False, 0.0), (True, False, 0.1), (False, True, 0.01)])
def test_torch_adam_step_matches_the_reference(amsgrad, decoupled, wd):
    p0 = rng.standard_normal((5,))
    state = [np.zeros(5) for _ in range(3)]
    tstate = [torch.zeros(5, dtype=torch.float64) for _ in range(3)]
    p, pt = p0.copy(), _t(p0.copy())
    for step in range(1, 4):
        g = rng.standard_normal(5)
        REF.adam_step(p, g, state[0], state[1], state[2] if amsgrad else None, np.empty(5), step, 0.01, 0.9, 0.99,
                      1e-8, wd, decoupled)  # fmt: skip
        TK.adam_step(pt, _t(g), tstate[0], tstate[1], tstate[2] if amsgrad else None, None, step, 0.01, 0.9, 0.99,
                     1e-8, wd, decoupled)  # fmt: skip
        close(pt, p, 1e-12)
        close(tstate[1], state[1], 1e-12)


class _TorchDevice(TorchKernels):
    tdevice = torch.device("cpu")

    def native_dtype(self, dtype):
        return getattr(torch, dtype.name)


def test_torch_random_numbers_are_drawn_on_the_device_and_seeded():
    import ember

    be = _TorchDevice()
    a = be.uniform(np.random.default_rng(5), (3, 4), ember.float32)
    b = be.uniform(np.random.default_rng(5), (3, 4), ember.float32)
    c = be.uniform(np.random.default_rng(6), (3, 4), ember.float32)
    assert a.dtype == torch.float32 and tuple(a.shape) == (3, 4) and a.device == be.tdevice
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert float(a.min()) >= 0 and float(a.max()) < 1
    n = be.normal(np.random.default_rng(1), (4000,), ember.float64)
    assert n.dtype == torch.float64 and abs(float(n.mean())) < 0.1 and abs(float(n.std()) - 1) < 0.1
    k = be.randint(np.random.default_rng(2), 3, 7, (500,), ember.int64)
    assert k.dtype == torch.int64 and int(k.min()) == 3 and int(k.max()) == 6
    gen = np.random.default_rng(9)
    assert not torch.equal(be.normal(gen, (5,), ember.float32), be.normal(gen, (5,), ember.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_torch_relu_backward_matches_the_reference(dtype):
    y = np.maximum(rng.standard_normal((3, 4, 5)), 0).astype(dtype)
    y[0, 0, :2] = 0.0  # exact zeros get no gradient, as in PyTorch
    g = rng.standard_normal((3, 4, 5)).astype(dtype)
    out = TK.relu_backward(_t(g), _t(y))
    assert out.dtype == _t(g).dtype
    close(out, REF.relu_backward(g, y), tol=0)
    gb = np.broadcast_to(g[:1], y.shape)  # a broadcast gradient (a view with stride 0)
    close(TK.relu_backward(torch.from_numpy(g[:1]).expand(y.shape), _t(y)), REF.relu_backward(gb, y), tol=0)
    yt = torch.tensor([float("nan"), 1.0, -0.0]).requires_grad_()  # NaN passes the gradient, as PyTorch's relu
    torch.relu(yt).backward(torch.full((3,), 2.0))
    assert torch.equal(TK.relu_backward(torch.full((3,), 2.0), torch.relu(yt.detach())), yt.grad)


def test_relu_backward_nan_cases_match_pytorch_on_both_backends():
    # a NaN output passes its gradient; a NaN gradient at a zero output becomes 0 (select, not product)
    x = torch.tensor([float("nan"), 1.0, -1.0, 0.0, -2.0], dtype=torch.float64, requires_grad=True)
    g = torch.tensor([2.0, 3.0, float("nan"), float("nan"), 5.0], dtype=torch.float64)
    torch.relu(x).backward(g)
    y = torch.relu(x.detach())
    assert torch.equal(TK.relu_backward(g, y), x.grad)
    ref = REF.relu_backward(g.numpy(), y.numpy())
    np.testing.assert_array_equal(ref, x.grad.numpy())
    assert ref.dtype == np.float64
    assert REF.relu_backward(g.numpy().astype(np.float32), y.numpy().astype(np.float32)).dtype == np.float32


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_numpy_relu_backward_bit_select_equals_where(dtype):
    # the branch-free NumPy kernel against the plain select, bit for bit (NaN, inf, signed zeros)
    specials = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30], dtype=dtype)
    y = np.concatenate([specials, rng.standard_normal(200).astype(dtype)])
    g = np.concatenate([specials[::-1], rng.standard_normal(200).astype(dtype)])
    grid_y, grid_g = np.meshgrid(y, g)  # every pairing of a special output with a special gradient
    scalars = (dtype(y[0]), dtype(g[4])), (np.array(y[4]), np.array(g[0]))  # NumPy scalars and 0-d arrays
    for yy, gg in ((y, g), (grid_y, grid_g), (y, np.broadcast_to(g[:1], y.shape)), *scalars):
        out = REF.relu_backward(gg, yy)
        want = np.where(yy <= 0, dtype(0), gg)
        assert out.dtype == want.dtype and out.shape == want.shape
        np.testing.assert_array_equal(out.view(f"u{out.itemsize}"), want.view(f"u{want.itemsize}"))

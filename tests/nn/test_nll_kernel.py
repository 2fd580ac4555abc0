"""``nll_loss``/``cross_entropy`` as one backend kernel pair (issue 28): the NumPy reference kernels against
torch's ``aten.nll_loss_forward``/``nll_loss_backward`` on the same arrays, float64 gradchecks of first and second
order, PyTorch's refusals of a bad weight, and on the accelerator path (torch-CPU with ``cheap_sync`` off) the
aten calls of a cross-entropy step and no read back to the host. Loss values at their boundaries against PyTorch
are in ``test_loss_boundaries.py``."""

import collections

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import backends

rng = np.random.default_rng(28)
NUMPY = backends.get("numpy")

# (logp (M, C), target (M,), weight or None, ignore_index)
CASES = {
    "plain": (rng.standard_normal((6, 5)), np.array([0, 4, 2, 2, 1, 3]), None, -100),
    "ignored": (rng.standard_normal((6, 5)), np.array([0, -100, 2, -100, 1, 3]), None, -100),
    "weighted": (rng.standard_normal((6, 5)), np.array([0, -100, 2, 4, 1, 3]), rng.random(5), -100),
    "ignore_class_2": (rng.standard_normal((6, 5)), np.array([0, 2, 2, 4, 1, 3]), rng.random(5), 2),
    "all_ignored": (rng.standard_normal((3, 5)), np.array([-100, -100, -100]), None, -100),
    "all_ignored_weighted": (rng.standard_normal((3, 5)), np.array([1, 1, 1]), rng.random(5), 1),
    "empty": (np.zeros((0, 5)), np.zeros(0, np.int64), None, -100),
    "empty_weighted": (np.zeros((0, 5)), np.zeros(0, np.int64), rng.random(5), -100),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("case", list(CASES))
def test_reference_kernels_match_torchs_aten_pair(torch, case, reduction, dtype):
    logp, target, weight, ignore = CASES[case]
    logp = logp.astype(dtype)
    weight = None if weight is None else weight.astype(dtype)
    g = rng.standard_normal(target.shape).astype(dtype) if reduction == "none" else np.asarray(0.7, dtype)
    out, total = NUMPY.nll_loss(logp, target, weight, reduction, ignore)
    gx = NUMPY.nll_loss_backward(g, logp, target, weight, reduction, ignore, total)
    tb = backends.get("torch")
    tw = None if weight is None else torch.from_numpy(weight)
    t_out, t_total = tb.nll_loss(torch.from_numpy(logp), torch.from_numpy(target), tw, reduction, ignore)
    t_gx = tb.nll_loss_backward(torch.from_numpy(g), torch.from_numpy(logp), torch.from_numpy(target), tw, reduction,
                                ignore, t_total)  # fmt: skip
    assert out.dtype == logp.dtype and np.shape(out) == tuple(t_out.shape) and np.shape(total) == ()
    tol = {"rtol": 1e-12 if dtype == "float64" else 1e-6, "atol": 0, "equal_nan": True}
    np.testing.assert_allclose(out, t_out.numpy(), **tol)
    if reduction != "none":  # (torch leaves it 0 for 'none', where nothing reads it)
        np.testing.assert_allclose(total, t_total.numpy(), **tol)
    assert gx.shape == logp.shape and gx.dtype == logp.dtype
    np.testing.assert_allclose(gx, t_gx.numpy(), **tol)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("case", ["plain", "weighted", "ignore_class_2"])
def test_nll_loss_gradcheck_first_and_second_order(case, reduction):
    logp, target, weight, ignore = CASES[case]
    x = ember.tensor(logp, requires_grad=True)
    t = ember.tensor(target)
    w = None if weight is None else ember.tensor(weight)

    def fn(x):
        return F.nll_loss(x, t, weight=w, ignore_index=ignore, reduction=reduction)

    assert ember.autograd.gradcheck(fn, (x,))
    assert ember.autograd.gradgradcheck(fn, (x,))


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_of_images_gradcheck(smoothing):
    x = ember.tensor(rng.standard_normal((2, 3, 2, 2)), requires_grad=True)
    t = ember.tensor(np.array([[[0, 2], [-100, 1]], [[2, 2], [1, 0]]]))
    w = ember.tensor(rng.random(3))

    def fn(x):
        return F.cross_entropy(x, t, weight=w, label_smoothing=smoothing)

    assert ember.autograd.gradcheck(fn, (x,))


def test_int32_targets_and_a_0d_target(torch):
    x = rng.standard_normal((4, 3)).astype(np.float32)
    t = np.array([2, 0, 1, 1], np.int32)
    got = F.cross_entropy(ember.tensor(x), ember.tensor(t), reduction="none")
    want = torch.nn.functional.cross_entropy(torch.from_numpy(x), torch.from_numpy(t).long(), reduction="none")
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    one = F.nll_loss(ember.tensor(x[0]), ember.tensor(np.array(1)), reduction="none")
    assert one.shape == () and float(one) == -x[0, 1]


def test_a_bad_weight_is_refused_as_pytorch_refuses_it():
    x = ember.randn(3, 4, requires_grad=True)
    t = ember.tensor([0, 1, 3])
    with pytest.raises(ValueError, match=r"all 4 classes.*\(5,\)"):
        F.nll_loss(x, t, weight=ember.ones(5))
    with pytest.raises(TypeError, match=r"weight of dtype ember\.float64 does not match input of dtype ember\.float32"):
        F.cross_entropy(x, t, weight=ember.ones(4, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="not differentiable with respect to weight"):
        F.nll_loss(x, t, weight=ember.ones(4, requires_grad=True))
    with ember.no_grad():  # no graph, nothing to refuse
        F.nll_loss(x, t, weight=ember.ones(4, requires_grad=True))
    with pytest.raises(ValueError, match="reduction must be"):
        F.nll_loss(x, t, reduction="avg")


@pytest.fixture
def accel(torch, monkeypatch):
    """The torch CPU backend taking the accelerator's paths (``cheap_sync`` off); device-to-host reads fail."""
    monkeypatch.setattr(backends.get("torch"), "_cheap_sync", False)
    for name in ("item", "tolist", "__bool__", "__float__", "__int__", "__index__", "__array__", "cpu"):

        def read(self, *a, _name=name, **k):
            raise AssertionError(f"a read back to the host: torch.Tensor.{_name}")

        monkeypatch.setattr(torch.Tensor, name, read)
    with backends.use("torch"):
        yield torch


class _Count:
    def __init__(self, torch):
        from torch.utils._python_dispatch import TorchDispatchMode

        calls = self.calls = collections.Counter()

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                calls[func.overloadpacket.__name__] += 1
                return func(*args, **(kwargs or {}))

        self.mode = Mode()


def test_cross_entropy_step_is_pytorchs_kernels_on_an_accelerator(accel):
    logits = ember.randn(8, 10, requires_grad=True)
    target = ember.randint(0, 10, (8,))
    count = _Count(accel)
    with count.mode:
        F.cross_entropy(logits, target).backward()
    want = {"_log_softmax", "nll_loss_forward", "nll_loss_backward", "_log_softmax_backward_data", "ones"}
    assert dict(count.calls) == dict.fromkeys(want, 1)  # (was 34 calls over 18 aten functions)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_weights_ignore_index_and_smoothing_read_nothing_back(accel, smoothing):
    logits = ember.randn(2, 5, 3, requires_grad=True)
    target = ember.tensor([[0, -100, 4], [1, 2, -100]])
    w = ember.rand(5)
    for reduction in ("none", "mean", "sum"):
        loss = F.cross_entropy(logits, target, weight=w, reduction=reduction, label_smoothing=smoothing)
        loss.sum().backward()
    assert logits.grad.shape == (2, 5, 3)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_confident_classifiers_gradient_has_no_subnormals(dtype):
    """NumPy's cross-entropy gradient flushes results below the smallest normal number to zero (a subnormal slows
    every product it enters 10-100x on x86); every other element is the formula's, bit for bit."""
    rng = np.random.default_rng(0)
    scale = 40.0 if dtype == "float32" else 700.0  # log probabilities far below log(tiny)
    x = ember.tensor(rng.standard_normal((64, 256)) * scale, dtype=dtype, requires_grad=True)
    target = ember.tensor(rng.integers(0, 256, 64))
    F.cross_entropy(x, target).backward()
    g = x.grad.numpy()
    if x._backend.name != "numpy":
        pytest.skip("the flush is NumPy's kernel (the torch backend gives PyTorch's bits)")
    tiny = np.finfo(dtype).tiny
    logp = F.log_softmax(x.detach(), -1).numpy()
    onehot = np.zeros_like(logp)
    onehot[np.arange(64), target.numpy()] = 1.0
    s = -np.ones((64, 1), dtype) / 64  # the upstream gradient's row sums (mean reduction)
    full = (-onehot / 64).astype(dtype) - np.exp(logp) * s
    assert ((np.abs(full) < tiny) & (full != 0)).sum() > (1000 if dtype == "float32" else 50)  # the case: subnormals
    assert not ((np.abs(g) < tiny) & (g != 0)).any()
    keep = np.abs(full) >= tiny
    np.testing.assert_array_equal(g[keep], full[keep])
    assert (g[~keep] == 0).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_log_softmax_kernels_skip_subnormal_exps_with_the_formulas_bits(dtype):
    """The NumPy row kernels of a confident classifier (``_kernels_fused``): the forward's sum takes
    ``exp(max(z, log(tiny) + 0.01))`` and the backward zeroes the terms below its cut before the product, so no
    ``exp`` or product runs on subnormals; the results are the formulas' bits all the same (the backward's with
    every result below tiny flushed), for rows of very different upstream sums (terms just above the cut are
    subnormal there and flushed after), subnormal, zero, infinite and NaN upstream values, and mixed dtypes."""
    from ember.backends import _kernels_fused as fu

    r = np.random.default_rng(11)
    tiny = np.finfo(dtype).tiny
    scale = 40.0 if dtype == np.float32 else 700.0
    x = (r.standard_normal((96, 200)) * scale).astype(dtype)
    z = x - x.max(-1, keepdims=True)
    ref_y = z - np.log(np.sum(np.exp(z), -1, keepdims=True))
    y = fu.log_softmax(x)
    assert (np.exp(z) < tiny).mean() > 0.2  # the case: many subnormal (or zero) terms
    np.testing.assert_array_equal(y, ref_y)

    g = (r.standard_normal((96, 200)) * 10.0 ** r.uniform(-6, 2, (96, 1))).astype(dtype)  # rows' sums differ
    g[r.random(g.shape) < 0.5] = 0.0
    g[0, :5] = tiny / 4  # subnormal upstream values
    g[1, 0] = -tiny / 2
    ref = g - np.exp(y) * np.sum(g, -1, keepdims=True)
    ref[np.abs(ref) < tiny] = 0.0
    got = fu.log_softmax_backward(g, y)
    np.testing.assert_array_equal(got, ref)
    for bad in (np.inf, np.nan):  # a row's sum not finite: the plain formula everywhere
        gb = g.copy()
        gb[2, 3] = bad
        with np.errstate(invalid="ignore"):
            refb = gb - np.exp(y) * np.sum(gb, -1, keepdims=True)
            refb[np.abs(refb) < tiny] = 0.0
            np.testing.assert_array_equal(fu.log_softmax_backward(gb, y), refb)
    if dtype == np.float32:  # a float64 upstream gradient on float32 log probabilities
        g64 = g.astype(np.float64)
        ref64 = g64 - (np.exp(y) * np.sum(g64, -1, keepdims=True)).astype(np.float32)
        ref64[np.abs(ref64) < np.finfo(np.float64).tiny] = 0.0
        np.testing.assert_array_equal(fu.log_softmax_backward(g64, y), ref64)

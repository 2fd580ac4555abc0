"""Batch norm in mixed precision (issue 28): a float16/bfloat16 input with float32 statistics and affine parameters,
as under autocast, runs PyTorch's one-kernel mixed path: the output in the input's dtype, the gradients in each
input's dtype, the running statistics updated in float32; values as PyTorch's. And a ResNet block's inference
step under autocast does no more work than PyTorch's: activations stay in the lower dtype (no activation-sized
cast), one batch-norm kernel per layer."""

from collections import Counter

import numpy as np
import pytest

import ember
from ember import backends

torch = pytest.importorskip("torch")
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

rng = np.random.default_rng(0)
X = rng.standard_normal((4, 3, 5, 5)).astype(np.float32) * 2 + 1
G = rng.standard_normal((4, 3, 5, 5)).astype(np.float32)
W, B = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
RM, RV = rng.standard_normal(3).astype(np.float32), rng.uniform(0.5, 2, 3).astype(np.float32)


def _run(lib, make, lower, training, affine):
    """(y, x.grad, weight.grad, bias.grad, running_mean, running_var) of one batch norm of X in ``lower``."""
    x = make(X).to(lower).requires_grad_(True)
    w, b = (make(W).requires_grad_(True), make(B).requires_grad_(True)) if affine else (None, None)
    rm, rv = make(RM), make(RV)
    y = lib.nn.functional.batch_norm(x, rm, rv, w, b, training=training, momentum=0.1, eps=1e-5)
    (y.float() * make(G)).sum().backward()
    grads = [t.grad if t is not None else None for t in (x, w, b)]
    return [y, *grads, rm, rv]


def _np(t):
    return None if t is None else np.asarray(t.detach().float().cpu().numpy() if hasattr(t, "cpu") else t)


@pytest.mark.parametrize("training", [False, True], ids=["eval", "train"])
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
@pytest.mark.parametrize(("backend", "lower"), [("torch", "bfloat16"), ("torch", "float16"), ("numpy", "float16")])
def test_lower_input_with_float32_parameters_follows_torch(backend, lower, training, affine):
    if backend == "torch":
        pytest.importorskip("torch")
    with backends.use(backend), ember.device("cpu"):
        got = _run(ember, ember.tensor, getattr(ember, lower), training, affine)
    want = _run(torch, torch.tensor, getattr(torch, lower), training, affine)
    y, gx, gw, gb, rm, rv = got
    assert y.dtype is getattr(ember, lower) and gx.dtype is getattr(ember, lower)  # the input's dtype
    assert rm.dtype is ember.float32 and rv.dtype is ember.float32
    if affine:
        assert gw.dtype is ember.float32 and gb.dtype is ember.float32  # each parameter's own dtype
    tol = 2e-2 if lower == "bfloat16" else 3e-3
    for name, g, w in zip(("y", "x.grad", "weight.grad", "bias.grad", "running_mean", "running_var"), got, want):
        if w is None:
            assert g is None, name
            continue
        np.testing.assert_allclose(_np(g), _np(w), rtol=tol, atol=tol * 4, err_msg=name)


class _Ops(TorchDispatchMode):
    """Every aten op with its tensor arguments' (dtype, shape)."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        ts = [(a.dtype, tuple(a.shape)) for a in args if isinstance(a, torch.Tensor)]
        self.calls.append((str(func).removeprefix("aten.").split(".")[0], ts))
        return func(*args, **(kwargs or {}))


def _block(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
        nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10),
    )  # fmt: skip


def _infer_ops(lib, model, x):
    model.eval()
    for _ in range(2):  # a warm-up step, then the step recorded (each its own region, as a user's step)
        with lib.no_grad(), lib.autocast("cpu", dtype=lib.bfloat16), _Ops() as ops:
            model(x)
    return ops.calls


def test_resnet_block_inference_under_autocast_does_pytorchs_work(monkeypatch):
    """The accelerator's path (no host checks) on torch's CPU backend: the aten ops one inference step issues."""
    monkeypatch.setattr(backends.get("torch"), "_cheap_sync", False)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    with backends.use("torch"), ember.device("cpu"):
        ember.manual_seed(0)
        calls = _infer_ops(ember, _block(ember), ember.tensor(x))
    want = _infer_ops(torch, _block(torch), torch.tensor(x))
    casts = [ts[0] for op, ts in calls if op == "_to_copy"]
    # the input and the three weights and the linear bias, each cast once; never an activation
    assert sorted(s for _, s in casts) == sorted([(2, 3, 8, 8), (8, 3, 3, 3), (8, 8, 3, 3), (10, 8), (10,)])
    assert len(casts) == Counter(op for op, _ in want)["_to_copy"]
    # batch norm: one kernel per layer, on the bfloat16 convolution output, with the float32 statistics
    bn = [ts for op, ts in calls if op == "native_batch_norm"]
    assert len(bn) == 2 and all(ts[0][0] == torch.bfloat16 and ts[1][0] == torch.float32 for ts in bn)
    # past the input's cast, no op reads or makes a float32 activation (all activations have 2 * 8 * 8 * 8 values)
    big = [(op, ts) for op, ts in calls if op != "_to_copy" and any(d == torch.float32 and len(s) == 4 for d, s in ts)]
    assert big == []
    arith = Counter(op for op, _ in calls) & Counter({"sub": 1, "div": 1, "sqrt": 1, "mul": 1})
    assert not arith  # batch norm is not spelled out as elementwise operations


def test_counting_batches_is_one_in_place_add(monkeypatch):
    """``num_batches_tracked.add_(1)`` (every BatchNorm layer, every training step): one kernel, as PyTorch's, where
    Ember made an out-of-place add and a copy back (ResNet-18: 20 extra launches per step)."""
    monkeypatch.setattr(backends.get("torch"), "_cheap_sync", False)
    with backends.use("torch"), ember.device("cpu"):
        bn = ember.nn.BatchNorm2d(3)
        x = ember.tensor(X)
        with _Ops() as ops:
            bn.num_batches_tracked.add_(1)
        assert [op for op, _ in ops.calls] == ["add_"]
        assert int(bn.num_batches_tracked) == 1
        bn(x)
        assert int(bn.num_batches_tracked) == 2
    with backends.use("numpy"), ember.device("cpu"):
        n = ember.tensor([1, 2], dtype=ember.int8)
        n.add_(-3)
        n.mul_(2)
        assert n.tolist() == [-4, -2] and n.dtype is ember.int8

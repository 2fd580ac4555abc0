"""Operands of different dtypes, run the same way under PyTorch and Ember.

PyTorch promotes elementwise operands, but products, convolutions, normalisations (beside their parameters),
solvers and indexed writes take operands of one dtype and raise otherwise. Ember promoted them all, so a float64
batch through a float32 model ran silently in float64 where the same program stops in PyTorch. Each case here
must raise in both libraries (a RuntimeError or, where PyTorch says so, a ValueError), or give the same dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _cases(t: Any) -> dict[str, Callable[[], Any]]:
    """The cases written once against a torch-like module ``t`` (PyTorch or Ember)."""
    F = t.nn.functional
    f32, f64, f16 = t.float32, t.float64, t.float16
    rng = np.random.default_rng(0)  # the same values in both libraries

    def r(*shape: int, dtype: Any = f32) -> Any:
        return t.tensor(rng.standard_normal(shape)).to(dtype)

    a, b64 = r(2, 3), r(3, 2, dtype=f64)
    v32, v64 = r(3), r(3, dtype=f64)
    x16 = r(2, 4, 3, dtype=f16)
    return {
        "matmul": lambda: a @ b64,
        "mm": lambda: t.mm(a, b64),
        "bmm": lambda: t.bmm(a[None], b64[None]),
        "mv": lambda: t.mv(a, v64),
        "dot": lambda: t.dot(v32, v64),
        "inner": lambda: t.inner(v32, v64),
        "inner 0-d": lambda: t.inner(v32, t.tensor(2.0, dtype=f64)),
        "outer": lambda: t.outer(v32, v64),
        "addmm": lambda: t.addmm(t.zeros(2, 2, dtype=f64), a, a.T),
        "baddbmm": lambda: t.baddbmm(t.zeros(1, 2, 2), a[None], b64[None]),
        "int @ float": lambda: t.arange(6).reshape(2, 3) @ b64,
        "int @ int": lambda: t.arange(6).reshape(2, 3) @ t.arange(6).reshape(3, 2),
        "einsum": lambda: t.einsum("ij,jk->ik", a, b64),
        "tensordot": lambda: t.tensordot(a, b64, dims=1),
        "linear": lambda: F.linear(b64.T, a),
        "linear bias": lambda: F.linear(a, a, t.zeros(2, dtype=f64)),
        "Linear f64 input": lambda: t.nn.Linear(3, 2)(b64.T),
        "bilinear": lambda: F.bilinear(a, a.double(), r(2, 3, 3)),
        "conv2d": lambda: F.conv2d(r(1, 1, 4, 4, dtype=f64), r(1, 1, 3, 3)),
        "conv1d bias": lambda: F.conv1d(r(1, 1, 4), r(1, 1, 3), t.zeros(1, dtype=f64)),
        "conv_transpose2d": lambda: F.conv_transpose2d(r(1, 1, 3, 3, dtype=f64), r(1, 1, 2, 2)),
        "layer_norm f64 weight": lambda: F.layer_norm(a, (3,), t.ones(3, dtype=f64)),
        "layer_norm f16 input": lambda: F.layer_norm(x16, (3,), t.ones(3), t.zeros(3)),
        "batch_norm f64 weight": lambda: F.batch_norm(a, t.zeros(3), t.ones(3), t.ones(3, dtype=f64)),
        "batch_norm f64 stats": lambda: F.batch_norm(a, t.zeros(3, dtype=f64), t.ones(3, dtype=f64)),
        "batch_norm f16 input": lambda: F.batch_norm(x16, t.zeros(4), t.ones(4), t.ones(4), t.zeros(4), True),
        "group_norm f16 input": lambda: F.group_norm(x16, 2, t.ones(4), t.zeros(4)),
        "group_norm f64 weight": lambda: F.group_norm(r(2, 4, 3), 2, t.ones(4, dtype=f64)),
        "instance_norm f16 input": lambda: F.instance_norm(x16, weight=t.ones(4), bias=t.zeros(4)),
        "rms_norm f64 weight": lambda: F.rms_norm(a, (3,), t.ones(3, dtype=f64)),
        "cdist": lambda: t.cdist(a, b64.T),
        "cross": lambda: t.linalg.cross(v32, v64),
        "linalg.solve": lambda: t.linalg.solve(t.eye(3), v64),
        "linalg.lstsq": lambda: t.linalg.lstsq(t.eye(3), r(3, 1, dtype=f64)).solution,
        "cholesky_solve": lambda: t.cholesky_solve(r(3, 1, dtype=f64), t.eye(3)),
        "index_add": lambda: t.zeros(3).index_add(0, t.tensor([0]), t.ones(1, dtype=f64)),
        "index_put": lambda: t.zeros(3).index_put((t.tensor([0]),), t.ones(1, dtype=f64)),
        "put": lambda: t.zeros(3).put(t.tensor([0]), t.ones(1, dtype=f64)),
        "setitem casts": lambda: _setitem(t.zeros(3), v64),
        "binary_cross_entropy": lambda: F.binary_cross_entropy(t.full((3,), 0.5), t.ones(3, dtype=f64)),
        "bce_with_logits promotes": lambda: F.binary_cross_entropy_with_logits(a, t.ones(2, 3, dtype=f64)),
        "sdpa qkv": lambda: F.scaled_dot_product_attention(r(1, 2, 3), r(1, 2, 3, dtype=f64), r(1, 2, 3)),
        "sdpa f64 mask": lambda: F.scaled_dot_product_attention(a[None], a[None], a[None], t.zeros(2, 2, dtype=f64)),
        "sdpa f32 mask, f16 query": lambda: F.scaled_dot_product_attention(x16, x16, x16, t.zeros(4, 4)),
        "grid_sample": lambda: F.grid_sample(r(1, 1, 3, 3), t.zeros(1, 2, 2, 2, dtype=f64), align_corners=False),
        "LSTMCell": lambda: t.nn.LSTMCell(3, 2)(b64.T),
        "GRU": lambda: t.nn.GRU(3, 2)(b64.T[None]),
        "add promotes": lambda: a + b64.T,
        "where promotes": lambda: t.where(a > 0, a, b64.T),
        "cat promotes": lambda: t.cat([a, b64.T]),
        "autocast matmul": lambda: _autocast(t, lambda: a @ b64),
    }


def _setitem(x: Any, v: Any) -> Any:
    x[:] = v
    return x


def _autocast(t: Any, fn: Callable[[], Any]) -> Any:
    with t.autocast("cpu", dtype=t.float16):
        return fn()


def _outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    try:
        y = fn()
    except ValueError as e:  # PyTorch's RNN layers: a ValueError
        return ("ValueError" if not isinstance(e, RuntimeError) else "RuntimeError"), e
    except RuntimeError as e:
        return "RuntimeError", e
    return "ok", y


NAMES = list(_cases(torch))
#: cases whose outcome in PyTorch depends on the device: there PyTorch runs on Ember's default device (CUDA has no
#: integer matrix product: ``"addmm_cuda" not implemented for 'Long'``, pytorch/pytorch#44428; the CPU computes it)
PER_DEVICE = {"int @ int"}


@pytest.mark.parametrize("name", NAMES)
def test_mixed_dtypes_like_pytorch(name: str) -> None:
    device = ember.get_default_device().type if name in PER_DEVICE else "cpu"
    with torch.device("cuda" if device == "cuda" else "cpu"):
        want, ref = _outcome(_cases(torch)[name])
    got, out = _outcome(_cases(ember)[name])
    assert got == want, f"{name}: PyTorch {want} ({ref}), Ember {got} ({out})"
    if want == "ok":
        assert out.dtype.name == str(ref.dtype).removeprefix("torch."), f"{name}: dtype {out.dtype} vs {ref.dtype}"
        r = ref.detach().float().cpu().numpy()
        np.testing.assert_allclose(out.detach().float().numpy(), r, rtol=2e-3, atol=2e-3, err_msg=name)
    else:  # Ember's message names the operator and the dtypes
        text = str(out)
        assert any(s in text for s in ("float64", "int64")), text


def test_mixed_norm_gradients_keep_each_dtype() -> None:
    """float16 input beside float32 parameters (PyTorch's mixed CPU kernels): each gradient in its own dtype."""
    rng = np.random.default_rng(1)
    xs = rng.standard_normal((2, 4, 3)).astype(np.float16)
    for lib in (torch, ember):
        x = lib.tensor(xs, requires_grad=True)
        w = lib.ones(3, requires_grad=True)
        y = lib.nn.functional.layer_norm(x, (3,), w)
        (y.float() * lib.arange(3.0)).sum().backward()
        assert str(y.dtype).endswith("float16") and str(x.grad.dtype).endswith("float16")
        assert str(w.grad.dtype).endswith("float32")

"""The same bfloat16 code under Ember and PyTorch 2.13 (CPU): inputs, outputs and gradients compared as bits."""

from __future__ import annotations

from typing import Any

import numpy as np

import ember

torch: Any = None


def without_bfloat16() -> Any:
    """A skip mark for a module of tests of bfloat16 on the default backend, where that backend has none (CuPy)."""
    import pytest

    be = ember.backends.get_backend()
    return pytest.mark.skipif(not be.supports_bfloat16, reason=f"the {be.name} backend has no bfloat16")


def get_torch() -> Any:
    global torch
    import pytest

    torch = pytest.importorskip("torch")
    return torch


def torch_device() -> str:
    """Where PyTorch's reference runs: the kind of device Ember's default one is (CUDA's kernels round otherwise
    than the CPU's: a Python number operand is not rounded to bfloat16 first, ``cumsum`` accumulates in bfloat16,
    casts of values beyond an integer dtype saturate)."""
    return "cuda" if ember.get_default_device().type == "cuda" else "cpu"


def bf16_values(a: np.ndarray) -> np.ndarray:
    """``a`` rounded to bfloat16 by PyTorch, as float32 (exact)."""
    t = get_torch()
    return t.from_numpy(np.asarray(a, np.float32)).bfloat16().float().numpy()


def make(lib: Any, a: np.ndarray, grad: bool = False, dtype: str = "bfloat16") -> Any:
    """A bfloat16 tensor of ``lib`` (ember or torch) holding ``a``'s values rounded to bfloat16."""
    x = lib.tensor(np.asarray(a, np.float32)).to(getattr(lib, dtype))
    return x.requires_grad_() if grad else x


def values(x: Any) -> np.ndarray:
    """A tensor of either library as float32 values (bfloat16 is exact in float32), or its ints/bools."""
    if isinstance(x, ember.Tensor):
        x = x.detach()
        return (x.float() if x.dtype.is_floating_point else x).cpu().numpy()
    x = x.detach()
    return (x.float() if x.dtype.is_floating_point else x).cpu().numpy()


def compare(ours: Any, theirs: Any, tol: float = 0.0, what: str = "") -> None:
    """Same dtype name and, with ``tol`` 0, the same values bit for bit (NaN equal to NaN); else within ``tol``
    relative to the largest magnitude (bfloat16's unit is 2**-8)."""
    assert str(ours.dtype).replace("ember.", "") == str(theirs.dtype).replace("torch.", "").replace("ember.", ""), (
        what,
        ours.dtype,
        theirs.dtype,
    )
    a, b = values(ours), values(theirs)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    if tol == 0:
        np.testing.assert_array_equal(a, b, err_msg=what)
    else:
        scale = max(float(np.nanmax(np.abs(b))) if b.size else 0.0, 1e-30)
        np.testing.assert_allclose(a, b, rtol=0, atol=tol * scale, err_msg=what)

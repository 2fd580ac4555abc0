"""``interpolate(..., antialias=True)`` (bilinear and bicubic; shrinking, growing, ``align_corners``, ``scale_factor``)
beside PyTorch: values, gradients, float32 and float64, a float64 gradcheck, uint8, and the refusals."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

CASES = [
    ("bilinear", dict(size=(9, 7))),
    ("bilinear", dict(size=(12, 40))),
    ("bilinear", dict(size=(37, 10), align_corners=True)),
    ("bilinear", dict(scale_factor=0.3)),
    ("bilinear", dict(scale_factor=(0.25, 2.0))),
    ("bicubic", dict(size=(9, 7))),
    ("bicubic", dict(size=(80, 60))),
    ("bicubic", dict(size=(5, 29), align_corners=True)),
    ("bicubic", dict(scale_factor=0.5, recompute_scale_factor=True)),
]


def _run(lib: Any, x: np.ndarray, g: np.ndarray | None, mode: str, kw: dict, dtype: Any) -> tuple[Any, Any, Any]:
    t = lib.tensor(x, dtype=dtype, requires_grad=True)
    y = lib.nn.functional.interpolate(t, mode=mode, antialias=True, **kw)
    go = g if g is not None else np.random.default_rng(2).standard_normal(tuple(y.shape))
    y.backward(lib.tensor(go, dtype=dtype))
    return np.asarray(y.tolist()), np.asarray(t.grad.tolist()), go


@pytest.mark.parametrize(("mode", "kw"), CASES, ids=[f"{m}-{i}" for i, (m, _) in enumerate(CASES)])
@pytest.mark.parametrize("dt", ["float64", "float32"])
def test_antialiased_resize_and_its_gradient_equal_pytorch(mode: str, kw: dict, dt: str) -> None:
    x = np.random.default_rng(1).standard_normal((2, 3, 37, 29))
    ty, tg, go = _run(torch, x, None, mode, kw, getattr(torch, dt))
    ey, eg, _ = _run(ember, x, go, mode, kw, getattr(ember, dt))
    tol = 1e-12 if dt == "float64" else 2e-5
    np.testing.assert_allclose(ey, ty, rtol=tol, atol=tol)
    np.testing.assert_allclose(eg, tg, rtol=tol, atol=tol)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialiased_resize_gradcheck(mode: str) -> None:
    x = ember.tensor(np.random.default_rng(3).standard_normal((1, 2, 9, 7)), requires_grad=True)
    for size in ((4, 3), (12, 10)):
        assert ember.autograd.gradcheck(
            lambda t, size=size: ember.nn.functional.interpolate(t, size=size, mode=mode, antialias=True), (x,)
        )


def test_antialiased_uint8_within_one_of_pytorch() -> None:
    x = np.random.default_rng(4).integers(0, 256, (1, 3, 40, 30), dtype=np.uint8)
    a = ember.nn.functional.interpolate(ember.tensor(x), size=(13, 11), mode="bilinear", antialias=True)
    b = torch.nn.functional.interpolate(torch.tensor(x), size=(13, 11), mode="bilinear", antialias=True)
    assert a.dtype == ember.uint8
    assert np.abs(np.asarray(a.tolist(), dtype=int) - b.numpy().astype(int)).max() <= 1  # PyTorch's integer path


@pytest.mark.parametrize("lib", [ember, torch], ids=["ember", "torch"])
def test_antialias_needs_bilinear_or_bicubic(lib: Any) -> None:
    with pytest.raises((ValueError, RuntimeError), match=r"(?i)anti-alias option is restricted"):
        lib.nn.functional.interpolate(lib.ones(1, 1, 8, 8), size=(3, 3), mode="nearest", antialias=True)

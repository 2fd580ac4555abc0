"""``add``/``sub``/``rsub`` with ``alpha`` beside PyTorch: a Python-number ``other`` (raised AttributeError deep
inside, found while checking bfloat16 number operands on CUDA) and PyTorch's ``alpha_check`` against the result
dtype (an int64 tensor with a float alpha silently gave float32 where PyTorch raises)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

CASES = {
    "f32 + number": lambda L: L.add(L.tensor([1.5, -2.25, 3.1]), 2.7, alpha=0.3),
    "f64 + number": lambda L: L.add(L.tensor([1.5, -2.25], dtype=L.float64), 2.7, alpha=0.3),
    "f32 - number": lambda L: L.sub(L.tensor([1.5, 2.5]), 0.7, alpha=3),
    "method": lambda L: L.tensor([1.5, 2.5]).add(0.7, alpha=-2),
    "in place": lambda L: L.tensor([1.5, 2.5]).sub_(0.7, alpha=-2),
    "int64 + int": lambda L: L.add(L.tensor([1, 2]), 3, alpha=2),
    "int64 - int": lambda L: L.sub(L.tensor([1, 2]), 3, alpha=-4),
    "int64 + float number": lambda L: L.add(L.tensor([1, 2]), 2.5, alpha=2),
    "uint8 + int wraps": lambda L: L.add(L.tensor([250, 3], dtype=L.uint8), 4, alpha=3),
    "number + tensor": lambda L: L.add(2.0, L.tensor([1.0, 2.0]), alpha=3),
    "rsub number": lambda L: L.rsub(L.tensor([1.5, 2.5]), 0.7, alpha=3),
    "complex alpha": lambda L: L.add(L.tensor([1.0 + 1j]), 2.0, alpha=1j),
    "bool alpha, bool": lambda L: L.add(L.tensor([True, False]), L.tensor([True, True]), alpha=True),
    "int64 float alpha": lambda L: L.add(L.tensor([1, 2]), 3, alpha=0.5),
    "int64 tensors float alpha": lambda L: L.add(L.tensor([1, 2]), L.tensor([3, 4]), alpha=0.5),
    "bool alpha, float": lambda L: L.add(L.tensor([1.0]), 2.0, alpha=True),
    "complex alpha, float": lambda L: L.add(L.tensor([1.0]), 2.0, alpha=1j),
    "sub int64 float alpha": lambda L: L.sub(L.tensor([1, 2]), L.tensor([3, 4]), alpha=1.5),
    "int64 alpha 1.0": lambda L: L.add(L.tensor([1]), 2, alpha=1.0),
    "float alpha 1.0": lambda L: L.add(L.tensor([1.5]), 2.25, alpha=1.0),
    "bool alpha 2": lambda L: L.add(L.tensor([True, False]), L.tensor([True, False]), alpha=2),
    "bool alpha 0": lambda L: L.add(L.tensor([True, False]), L.tensor([True, True]), alpha=0),
    "float alpha True": lambda L: L.add(L.tensor([1.0]), L.tensor([2.0]), alpha=True),
    "complex alpha 1+0j": lambda L: L.add(L.tensor([1.0]), 2, alpha=1 + 0j),
    "NumPy int alpha": lambda L: L.add(L.tensor([1, 2]), L.tensor([3, 4]), alpha=np.int64(3)),
    "NumPy float alpha": lambda L: L.sub(L.tensor([1.0, 2.0]), 0.5, alpha=np.float32(1.5)),
}


def _run(lib, fn):
    try:
        r = fn(lib)
    except RuntimeError as e:
        return "RuntimeError", str(e)
    return str(r.dtype).split(".")[-1], np.asarray(r.tolist())


@pytest.mark.parametrize("name", sorted(CASES))
def test_alpha_as_pytorch(name):
    (kind, got), (want_kind, want) = _run(ember, CASES[name]), _run(torch, CASES[name])
    assert kind == want_kind, (got, want)
    if kind == "RuntimeError":
        assert got == want
    else:  # (PyTorch fuses alpha * other into the sum: one rounding, ours two)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)


def test_gradients_through_a_number_other():
    x = ember.tensor([1.5, -2.0], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: ember.sub(t, 0.7, alpha=3) * t, (x,))

"""Call forms PyTorch code uses that Ember answered differently, run as the same code under both libraries:
``F.softmax``/``log_softmax``/``softmin`` without ``dim`` (PyTorch's implicit, deprecated choice: 0 for 0-, 1- and
3-d inputs, else 1; Ember took the last dim, a silently different answer for 3-d and 4-d inputs), their
``_stacklevel``, and ``ConvTranspose{1,2,3}d(input, output_size=...)``."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
def test_softmax_family_without_dim_as_pytorch(name: str, ndim: int) -> None:
    shape = (2, 3, 4, 5)[:ndim]
    x = np.linspace(-2, 3, int(np.prod(shape))).reshape(shape)
    results = []
    for lib in (ember, torch):
        t = lib.tensor(x)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            f = getattr(lib.nn.functional, name)(t)
            cls = {"softmax": "Softmax", "log_softmax": "LogSoftmax", "softmin": "Softmin"}[name]
            m = getattr(lib.nn, cls)()(t)
        words = [str(w.message) for w in caught]
        assert len(words) == 2 and all("Implicit dimension choice" in w for w in words), words
        results.append((np.asarray(f.tolist()), np.asarray(m.tolist())))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("lib", [ember, torch], ids=["ember", "torch"])
def test_softmax_takes_stacklevel(lib: Any) -> None:
    x = lib.ones(2, 3)
    assert lib.nn.functional.log_softmax(x, dim=1, _stacklevel=5).shape == (2, 3)
    assert lib.nn.functional.softmax(x, -1, _stacklevel=2, dtype=lib.float64).dtype == lib.float64


def _transposed(lib: Any) -> list[Any]:
    out: list[Any] = []
    for n, size in ((1, [8]), (2, [8, 7]), (3, [7, 8, 8])):
        lib.manual_seed(0)
        m = getattr(lib.nn, f"ConvTranspose{n}d")(2, 3, 3, stride=2, padding=1)
        with lib.no_grad():
            for p in m.parameters():
                p.copy_(lib.linspace(-1, 1, p.numel(), dtype=lib.float64).reshape(p.shape))
        m = m.double()
        x = lib.linspace(0, 1, 2 * 2 * 4**n, dtype=lib.float64).reshape(2, 2, *([4] * n))
        y = m(x, output_size=size)
        out.append((tuple(y.shape), np.round(np.asarray(y.tolist()), 10).tolist()))
        out.append(tuple(m(x, output_size=[2, 3, *size]).shape))
        for bad in ([50] * n, [1] * (n + 1)):
            try:
                m(x, output_size=bad)
            except ValueError as e:
                out.append(str(e).split(" (for an input")[0])
    return out


def test_conv_transpose_output_size_as_pytorch() -> None:
    assert _transposed(ember) == _transposed(torch)


def _activation_grads(lib: Any) -> list[Any]:
    F = lib.nn.functional
    out: list[Any] = []
    points = [-1.0, 0.0, 6.0, 1.0, -2.0, 7.0, 0.5]  # the bounds of hardtanh (-1, 1) and relu6 (0, 6) included
    for f in (F.hardtanh, F.relu6, lambda v: F.hardtanh(v, -2.0, 6.0)):
        x = lib.tensor(points, dtype=lib.float64, requires_grad=True)
        f(x).sum().backward()
        out.append(x.grad.tolist())
    a = lib.tensor([-1.0, 2.0])
    out.append((F.relu(a, inplace=True) is a, a.tolist(), F.relu(lib.tensor([-3.0]), inplace=False).tolist()))
    for name in ("relu_", "leaky_relu_", "elu_", "selu_", "celu_", "hardtanh_"):  # in place on a graph's tensor
        x = lib.tensor(points, dtype=lib.float64, requires_grad=True)
        y = x * 1
        z = getattr(F, name)(y)
        (z * lib.arange(7, dtype=lib.float64)).sum().backward()
        out.append((name, z is y, np.round(np.asarray(x.grad.tolist()), 12).tolist()))
    return out


def test_activation_gradients_at_bounds_and_in_place_as_pytorch() -> None:
    """hardtanh/relu6 pass gradients strictly inside their bounds (Ember's clamp rule gave 1 at them); the in-place
    forms of activations that save their input raised a version error in backward."""
    assert _activation_grads(ember) == _activation_grads(torch)

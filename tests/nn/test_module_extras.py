"""``Module.get_buffer``, ``set_submodule``, ``compile`` (in place), ``to_empty`` and ``type``, beside PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2))


def test_lookup_and_replacement_match_torch():
    for lib in (ember, torch):
        m = _model(lib)
        assert tuple(m.get_buffer("1.running_var").shape) == (4,)
        with pytest.raises(AttributeError):
            m.get_buffer("0.weight")  # a parameter, not a buffer
        m.set_submodule("2", lib.nn.Linear(4, 5))
        assert m[2].out_features == 5
        with pytest.raises(AttributeError):
            m.set_submodule("9.x", lib.nn.ReLU())
        m.type(lib.float64)
        assert m[0].weight.dtype == lib.float64 and m[1].running_mean.dtype == lib.float64
        assert m.to_empty(device="cpu") is m


def test_compile_in_place_equals_eager():
    m = _model(ember).eval()
    x = ember.tensor(np.random.RandomState(0).randn(5, 3).astype(np.float32))
    eager = m(x).detach().numpy()
    assert m.compile() is None
    for _ in range(3):
        np.testing.assert_array_equal(m(x).detach().numpy(), eager)


def _backward_pre_hooks(lib):
    lib.manual_seed(0)
    m = lib.nn.Linear(3, 2).double()
    with lib.no_grad():
        m.weight.copy_(lib.tensor(np.array([[1.0, -2.0, 0.5], [0.3, 0.2, -1.0]])))
    seen = []
    m.register_full_backward_pre_hook(lambda mod, g: seen.append(g[0].numpy().copy()) or (g[0] * 2,))
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(go[0].numpy().copy()))
    x = lib.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    (m(x) * lib.tensor(np.array([1.0, 3.0]))).sum().backward()
    return seen + [x.grad.numpy(), m.weight.grad.numpy()]


def test_full_backward_pre_hook_matches_torch():
    got, want = _backward_pre_hooks(ember), _backward_pre_hooks(torch)
    assert len(got) == len(want) == 4
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12)

"""``autograd.grad`` with PyTorch's whole signature (a WGAN-GP's ``only_inputs=True`` stopped on a TypeError):
``only_inputs``, ``allow_unused`` None, ``is_grads_batched``, ``materialize_grads`` and a dict of inputs, each run
beside ``torch.autograd.grad``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

X = np.array([[1.0, 2.0, -1.0], [0.5, -3.0, 2.0]])


def _np(gs):
    if isinstance(gs, dict):
        return {k: _np(v) for k, v in gs.items()}
    return [None if g is None else g.detach().numpy() for g in gs]


def _cases(lib):
    x = lib.tensor(X, requires_grad=True)
    w = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
    unused = lib.tensor([1.0], requires_grad=True)
    y = (x * w).tanh().sum(1)
    out = {}
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out["only_inputs"] = _np(lib.autograd.grad(y.sum(), [x, w], None, True, False, False))  # positionally
    out["warned"] = any(issubclass(r.category, FutureWarning) for r in rec)
    out["materialized"] = _np(lib.autograd.grad(y.sum(), [w, unused], retain_graph=True, materialize_grads=True))
    out["allow_none"] = _np(lib.autograd.grad(y.sum(), [w, unused], retain_graph=True, allow_unused=True))
    out["batched"] = _np(lib.autograd.grad(y, [x, w], lib.eye(2, dtype=lib.float64), retain_graph=True,
                                           is_grads_batched=True))  # fmt: skip
    out["dict"] = _np(lib.autograd.grad(y.sum(), {"x": x, "w": w}, retain_graph=True))
    with pytest.raises(RuntimeError):
        lib.autograd.grad(y.sum(), [w, unused], retain_graph=True)  # unused without allow_unused
    with pytest.raises(ValueError):
        lib.autograd.grad(y.sum(), [w], retain_graph=True, allow_unused=False, materialize_grads=True)
    return out


def test_grad_takes_pytorchs_whole_signature():
    e, t = _cases(ember), _cases(torch)
    assert e["warned"] and t["warned"]
    for key in ("only_inputs", "materialized", "allow_none", "batched"):
        for a, b in zip(e[key], t[key], strict=True):
            assert (a is None) == (b is None), key
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=1e-12, err_msg=key)
    assert sorted(e["dict"]) == ["w", "x"]
    for k in e["dict"]:
        np.testing.assert_allclose(e["dict"][k], t["dict"][k], rtol=1e-12)

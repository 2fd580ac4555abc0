"""Complex parameters are updated as PyTorch's optimizers update them: their real and imaginary parts as two
independent reals (``view_as_real``), the state kept complex. Adam, RMSprop and Adagrad used ``|g|^2``-free complex
arithmetic on NumPy (0.3 away from torch's after 3 steps) and raised on the torch backend."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

OPTS = {
    "Adam": dict(lr=0.1), "AdamW": dict(lr=0.1, weight_decay=0.1), "RMSprop": dict(lr=0.01, momentum=0.5),
    "Adagrad": dict(lr=0.1), "Adamax": dict(lr=0.1), "NAdam": dict(lr=0.1), "RAdam": dict(lr=0.1),
    "Adadelta": dict(lr=1.0), "SGD": dict(lr=0.1, momentum=0.9, nesterov=True),
}  # fmt: skip


def _train(lib, name):
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))).astype(np.complex64)
    b = rng.standard_normal(3).astype(np.float32)
    pw, pb = lib.nn.Parameter(lib.tensor(w)), lib.nn.Parameter(lib.tensor(b))  # a complex and a real one together
    opt = getattr(lib.optim, name)([pw, pb], **OPTS[name])
    for _ in range(3):
        loss = (pw * pw.conj()).real.sum() + (pw.real * 3 - pw.imag).sum() + (pb * pb.tanh()).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    state = next(iter(opt.state_dict()["state"].values()))  # the complex parameter's (the first)
    moments = {k: v.numpy() for k, v in state.items() if hasattr(v, "numpy") and v.ndim > 0}
    return pw.detach().numpy(), pb.detach().numpy(), moments


@pytest.mark.parametrize("name", list(OPTS))
def test_complex_parameters_step_as_torch(name):
    ew, eb, es = _train(ember, name)
    tw, tb, ts = _train(torch, name)
    np.testing.assert_allclose(ew, tw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(eb, tb, rtol=1e-5, atol=1e-6)
    assert sorted(es) == sorted(ts)
    for k in ts:
        assert es[k].dtype == ts[k].dtype and es[k].shape == ts[k].shape, k  # the state stays complex
        np.testing.assert_allclose(es[k], ts[k], rtol=1e-5, atol=1e-6)

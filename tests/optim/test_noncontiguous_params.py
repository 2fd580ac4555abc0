"""Parameters the torch backend's fused optimizer kernels cannot take as they are, updated as PyTorch updates them:
one whose memory is not contiguous (a transposed array, as ``orthogonal``'s original; the kernels walk memory flat,
so they get the gradient in the parameter's own layout), and a complex one with SGD (no fused kernel)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

W = np.random.RandomState(5).randn(5, 3)


def _run(lib, name, kw):
    p = lib.nn.Parameter(lib.tensor(W).mT.detach())  # shape (3, 5), transposed memory
    assert not p.is_contiguous()
    opt = getattr(lib.optim, name)([p], **kw)
    c = lib.tensor(np.arange(15.0).reshape(3, 5))
    for _ in range(3):
        ((p * c) ** 2).sum().backward()
        opt.step()
        opt.zero_grad()
    return p.detach().numpy()


@pytest.mark.parametrize(
    ("name", "kw"),
    [
        ("SGD", {"lr": 0.01}),
        ("SGD", {"lr": 0.01, "momentum": 0.9}),
        ("Adam", {"lr": 0.1}),
        ("AdamW", {"lr": 0.1, "amsgrad": True}),
    ],
)
def test_a_transposed_parameter_steps_as_in_torch(name, kw):
    np.testing.assert_allclose(_run(ember, name, kw), _run(torch, name, kw), rtol=1e-12, atol=1e-12)


def test_a_complex_parameter_steps_with_sgd_as_in_torch():
    w = W[:3] + 1j * W[2:]
    out = []
    for lib in (torch, ember):
        p = lib.nn.Parameter(lib.tensor(w))
        opt = lib.optim.SGD([p], lr=0.1, momentum=0.9)
        for _ in range(3):
            (p * p.conj()).real.pow(2).sum().backward()
            opt.step()
            opt.zero_grad()
        out.append(p.detach().numpy())
    np.testing.assert_allclose(out[1], out[0], rtol=1e-12, atol=1e-12)

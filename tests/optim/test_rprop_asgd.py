"""Rprop and ASGD against ``torch.optim``: the same steps under both libraries give the same parameters, and a
state dict saved mid-run continues the run exactly."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

W0 = np.array([[0.5, -1.0, 2.0], [0.1, 0.0, -0.3]])
X = np.array([[1.0, 2.0], [-1.0, 0.5], [0.3, 0.3]])
CASES = [
    ("Rprop", {}),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.2), "maximize": True}),
    ("ASGD", {}),
    ("ASGD", {"lr": 0.05, "lambd": 1e-2, "alpha": 0.5, "t0": 4, "weight_decay": 0.1}),
    ("ASGD", {"lr": 0.02, "t0": 0, "maximize": True}),
]


def _steps(lib, w, opt, first, last):
    x = lib.tensor(X)
    for i in range(first, last):
        loss = ((w @ x).sin() * (i + 1)).sum() + (w**2).sum() * 0.1
        opt.zero_grad()
        loss.backward()
        opt.step()


def _run(lib, name, kw):
    w = lib.tensor(W0, requires_grad=True)
    opt = getattr(lib.optim, name)([w], **kw)
    _steps(lib, w, opt, 0, 12)
    return w.detach().numpy()


@pytest.mark.parametrize(("name", "kw"), CASES)
def test_steps_match_torch(name, kw):
    np.testing.assert_allclose(_run(ember, name, kw), _run(torch, name, kw), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(("name", "kw"), CASES[1:4:2])
def test_state_dict_resumes_the_run(name, kw):
    w = ember.tensor(W0, requires_grad=True)
    opt = getattr(ember.optim, name)([w], **kw)
    _steps(ember, w, opt, 0, 5)
    saved_w, saved = w.detach().clone(), opt.state_dict()
    _steps(ember, w, opt, 5, 12)
    w2 = ember.tensor(saved_w.numpy(), requires_grad=True)
    opt2 = getattr(ember.optim, name)([w2], **kw)
    opt2.load_state_dict(saved)
    _steps(ember, w2, opt2, 5, 12)
    np.testing.assert_array_equal(w2.detach().numpy(), w.detach().numpy())

"""``optim.Adafactor`` against ``torch.optim.Adafactor``: the same steps under both libraries give the same 1-d, 2-d,
3-d and 0-d parameters (defaults, weight decay, maximize, eps, d, float32), the state has PyTorch's keys and shapes, a
state dict saved mid-run continues the run exactly, and bad options raise as PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

R = np.random.RandomState(2)
W = R.randn(4, 3)
B = R.randn(4)
T = R.randn(2, 3, 4)
S = np.array(0.7)
X = R.randn(3, 5)
CASES = [
    {},
    {"lr": 0.05, "weight_decay": 0.1},
    {"maximize": True, "lr": 0.02},
    {"beta2_decay": -0.5, "eps": (1e-6, 1e-2), "d": 2.0},
    {"lr": 0.5, "d": 1.0},  # lr above 1/sqrt(t): the relative step decides
]


def _params(lib, dtype):
    return [lib.tensor(a.astype(dtype), requires_grad=True) for a in (W, B, T, S)]


def _loss(lib, ps, i):
    w, b, t, s = ps
    x = lib.tensor(X.astype(np.dtype(str(w.dtype).split(".")[-1])))
    return ((w @ x).sin() * (i + 1)).sum() + (b**3).sum() + (t * t.cos()).sum() + s * s * (i - 2)


def _steps(lib, ps, opt, first, last):
    for i in range(first, last):
        opt.zero_grad()
        _loss(lib, ps, i).backward()
        opt.step()


def _run(lib, kw, dtype="float64", n=8):
    ps = _params(lib, dtype)
    opt = lib.optim.Adafactor(ps, **kw)
    _steps(lib, ps, opt, 0, n)
    return [p.detach().numpy() for p in ps], opt


@pytest.mark.parametrize("kw", CASES)
def test_steps_match_torch(kw):
    e, _ = _run(ember, kw)
    t, _ = _run(torch, kw)
    for a, b in zip(e, t, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_float32_steps_match_torch():
    e, _ = _run(ember, {"weight_decay": 0.01}, "float32")
    t, _ = _run(torch, {"weight_decay": 0.01}, "float32")
    for a, b in zip(e, t, strict=True):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)


def test_state_has_torchs_keys_and_shapes():
    _, eo = _run(ember, {}, n=2)
    _, to = _run(torch, {}, n=2)
    esd, tsd = eo.state_dict(), to.state_dict()
    es = [esd["state"][k] for k in esd["param_groups"][0]["params"]]
    ts = [tsd["state"][k] for k in tsd["param_groups"][0]["params"]]
    for a, b in zip(es, ts, strict=True):
        assert sorted(k for k in a if not k.startswith("_")) == sorted(b)
        assert float(a["step"]) == float(b["step"]) == 2.0
        for k in b:
            if k != "step":
                assert tuple(np.shape(a[k])) == tuple(b[k].shape)
                np.testing.assert_allclose(np.asarray(a[k].numpy() if hasattr(a[k], "numpy") else a[k]),
                                           b[k].numpy(), rtol=1e-10)  # fmt: skip
    assert eo.param_groups[0]["eps"] == to.param_groups[0]["eps"] == (None, 1e-3)
    assert {k: v for k, v in eo.defaults.items() if k in to.defaults} == {k: to.defaults[k] for k in eo.defaults
                                                                          if k in to.defaults}  # fmt: skip


def test_state_dict_resumes_the_run():
    kw = {"weight_decay": 0.05}
    ps = _params(ember, "float64")
    opt = ember.optim.Adafactor(ps, **kw)
    _steps(ember, ps, opt, 0, 4)
    saved_p, saved = [p.detach().clone() for p in ps], opt.state_dict()
    _steps(ember, ps, opt, 4, 9)
    ps2 = [ember.tensor(p.numpy(), requires_grad=True) for p in saved_p]
    opt2 = ember.optim.Adafactor(ps2, **kw)
    opt2.load_state_dict(saved)
    _steps(ember, ps2, opt2, 4, 9)
    for a, b in zip(ps2, ps, strict=True):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
@pytest.mark.parametrize(
    ("kw", "msg"),
    [
        ({"lr": -1.0}, "Learning rate"),
        ({"beta2_decay": 0.1}, "beta2_decay"),
        ({"eps": (-1.0, 1e-3)}, "epsilon1"),
        ({"eps": (None, -1.0)}, "epsilon2"),
        ({"d": 0.5}, "Clipping threshold d"),
        ({"weight_decay": -1.0}, "weight_decay"),
    ],
)
def test_bad_options_raise_as_torch(lib, kw, msg):
    with pytest.raises(ValueError, match=msg):
        lib.optim.Adafactor([lib.zeros(2, requires_grad=True)], **kw)


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_complex_parameters_are_refused_as_torch(lib):
    p = lib.zeros(2, dtype=lib.complex128, requires_grad=True)
    opt = lib.optim.Adafactor([p])
    (p.abs() ** 2).sum().backward()
    with pytest.raises(RuntimeError, match="Adafactor does not support complex parameters"):
        opt.step()

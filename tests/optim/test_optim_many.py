"""The multi-tensor optimizer step (one fused kernel for a group's parameters, where the backend has one)
against the per-parameter step: bit-identical, including the cases that split a group (dtypes, first steps,
parameters that skipped steps)."""

import numpy as np
import pytest

import ember
from ember import backends, nn, optim
from ember.optim._algorithms import _SGD, _Adam

CASES = [
    ("SGD", {"lr": 0.05, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.1}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.1}),
]


def _run(name, opts, backend, many):
    """Five steps over parameters of two dtypes; the third parameter gets no gradient on the first two steps."""
    rng = np.random.default_rng(0)
    be = backends.get(backend, "cpu")
    ps = [
        nn.Param(ember.tensor(rng.standard_normal((4, 3)), dtype=ember.float32, device=be)),
        nn.Param(ember.tensor(rng.standard_normal(3), dtype=ember.float64, device=be)),
        nn.Param(ember.tensor(rng.standard_normal((2, 2)), dtype=ember.float32, device=be)),
        nn.Param(ember.tensor(rng.standard_normal(5), dtype=ember.float32, device=be)),
    ]
    opt = getattr(optim, name)(ps, **opts)
    for step in range(5):
        opt.zero_grad()
        live = ps if step >= 2 else [ps[0], ps[1], ps[3]]
        loss = sum(((p * (step + 1.0)) ** 2).sum().to(ember.float64) for p in live)
        loss.backward()
        opt.step()
    return [p.detach().numpy() for p in ps], opt.state_dict()


@pytest.mark.parametrize("name,opts", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_many_equals_one_by_one(name, opts, backend, monkeypatch):
    if backend not in backends.available() or "cpu" not in backends.available()[backend].devices:
        pytest.skip(f"{backend} not installed")
    got, got_state = _run(name, opts, backend, many=True)
    monkeypatch.setattr(_SGD, "many_kernel", None)
    monkeypatch.setattr(_Adam, "many_kernel", None)
    want, want_state = _run(name, opts, backend, many=False)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    assert len(got_state["state"]) == len(want_state["state"]) == 4
    for k, (st_got, st) in enumerate(zip(got_state["state"].values(), want_state["state"].values(), strict=True)):
        assert st_got.keys() == st.keys()
        for n, v in st.items():
            a = st_got[n]
            if hasattr(v, "numpy"):
                np.testing.assert_array_equal(a.numpy(), v.numpy(), err_msg=f"state {k}.{n}")
            else:
                assert a == v, f"state {k}.{n}"


def test_the_torch_backend_takes_the_multi_tensor_path(monkeypatch):
    if "torch" not in backends.available():
        pytest.skip("torch not installed")
    be = backends.get("torch", "cpu")
    calls = []
    orig = type(be).sgd_step_many
    monkeypatch.setattr(type(be), "sgd_step_many", lambda self, ps, *a: calls.append(len(ps)) or orig(self, ps, *a))
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).to(be)
    opt = optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    for _ in range(2):
        opt.zero_grad()
        m(ember.randn(5, 3, device=be)).sum().backward()
        opt.step()
    assert calls == [4, 4]

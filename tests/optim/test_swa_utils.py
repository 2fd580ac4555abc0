"""``optim.swa_utils`` run the same way under PyTorch and Ember: SWA and EMA averages, SWALR's rates, update_bn."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _train(t: Any, avg: str, strategy: str, dtype: str = "float32") -> tuple[list[np.ndarray], list[float], Any]:
    """A small BN model trained 12 steps by SGD under SWALR, averaged from step 4: (averaged weights and
    buffers, the rates seen, the averaged model)."""
    rng = np.random.default_rng(0)
    d = getattr(t, dtype)
    model = t.nn.Sequential(t.nn.Linear(4, 6), t.nn.BatchNorm1d(6), t.nn.ReLU(), t.nn.Linear(6, 1)).to(d)
    with t.no_grad():
        for p in model.parameters():
            p.copy_(t.tensor(rng.standard_normal(tuple(p.shape))))
    kw: dict[str, Any] = {}
    if avg == "ema":
        kw["multi_avg_fn"] = t.optim.swa_utils.get_ema_multi_avg_fn(0.9)
    elif avg == "ema_avg_fn":
        kw["avg_fn"] = t.optim.swa_utils.get_ema_avg_fn(0.9)
    elif avg == "swa_avg_fn":
        kw["avg_fn"] = t.optim.swa_utils.get_swa_avg_fn()
    swa = t.optim.swa_utils.AveragedModel(model, use_buffers=avg == "ema", **kw)
    opt = t.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = t.optim.swa_utils.SWALR(opt, swa_lr=0.02, anneal_epochs=3, anneal_strategy=strategy)
    lrs = []
    for step in range(12):
        x = t.tensor(rng.standard_normal((8, 4))).to(d)
        loss = (model(x) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step >= 4:
            swa.update_parameters(model)
            sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    data = [t.tensor(rng.standard_normal((8, 4))).to(d) for _ in range(3)]
    t.optim.swa_utils.update_bn([(x, 0) for x in data], swa)
    state = [v.detach().numpy().copy() for v in swa.state_dict().values()]
    return state, lrs, swa


@pytest.mark.parametrize(
    "avg, strategy, dtype",
    [("swa", "cos", "float32"), ("swa", "linear", "float64"), ("ema", "cos", "float32"),
     ("ema_avg_fn", "linear", "float32"), ("swa_avg_fn", "cos", "float64")],
)  # fmt: skip
def test_averaged_model_and_swalr_match_pytorch(avg: str, strategy: str, dtype: str) -> None:
    want, want_lrs, tswa = _train(torch, avg, strategy, dtype)
    got, got_lrs, eswa = _train(ember, avg, strategy, dtype)
    assert list(eswa.state_dict()) == list(tswa.state_dict())
    np.testing.assert_allclose(got_lrs, want_lrs, rtol=1e-12)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=2e-5 if dtype == "float32" else 1e-12, atol=1e-6)
    assert int(eswa.n_averaged) == int(tswa.n_averaged) == 8


def test_swa_utils_refuse_bad_arguments() -> None:
    opt = ember.optim.SGD([ember.zeros(2, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="anneal_strategy"):
        ember.optim.swa_utils.SWALR(opt, 0.05, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs"):
        ember.optim.swa_utils.SWALR(opt, 0.05, anneal_epochs=-1)
    with pytest.raises(ValueError, match="swa_lr"):
        ember.optim.swa_utils.SWALR(opt, [0.05, 0.01])

"""RelaxedBernoulli and RelaxedOneHotCategorical against torch.distributions and against their definitions."""

import numpy as np
import pytest

import ember
from ember import distributions as D
from ember.testing import assert_close, torch_or_none

torch = torch_or_none()
needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
rng = np.random.default_rng(31)

P = {
    "temp": np.array(0.7),
    "probs": rng.uniform(0.1, 0.9, (2, 3)),
    "logits": rng.standard_normal((2, 3)),
    "cprobs": rng.dirichlet(np.ones(4), (2, 3)),
    "clogits": rng.standard_normal((2, 3, 4)),
}
CASES = {
    "RelaxedBernoulli_probs": (lambda d, t: d.RelaxedBernoulli(t["temp"], probs=t["probs"]), ["temp", "probs"],
                               rng.uniform(0.02, 0.98, (5, 2, 3))),
    "RelaxedBernoulli_logits": (lambda d, t: d.RelaxedBernoulli(t["temp"], logits=t["logits"]), ["temp", "logits"],
                                rng.uniform(0.02, 0.98, (2, 3))),
    "RelaxedOneHot_probs": (lambda d, t: d.RelaxedOneHotCategorical(t["temp"], probs=t["cprobs"]),
                            ["temp", "cprobs"], rng.dirichlet(np.ones(4), (5, 2, 3))),
    "RelaxedOneHot_logits": (lambda d, t: d.RelaxedOneHotCategorical(t["temp"], logits=t["clogits"]),
                             ["temp", "clogits"], rng.dirichlet(np.ones(4) * 0.5, (2, 3))),
}  # fmt: skip


def _build(lib, case):
    ctor, names, _ = CASES[case]
    mk = ember.tensor if lib is D else torch.tensor
    ts = {k: mk(P[k], requires_grad=True) for k in names}
    return ctor(lib, ts), ts


@needs_torch
@pytest.mark.parametrize("case", sorted(CASES))
def test_parity_with_torch(case):
    value = CASES[case][2]
    e, et = _build(D, case)
    t, tt = _build(torch.distributions, case)
    assert e.batch_shape == tuple(t.batch_shape) and e.event_shape == tuple(t.event_shape)
    assert e.has_rsample and t.has_rsample
    el, tl = e.log_prob(ember.tensor(value)), t.log_prob(torch.tensor(value))
    assert_close(el, tl, rtol=1e-10, atol=1e-12, msg=case)
    assert_close(e.probs, t.probs, rtol=1e-12)
    assert_close(e.logits, t.logits, rtol=1e-12)
    w = np.random.default_rng(0).standard_normal(tuple(tl.shape))
    eg = ember.autograd.grad((el * ember.tensor(w)).sum(), list(et.values()))
    tg = torch.autograd.grad((tl * torch.tensor(w)).sum(), list(tt.values()))
    for n, a, b in zip(et, eg, tg, strict=True):
        assert_close(a, b, rtol=1e-9, atol=1e-11, msg=f"{case} grad of {n}")
    for attr in ("mean", "variance"):  # neither library has closed-form moments
        with pytest.raises(NotImplementedError):
            getattr(t, attr)
        with pytest.raises(NotImplementedError):
            getattr(e, attr)


def test_relaxed_bernoulli_rsample_gradient():
    """y = sigmoid((logit(u) + logits) / T): dy/dlogits = y(1-y)/T and dy/dT = -y(1-y) logit(y) / T."""
    temp = ember.tensor(0.7, dtype=ember.float64, requires_grad=True)
    logits = ember.tensor(P["logits"], requires_grad=True)
    ember.manual_seed(3)
    y = D.RelaxedBernoulli(temp, logits=logits).rsample((4,))
    gl, gt = ember.autograd.grad(y.sum(), [logits, temp])
    yv = y.detach().numpy()
    assert_close(gl, (yv * (1 - yv) / 0.7).sum(0), rtol=1e-9)
    assert_close(gt, (-yv * (1 - yv) * np.log(yv / (1 - yv)) / 0.7).sum(), rtol=1e-8)


def test_relaxed_one_hot_rsample_gradient():
    """y = softmax((logits + g) / T): d(w.y)/dlogits = (diag(y) - y y^T) w / T."""
    temp = ember.tensor(0.7, dtype=ember.float64)
    logits = ember.tensor(P["clogits"], requires_grad=True)
    ember.manual_seed(4)
    y = D.RelaxedOneHotCategorical(temp, logits=logits).rsample()
    w = np.random.default_rng(2).standard_normal(tuple(y.shape))
    (g,) = ember.autograd.grad((y * ember.tensor(w)).sum(), [logits])
    yv = y.detach().numpy()
    want = (yv * w - yv * (yv * w).sum(-1, keepdims=True)) / 0.7
    assert_close(g, want, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("case", sorted(CASES))
def test_samples(case):
    """Relaxed samples round to the discrete distribution: P(y > 1/2) = probs; argmax ~ Categorical(probs)."""
    ember.manual_seed(77)
    d, _ = _build(D, case)
    n = 20000
    x = d.sample((n,))
    assert tuple(x.shape) == (n, *d.batch_shape, *d.event_shape) and not x.requires_grad
    assert bool(d.support.check(x).all())
    xs, probs = x.numpy(), d.probs.detach().numpy()
    if case.startswith("RelaxedBernoulli"):
        freq = (xs > 0.5).mean(0)
    else:
        freq = np.stack([(xs.argmax(-1) == k).mean(0) for k in range(4)], -1)
    assert np.all(np.abs(freq - probs) < 5 * np.sqrt(probs * (1 - probs) / n)), (case, freq, probs)


def test_validation_and_expand():
    with pytest.raises(ValueError, match="probs"):
        D.RelaxedBernoulli(ember.tensor(0.5), probs=ember.tensor([1.5]))
    with pytest.raises(ValueError, match="either"):
        D.RelaxedBernoulli(ember.tensor(0.5))
    with pytest.raises(ValueError, match="probs"):
        D.RelaxedOneHotCategorical(ember.tensor(0.5), probs=ember.tensor([0.5, -0.2, 0.7]))
    with pytest.raises(ValueError, match="support"):
        D.RelaxedBernoulli(ember.tensor(0.5), logits=ember.zeros(2)).log_prob(ember.tensor([0.5, 1.5]))
    for case in CASES:
        d, _ = _build(D, case)
        big = d.expand((4, *d.batch_shape))
        assert type(big) is type(d) and big.batch_shape == (4, *d.batch_shape)
        assert big.rsample((2,)).shape == (2, 4, *d.batch_shape, *d.event_shape)
        v = ember.tensor(CASES[case][2][:1])
        assert_close(big.log_prob(v), d.log_prob(v).expand(4, *d.batch_shape), rtol=1e-12)

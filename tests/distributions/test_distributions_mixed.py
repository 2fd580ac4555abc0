"""OneHotCategorical(StraightThrough), Multinomial, NegativeBinomial, MixtureSameFamily against torch.distributions."""

import numpy as np
import pytest

import ember
from ember import distributions as D
from ember.testing import assert_close, torch_or_none

torch = torch_or_none()
needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
rng = np.random.default_rng(23)

P = {
    "probs": rng.dirichlet(np.ones(4), (2, 3)),
    "logits": rng.standard_normal((2, 3, 4)),
    "bprobs": rng.uniform(0.1, 0.8, (2, 3)),
    "blogits": rng.standard_normal((2, 3)),
    "count": rng.uniform(0.5, 6.0, (2, 3)),
    "mix": rng.standard_normal((2, 4)),
    "loc": rng.standard_normal((2, 4)),
    "scale": rng.uniform(0.5, 2.0, (2, 4)),
    "mloc": rng.standard_normal((2, 4, 3)),
    "mscale": rng.uniform(0.5, 2.0, (2, 4, 3)),
}
ONE_HOT = np.eye(4)[rng.integers(0, 4, (5, 2, 3))]
COUNTS = np.stack([rng.multinomial(7, p) for p in P["probs"].reshape(-1, 4)] * 5).reshape(5, 2, 3, 4) * 1.0
CASES = {  # name: (constructor over lib and tensors, params, values)
    "OneHot_probs": (lambda d, t: d.OneHotCategorical(probs=t["probs"]), ["probs"], ONE_HOT),
    "OneHot_logits": (lambda d, t: d.OneHotCategorical(logits=t["logits"]), ["logits"], ONE_HOT),
    "OneHotST": (lambda d, t: d.OneHotCategoricalStraightThrough(logits=t["logits"]), ["logits"], ONE_HOT),
    "Multinomial_probs": (lambda d, t: d.Multinomial(7, probs=t["probs"]), ["probs"], COUNTS),
    "Multinomial_logits": (lambda d, t: d.Multinomial(7, logits=t["logits"]), ["logits"], COUNTS),
    "NegBin_probs": (lambda d, t: d.NegativeBinomial(t["count"], probs=t["bprobs"]), ["count", "bprobs"],
                     rng.integers(0, 12, (5, 2, 3)) * 1.0),
    "NegBin_logits": (lambda d, t: d.NegativeBinomial(t["count"], logits=t["blogits"]), ["count", "blogits"],
                      rng.integers(0, 12, (5, 2, 3)) * 1.0),
    "Mixture_normal": (lambda d, t: d.MixtureSameFamily(d.Categorical(logits=t["mix"]), d.Normal(t["loc"], t["scale"])),
                       ["mix", "loc", "scale"], 2 * rng.standard_normal((5, 2))),
    "Mixture_independent": (lambda d, t: d.MixtureSameFamily(
        d.Categorical(logits=t["mix"]), d.Independent(d.Normal(t["mloc"], t["mscale"]), 1)),
        ["mix", "mloc", "mscale"], 2 * rng.standard_normal((5, 2, 3))),
    "Mixture_gamma": (lambda d, t: d.MixtureSameFamily(d.Categorical(probs=t["mix"].exp()),
                                                       d.Gamma(t["scale"], t["scale"] + 1)),
                      ["mix", "scale"], rng.uniform(0.1, 4.0, (5, 2))),
}  # fmt: skip


def _build(lib, case):
    ctor, names, _ = CASES[case]
    mk = ember.tensor if lib is D else torch.tensor
    ts = {k: mk(P[k], requires_grad=True) for k in names}
    return ctor(lib, ts), ts


def _outputs(lib, d, value):
    mk = ember.tensor if lib is D else torch.tensor
    out = {"log_prob": d.log_prob(mk(value))}
    for name in ("mean", "variance", "stddev", "mode", "entropy", "cdf"):
        try:
            v = d.entropy() if name == "entropy" else d.cdf(mk(value)) if name == "cdf" else getattr(d, name)
        except NotImplementedError:
            v = None
        out[name] = v
    return out


@needs_torch
@pytest.mark.parametrize("case", sorted(CASES))
def test_parity_with_torch(case):
    value = CASES[case][2]
    e, et = _build(D, case)
    t, tt = _build(torch.distributions, case)
    assert e.batch_shape == tuple(t.batch_shape) and e.event_shape == tuple(t.event_shape)
    assert e.has_rsample == t.has_rsample and e.has_enumerate_support == t.has_enumerate_support
    eo, to = _outputs(D, e, value), _outputs(torch.distributions, t, value)
    assert [k for k in eo if eo[k] is None] == [k for k in to if to[k] is None], case
    # Gamma's cdf (igamma) has no derivative in the concentration in PyTorch: compare it by value only
    keys = [k for k in to if to[k] is not None]
    for k in keys:
        # PyTorch's Multinomial.entropy takes lgamma(total_count + 1) in float32 (torch.tensor(int)): 4e-7 off;
        # Ember's is float64 (checked exactly in test_multinomial_entropy_by_enumeration)
        tol = 1e-6 if case.startswith("Multinomial") and k == "entropy" else 1e-12
        assert_close(eo[k], to[k], rtol=1e-10, atol=tol, msg=f"{case}.{k}")
    keys = [k for k in keys if to[k].requires_grad and not (k == "cdf" and case == "Mixture_gamma")]
    ws = {k: np.random.default_rng(i).standard_normal(tuple(to[k].shape)) for i, k in enumerate(keys)}
    eg = ember.autograd.grad(sum((eo[k] * ember.tensor(ws[k])).sum() for k in keys), list(et.values()))
    tg = torch.autograd.grad(sum((to[k] * torch.tensor(ws[k])).sum() for k in keys), list(tt.values()))
    for n, a, b in zip(et, eg, tg, strict=True):
        assert_close(a, b, rtol=1e-9, atol=1e-11, msg=f"{case} grad of {n}")


@pytest.mark.parametrize("case", sorted(CASES))
def test_sample_moments(case):
    ember.manual_seed(4321)
    d, _ = _build(D, case)
    n = 20000
    x = d.sample((n,))
    assert tuple(x.shape) == (n, *d.batch_shape, *d.event_shape) and not x.requires_grad
    assert bool(d.support.check(x).all())
    xs = x.numpy()
    mean, var = d.mean.detach().numpy(), d.variance.detach().numpy()
    assert np.all(np.abs(xs.mean(0) - mean) < 5 * np.sqrt(var / n)), (case, xs.mean(0), mean)
    fourth = ((xs - xs.mean(0)) ** 4).mean(0)  # the sample variance's standard error, from the sample itself
    se_var = np.sqrt(np.maximum(fourth - xs.var(0) ** 2, 0) / n)
    assert np.all(np.abs(xs.var(0) - var) < 6 * se_var + 1e-12), (case, xs.var(0), var)


def test_multinomial_entropy_by_enumeration():
    """-sum p log p over every count vector of 7 draws in 4 categories (120 of them), in float64."""
    from itertools import product
    from math import lgamma

    probs = P["probs"][0, 0]
    logp = []
    for c in product(range(8), repeat=4):
        if sum(c) == 7:
            logp.append(lgamma(8) - sum(lgamma(k + 1) for k in c) + sum(k * np.log(q) for k, q in zip(c, probs)))
    logp = np.array(logp)
    want = -(np.exp(logp) * logp).sum()
    got = D.Multinomial(7, probs=ember.tensor(probs)).entropy().item()
    assert abs(got - want) < 1e-12 * abs(want), (got, want)


def test_straight_through_rsample_gradient():
    """rsample's value is a one-hot sample and its gradient is that of the probabilities."""
    logits = ember.tensor(P["logits"], requires_grad=True)
    d = D.OneHotCategoricalStraightThrough(logits=logits)
    ember.manual_seed(0)
    x = d.rsample((3,))
    assert bool(D.constraints.one_hot.check(x.detach()).all())
    w = ember.tensor(np.random.default_rng(1).standard_normal(tuple(x.shape)))
    (g,) = ember.autograd.grad((x * w).sum(), [logits], retain_graph=True)
    (want,) = ember.autograd.grad((d.probs * w.sum(0)).sum(), [logits])
    assert_close(g, want, rtol=1e-12)
    assert not D.OneHotCategorical(logits=logits).has_rsample


@needs_torch
def test_enumerate_support_and_expand():
    e = D.OneHotCategorical(probs=ember.tensor(P["probs"]))
    t = torch.distributions.OneHotCategorical(probs=torch.tensor(P["probs"]))
    for expand in (True, False):
        assert_close(e.enumerate_support(expand), t.enumerate_support(expand))
    for case in CASES:
        d, _ = _build(D, case)
        big = d.expand((4, *d.batch_shape))
        assert type(big) is type(d) and big.batch_shape == (4, *d.batch_shape) and big.event_shape == d.event_shape
        assert big.sample((2,)).shape == (2, 4, *d.batch_shape, *d.event_shape)
        v = ember.tensor(CASES[case][2][:1])
        assert_close(big.log_prob(v), d.log_prob(v).expand(4, *d.batch_shape), rtol=1e-12)


def test_validation():
    bad = [
        (lambda: D.OneHotCategorical(probs=ember.tensor([0.5, -0.1, 0.6])), "probs"),
        (lambda: D.OneHotCategorical(), "either"),
        (lambda: D.Multinomial(3, probs=ember.tensor([0.5, -0.1, 0.6])), "probs"),
        (lambda: D.NegativeBinomial(ember.tensor([-1.0]), probs=0.5), "total_count"),
        (lambda: D.NegativeBinomial(2.0, probs=ember.tensor([1.0])), "probs"),
        (lambda: D.NegativeBinomial(2.0), "either"),
        (lambda: D.MixtureSameFamily(D.Normal(0.0, 1.0), D.Normal(ember.zeros(3), 1.0)), "Categorical"),
        (lambda: D.MixtureSameFamily(D.Categorical(logits=ember.zeros(2)), D.Normal(ember.zeros(3), 1.0)), r"\(2\)"),
    ]
    for ctor, msg in bad:
        with pytest.raises(ValueError, match=msg):
            ctor()
    with pytest.raises(NotImplementedError, match="inhomogeneous"):
        D.Multinomial(ember.tensor(3), probs=ember.ones(3))
    for d, v in [
        (D.OneHotCategorical(logits=ember.zeros(3)), ember.tensor([1.0, 1.0, 0.0])),
        (D.Multinomial(2, logits=ember.zeros(3)), ember.tensor([1.0, 2.0, 0.0])),
        (D.NegativeBinomial(2.0, logits=ember.zeros(3)), ember.tensor([1.0, 0.5, 0.0])),
        (D.MixtureSameFamily(D.Categorical(logits=ember.zeros(2)), D.Gamma(ember.ones(2), 1.0)), ember.tensor(-1.0)),
    ]:
        with pytest.raises(ValueError, match="support"):
            d.log_prob(v)

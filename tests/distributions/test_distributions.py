"""ember.distributions against torch.distributions: densities, moments, entropies, KL, gradients, sampling."""

import math

import numpy as np
import pytest

import ember
from ember import distributions as D
from ember.testing import assert_close, torch_or_none

torch = torch_or_none()
needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
rng = np.random.default_rng(7)


def _spd(n, *batch):
    a = rng.standard_normal((*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


P = {  # parameters shared by both frameworks (float64)
    "loc": rng.standard_normal((2, 3)),
    "scale": rng.uniform(0.5, 2.0, (2, 3)),
    "low": rng.uniform(-2, -1, (3,)),
    "high": rng.uniform(1, 2, (3,)),
    "probs": rng.uniform(0.1, 0.9, (2, 3)),
    "logits": rng.standard_normal((2, 3)),
    "cprobs": rng.uniform(0.1, 1.0, (2, 4)),
    "clogits": rng.standard_normal((2, 4)),
    "conc": rng.uniform(0.5, 3.0, (2, 3)),
    "rate": rng.uniform(0.5, 2.0, (2, 3)),
    "c1": rng.uniform(0.5, 3.0, (3,)),
    "c0": rng.uniform(0.5, 3.0, (3,)),
    "dconc": rng.uniform(0.5, 3.0, (2, 4)),
    "mloc": rng.standard_normal((2, 3)),
    "cov": _spd(3, 2),
    "lscale": rng.uniform(0.2, 0.4, (2, 3)),
}
P["tril"] = np.linalg.cholesky(P["cov"])
P["prec"] = np.linalg.inv(P["cov"])

# name: (constructor over a module lib (ember.distributions / torch.distributions) and tensors, params, values)
CASES = {
    "Normal": (lambda d, t: d.Normal(t["loc"], t["scale"]), ["loc", "scale"], rng.standard_normal((4, 2, 3))),
    "Uniform": (lambda d, t: d.Uniform(t["low"], t["high"]), ["low", "high"], rng.uniform(-0.9, 0.9, (5, 3))),
    "Bernoulli_probs": (lambda d, t: d.Bernoulli(probs=t["probs"]), ["probs"], (rng.random((4, 2, 3)) < 0.5) * 1.0),
    "Bernoulli_logits": (lambda d, t: d.Bernoulli(logits=t["logits"]), ["logits"], (rng.random((2, 3)) < 0.5) * 1.0),
    "Categorical_probs": (lambda d, t: d.Categorical(probs=t["cprobs"]), ["cprobs"], rng.integers(0, 4, (5, 2))),
    "Categorical_logits": (lambda d, t: d.Categorical(logits=t["clogits"]), ["clogits"], rng.integers(0, 4, (2,))),
    "Gamma": (lambda d, t: d.Gamma(t["conc"], t["rate"]), ["conc", "rate"], rng.uniform(0.1, 4, (4, 2, 3))),
    "Beta": (lambda d, t: d.Beta(t["c1"], t["c0"]), ["c1", "c0"], rng.uniform(0.05, 0.95, (4, 3))),
    "Dirichlet": (lambda d, t: d.Dirichlet(t["dconc"]), ["dconc"], rng.dirichlet(np.ones(4), (3, 2))),
    "MVN_cov": (lambda d, t: d.MultivariateNormal(t["mloc"], covariance_matrix=t["cov"]), ["mloc", "cov"],
                rng.standard_normal((4, 2, 3))),
    "MVN_tril": (lambda d, t: d.MultivariateNormal(t["mloc"], scale_tril=t["tril"]), ["mloc", "tril"],
                 rng.standard_normal((2, 3))),
    "MVN_prec": (lambda d, t: d.MultivariateNormal(t["mloc"], precision_matrix=t["prec"]), ["mloc", "prec"],
                 rng.standard_normal((4, 1, 3))),
    "Exponential": (lambda d, t: d.Exponential(t["rate"]), ["rate"], rng.uniform(0.05, 4, (4, 2, 3))),
    "Laplace": (lambda d, t: d.Laplace(t["loc"], t["scale"]), ["loc", "scale"], rng.standard_normal((4, 2, 3))),
    "Independent": (lambda d, t: d.Independent(d.Normal(t["loc"], t["scale"]), 1), ["loc", "scale"],
                    rng.standard_normal((4, 2, 3))),
    "Poisson": (lambda d, t: d.Poisson(t["rate"]), ["rate"], rng.integers(0, 6, (4, 2, 3)) * 1.0),
    "Binomial_probs": (lambda d, t: d.Binomial(5, probs=t["probs"]), ["probs"], rng.integers(0, 6, (4, 2, 3)) * 1.0),
    "Binomial_logits": (lambda d, t: d.Binomial(7, logits=t["logits"]), ["logits"], rng.integers(0, 8, (2, 3)) * 1.0),
    "Geometric_probs": (lambda d, t: d.Geometric(probs=t["probs"]), ["probs"], rng.integers(0, 9, (4, 2, 3)) * 1.0),
    "Geometric_logits": (lambda d, t: d.Geometric(logits=t["logits"]), ["logits"], rng.integers(0, 9, (2, 3)) * 1.0),
    "Cauchy": (lambda d, t: d.Cauchy(t["loc"], t["scale"]), ["loc", "scale"], 3 * rng.standard_normal((4, 2, 3))),
    "LogNormal": (lambda d, t: d.LogNormal(t["loc"], t["lscale"]), ["loc", "lscale"], rng.uniform(0.1, 5, (4, 2, 3))),
}  # fmt: skip
DISCRETE = ("Bernoulli", "Categorical", "Poisson", "Binomial", "Geometric")


def _build(lib, case, dtype="float64"):
    ctor, names, _ = CASES[case]
    if lib is D:
        ts = {k: ember.tensor(P[k].astype(dtype), requires_grad=True) for k in names}
    else:
        ts = {k: torch.tensor(P[k].astype(dtype), requires_grad=True) for k in names}
    return ctor(lib, ts), ts


def _value(lib, case, dtype):
    v = CASES[case][2]
    if v.dtype.kind == "i":
        return ember.tensor(v) if lib is D else torch.tensor(v)
    return ember.tensor(v.astype(dtype)) if lib is D else torch.tensor(v.astype(dtype))


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_parity_with_torch(case, dtype):
    """log_prob, entropy, moments and cdf/icdf equal torch's; so do their gradients in the parameters."""
    rtol, atol = (2e-4, 1e-5) if dtype == "float32" else (1e-9, 1e-11)
    e, et = _build(D, case, dtype)
    t, tt = _build(torch.distributions, case, dtype)
    assert e.batch_shape == tuple(t.batch_shape) and e.event_shape == tuple(t.event_shape)
    ev, tv = _value(D, case, dtype), _value(torch.distributions, case, dtype)
    e_out, t_out = [e.log_prob(ev)], [t.log_prob(tv)]
    try:
        t_out.append(t.entropy())
    except NotImplementedError:  # PyTorch has none (Poisson): neither has Ember
        with pytest.raises(NotImplementedError):
            e.entropy()
    else:
        e_out.append(e.entropy())
    for attr in ("mean", "variance", "stddev", "mode"):
        try:
            t_out.append(getattr(t, attr))
        except NotImplementedError:
            continue
        e_out.append(getattr(e, attr))
    for method, arg in (("cdf", tv), ("icdf", None)):
        try:
            if method == "icdf":
                q = torch.tensor(rng.uniform(0.05, 0.95, tuple(t.batch_shape)).astype(dtype))
                t_out.append(t.icdf(q))
                e_out.append(e.icdf(ember.tensor(q.numpy())))
            else:
                # torch's igamma (Gamma's cdf) has no derivative in the concentration: compare values only
                cut = case == "Gamma"
                t_out.append(t.cdf(arg).detach() if cut else t.cdf(arg))
                e_out.append(e.cdf(ev).detach() if cut else e.cdf(ev))
        except NotImplementedError:
            continue
    for k, (a, b) in enumerate(zip(e_out, t_out, strict=True)):
        assert_close(a, b, rtol=rtol, atol=atol, msg=f"{case} output {k}")
    weights = [np.random.default_rng(k).standard_normal(tuple(b.shape)).astype(dtype) for k, b in enumerate(t_out)]
    use = [a.requires_grad and bool(np.isfinite(a.detach().numpy()).all()) for a in e_out]  # not the NaN modes
    e_loss = sum((a * ember.tensor(w)).sum() for a, w, u in zip(e_out, weights, use, strict=True) if u)
    t_loss = sum((b * torch.tensor(w)).sum() for b, w, u in zip(t_out, weights, use, strict=True) if u)
    names = list(et)
    e_g = ember.autograd.grad(e_loss, [et[n] for n in names], allow_unused=True)
    t_g = torch.autograd.grad(t_loss, [tt[n] for n in names], allow_unused=True)
    for n, a, b in zip(names, e_g, t_g, strict=True):
        if b is None:
            continue
        assert_close(a, b, rtol=rtol * 10, atol=atol * 10, msg=f"{case} grad of {n}")


# (case, number of samples) for moment checks; tolerances are many standard errors wide
@pytest.mark.parametrize("case", [c for c in sorted(CASES) if c != "Cauchy"])  # Cauchy: no moments; see below
def test_sample_moments(case):
    ember.manual_seed(1234)
    d, _ = _build(D, case)
    n = 4000
    x = d.sample((n,))
    assert tuple(x.shape) == (n, *d.batch_shape, *d.event_shape)
    assert not x.requires_grad
    if case.startswith("Categorical"):
        freq = np.stack([(x.numpy() == k).mean(0) for k in range(4)], -1)
        np.testing.assert_allclose(freq, d.probs.detach().numpy(), atol=6 * 0.5 / math.sqrt(n))
        return
    mean, var = d.mean.detach().numpy(), d.variance.detach().numpy()
    xs = x.numpy()
    se = np.sqrt(var / n)
    assert np.all(np.abs(xs.mean(0) - mean) < 6 * se + 1e-12), case
    np.testing.assert_allclose(xs.var(0), var, rtol=0.15)
    assert bool(d.support.check(x).all())


@pytest.mark.parametrize("case", [c for c in sorted(CASES) if not c.startswith((*DISCRETE, "Cauchy"))])
def test_rsample_gradient_of_mean(case):
    """d/dparams of the Monte-Carlo mean of rsample equals d/dparams of the exact mean (pathwise gradient)."""
    ember.manual_seed(99)
    d, ts = _build(D, case)
    assert d.has_rsample
    n = 6000
    w = ember.tensor(np.random.default_rng(0).standard_normal(tuple(d.mean.shape)))
    mc = (d.rsample((n,)).mean(0) * w).sum()
    exact = (d.mean * w).sum()
    names = list(ts)
    g_mc = ember.autograd.grad(mc, [ts[k] for k in names], allow_unused=True, retain_graph=True)
    g_ex = ember.autograd.grad(exact, [ts[k] for k in names], allow_unused=True)
    for k, a, b in zip(names, g_mc, g_ex, strict=True):
        b = np.zeros(ts[k].shape) if b is None else b.numpy()
        scale = np.abs(b).max() + 1.0
        assert np.abs(a.numpy() - b).max() < 0.1 * scale, (case, k, a.numpy(), b)


def test_normal_rsample_is_loc_plus_scale_times_noise():
    loc = ember.tensor([0.5, -1.0], requires_grad=True)
    scale = ember.tensor([2.0, 0.5], requires_grad=True)
    ember.manual_seed(3)
    x = D.Normal(loc, scale).rsample((7,))
    x.sum().backward()
    eps = (x.detach() - loc.detach()) / scale.detach()
    assert_close(loc.grad, ember.full((2,), 7.0))
    assert_close(scale.grad, eps.sum(0), rtol=1e-6)


@needs_torch
def test_gamma_rsample_gradient_matches_torch_kernel():
    """For the same sample values, d sample / d concentration equals torch's implicit gradient."""
    conc = ember.tensor([0.3, 1.0, 4.0], dtype=ember.float64, requires_grad=True)
    rate = ember.tensor([2.0, 0.5, 1.0], dtype=ember.float64, requires_grad=True)
    ember.manual_seed(5)
    x = D.Gamma(conc, rate).rsample((200,))
    x.sum().backward()
    z = torch.tensor(x.detach().numpy() * rate.detach().numpy())  # the standard-gamma draws
    a = torch.tensor(conc.detach().numpy()).expand_as(z)
    want = (torch._standard_gamma_grad(a, z) / torch.tensor(rate.detach().numpy())).sum(0)
    np.testing.assert_allclose(conc.grad.numpy(), want.numpy(), rtol=2e-3)
    np.testing.assert_allclose(rate.grad.numpy(), (-x.detach().numpy() / rate.detach().numpy()).sum(0), rtol=1e-10)


KL_PAIRS = [
    ("Normal", "Normal"),
    ("Uniform", "Uniform"),
    ("Bernoulli_probs", "Bernoulli_logits"),
    ("Categorical_probs", "Categorical_logits"),
    ("Gamma", "Gamma"),
    ("Beta", "Beta"),
    ("Dirichlet", "Dirichlet"),
    ("MVN_cov", "MVN_tril"),
    ("Independent", "Independent"),
    ("Exponential", "Exponential"),
    ("Laplace", "Laplace"),
]


@needs_torch
@pytest.mark.parametrize("pair", KL_PAIRS, ids="-".join)
def test_kl_parity(pair):
    rng_q = np.random.default_rng(11)
    e_p, _ = _build(D, pair[0])
    t_p, _ = _build(torch.distributions, pair[0])
    saved = dict(P)
    try:
        for k in CASES[pair[1]][1]:  # q: perturbed parameters of the same kind
            v = P[k]
            if k in ("cov", "tril", "prec"):
                continue
            P[k] = v * rng_q.uniform(0.8, 1.25, v.shape) if v.min() > 0 else v + rng_q.normal(0, 0.3, v.shape)
        if pair[0] == "Uniform":  # q must cover p for a finite KL; also check the infinite case
            P["low"], P["high"] = saved["low"] - 0.5, saved["high"] + 0.2
        e_q, eq_t = _build(D, pair[1])
        t_q, tq_t = _build(torch.distributions, pair[1])
    finally:
        P.clear()
        P.update(saved)
    e_kl, t_kl = D.kl_divergence(e_p, e_q), torch.distributions.kl_divergence(t_p, t_q)
    assert_close(e_kl, t_kl, rtol=1e-9, atol=1e-11, msg=str(pair))
    assert_close(D.kl_divergence(e_p, e_p), torch.distributions.kl_divergence(t_p, t_p), atol=1e-10)
    names = list(eq_t)
    e_g = ember.autograd.grad(e_kl.sum(), [eq_t[n] for n in names])
    t_g = torch.autograd.grad(t_kl.sum(), [tq_t[n] for n in names])
    for n, a, b in zip(names, e_g, t_g, strict=True):
        assert_close(a, b, rtol=1e-8, atol=1e-10, msg=f"{pair} grad of {n}")


@needs_torch
def test_kl_uniform_normal_and_infinite_uniform():
    e = D.kl_divergence(D.Uniform(ember.tensor([-1.0]), ember.tensor([2.0])), D.Normal(ember.tensor([0.3]), 1.5))
    t = torch.distributions.kl_divergence(
        torch.distributions.Uniform(torch.tensor([-1.0]), torch.tensor([2.0])),
        torch.distributions.Normal(torch.tensor([0.3]), 1.5),
    )
    assert_close(e, t, rtol=1e-6)
    inf = D.kl_divergence(D.Uniform(0.0, 2.0), D.Uniform(0.5, 3.0))
    assert math.isinf(inf.item())


def test_register_kl_dispatch_and_missing_pair():
    class MyNormal(D.Normal):
        pass

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return ember.tensor(42.0)

    assert D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(0.0, 1.0)).item() == 42.0
    assert D.kl_divergence(D.Normal(0.0, 1.0), MyNormal(0.0, 1.0)).item() == 0.0  # falls back to Normal-Normal
    with pytest.raises(NotImplementedError, match=r"Gamma.*Normal"):
        D.kl_divergence(D.Gamma(1.0, 1.0), D.Normal(0.0, 1.0))
    with pytest.raises(TypeError):  # not a class (any class is accepted, as in PyTorch: Pyro registers its mixin)
        D.register_kl(3, D.Normal)


def test_argument_validation():
    with pytest.raises(ValueError, match=r"scale.*Normal.*GreaterThan"):
        D.Normal(ember.tensor([0.0]), ember.tensor([-1.0]))
    D.Normal(ember.tensor([0.0]), ember.tensor([-1.0]), validate_args=False)  # no check when asked
    with pytest.raises(ValueError, match=r"Bernoulli.*not both"):
        D.Bernoulli(probs=0.3, logits=0.1)
    with pytest.raises(ValueError, match=r"probs.*Bernoulli"):
        D.Bernoulli(probs=ember.tensor([1.5]))
    with pytest.raises(ValueError, match=r"Categorical"):
        D.Categorical()
    with pytest.raises(ValueError, match=r"concentration.*Dirichlet"):
        D.Dirichlet(ember.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match=r"covariance_matrix.*MultivariateNormal"):
        D.MultivariateNormal(ember.zeros(2), covariance_matrix=ember.tensor([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match=r"exactly one"):
        D.MultivariateNormal(ember.zeros(2))
    with pytest.raises(ValueError, match=r"low < high"):
        D.Uniform(1.0, 0.0)
    with pytest.raises(ValueError, match=r"support"):
        D.Gamma(1.0, 1.0).log_prob(ember.tensor([-1.0]))
    with pytest.raises(ValueError, match=r"support"):
        D.Categorical(logits=ember.zeros(3)).log_prob(ember.tensor(3))
    with pytest.raises(ValueError, match=r"broadcast"):
        D.Normal(ember.zeros(3), 1.0).log_prob(ember.zeros(4))
    with pytest.raises(ValueError, match=r"reinterpreted_batch_ndims"):
        D.Independent(D.Normal(ember.zeros(3), 1.0), 2)
    D.Distribution.set_default_validate_args(False)
    try:
        D.Normal(0.0, -1.0)
    finally:
        D.Distribution.set_default_validate_args(True)


def test_expand_and_shapes():
    d = D.Normal(ember.tensor([0.0, 1.0]), 1.0)
    e = d.expand((3, 2))
    assert e.batch_shape == (3, 2) and e.sample((4,)).shape == (4, 3, 2)
    assert_close(e.log_prob(ember.zeros(3, 2))[1], d.log_prob(ember.zeros(2)))
    for ctor in (
        lambda: D.Gamma(ember.ones(2), 2.0),
        lambda: D.Beta(ember.ones(2), 2.0),
        lambda: D.Bernoulli(logits=ember.zeros(2)),
        lambda: D.Uniform(ember.zeros(2), 1.0),
        lambda: D.Categorical(probs=ember.ones(2, 3)),
        lambda: D.Dirichlet(ember.ones(2, 3)),
        lambda: D.MultivariateNormal(ember.zeros(2, 3), scale_tril=ember.eye(3)),
        lambda: D.Independent(D.Normal(ember.zeros(2, 3), 1.0), 1),
    ):
        dist = ctor()
        big = dist.expand((5, 2))
        assert big.batch_shape == (5, 2) and big.event_shape == dist.event_shape
        assert big.sample().shape == (5, 2, *dist.event_shape)
    cat = D.Categorical(logits=ember.zeros(2, 3))
    assert cat.enumerate_support().shape == (3, 2)
    assert D.Bernoulli(probs=ember.full((2,), 0.5)).enumerate_support().shape == (2, 2)
    assert repr(D.Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"


def test_reinforce_style_usage():
    """The pattern of policy-gradient code: sample an action, score it, backpropagate into the logits."""
    logits = ember.tensor([[0.1, 0.5, -0.2]], requires_grad=True)
    m = D.Categorical(logits=logits)
    ember.manual_seed(0)
    action = m.sample()
    loss = -m.log_prob(action) * 2.0
    loss.sum().backward()
    p = ember.softmax(logits.detach(), -1) if hasattr(ember, "softmax") else logits.detach().softmax(-1)
    onehot = np.eye(3)[action.numpy()]
    assert_close(logits.grad, -2.0 * (onehot - p.numpy()), rtol=1e-6)


def test_categorical_never_samples_zero_probability():
    ember.manual_seed(0)
    probs = ember.tensor([[0.0, 0.5, 0.0, 0.5], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    x = D.Categorical(probs=probs).sample((2000,)).numpy()
    assert set(np.unique(x[:, 0])) == {1, 3} and set(np.unique(x[:, 1])) == {0} and set(np.unique(x[:, 2])) == {3}
    y = D.Bernoulli(probs=ember.tensor([0.0, 1.0])).sample((500,)).numpy()
    assert (y[:, 0] == 0).all() and (y[:, 1] == 1).all()

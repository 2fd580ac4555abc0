"""GeneralizedPareto, LogisticNormal and VonMises against torch.distributions and against their definitions."""

import math

import numpy as np
import pytest

import ember
from ember import distributions as D
from ember.testing import assert_close, torch_or_none

torch = torch_or_none()
needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
rng = np.random.default_rng(53)

P = {
    "loc": rng.standard_normal((2, 4)),
    "scale": rng.uniform(0.5, 2.0, (2, 4)),
    # negative (bounded support), zero (the exponential branch) and positive shapes
    "conc": np.array([[-0.4, -0.1, 0.0, 0.2], [0.3, 0.45, -0.25, 1e-9]]),
    "lloc": rng.standard_normal((2, 3)),
    "lscale": rng.uniform(0.3, 1.0, (2, 3)),
}
Q = rng.uniform(0.05, 0.95, (5, 2, 4))


def _gp(lib, t):
    return lib.GeneralizedPareto(t["loc"], t["scale"], t["conc"])


def _ln(lib, t):
    return lib.LogisticNormal(t["lloc"], t["lscale"])


def _tensors(lib, names):
    mk = ember.tensor if lib is D else torch.tensor
    return {k: mk(P[k], requires_grad=True) for k in names}


def _gp_outputs(lib, mk, ts, q):
    d = _gp(lib, ts)
    x = d.icdf(mk(q))  # points inside the support (bounded above for negative shapes)
    xd = x.detach()
    return [x, d.log_prob(xd), d.cdf(xd), d.log_survival_function(xd), d.entropy(), d.mean, d.variance, d.mode]


@needs_torch
def test_generalized_pareto_parity_with_torch():
    """Values and gradients equal PyTorch's in float32: PyTorch's GeneralizedPareto fails on float64 parameters
    (its isclose compares them with a float32 zero); float64 is checked against SciPy below."""
    names = ["loc", "scale", "conc"]
    outs, grads = {}, {}
    for lib, mk in ((D, ember.tensor), (torch.distributions, torch.tensor)):
        ts = {k: mk(P[k].astype(np.float32), requires_grad=True) for k in names}
        out = _gp_outputs(lib, mk, ts, Q.astype(np.float32))
        outs[lib] = out
        ws = [np.random.default_rng(k).standard_normal(tuple(o.shape)).astype(np.float32) for k, o in enumerate(out)]
        finite = [np.isfinite(o.detach().numpy()) for o in out]
        loss = sum((where_finite(o, f, lib) * mk(w)).sum() for o, w, f in zip(out, ws, finite, strict=True))
        grads[lib] = (ember.autograd.grad if lib is D else torch.autograd.grad)(loss, [ts[k] for k in names])
    for k, (a, b) in enumerate(zip(outs[D], outs[torch.distributions], strict=True)):
        assert_close(a, b, rtol=2e-5, atol=2e-6, msg=f"output {k}")
    for n, a, b in zip(names, grads[D], grads[torch.distributions], strict=True):
        assert_close(a, b, rtol=1e-4, atol=1e-5, msg=f"grad of {n}")


def test_generalized_pareto_matches_scipy_in_float64():
    stats = pytest.importorskip("scipy.stats")
    ts = {k: ember.tensor(P[k]) for k in ("loc", "scale", "conc")}
    x, lp, cdf, lsf, ent, mean, var, mode = _gp_outputs(D, ember.tensor, ts, Q)
    c = np.where(np.abs(P["conc"]) <= 1e-8, 0.0, P["conc"])  # |c| <= 1e-8 takes the c = 0 formulas, as PyTorch
    ref = stats.genpareto(c, loc=P["loc"], scale=P["scale"])
    xs = x.numpy()
    np.testing.assert_allclose(xs, ref.ppf(Q), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lp.numpy(), ref.logpdf(xs), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(cdf.numpy(), ref.cdf(xs), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lsf.numpy(), ref.logsf(xs), rtol=1e-10, atol=1e-12)
    exact = stats.genpareto(P["conc"], loc=P["loc"], scale=P["scale"])  # entropy and moments have no c = 0 branch
    np.testing.assert_allclose(ent.numpy(), exact.entropy(), rtol=1e-10)
    np.testing.assert_allclose(mean.numpy(), np.where(P["conc"] < 1, exact.mean(), np.nan), rtol=1e-10)
    np.testing.assert_allclose(var.numpy(), np.where(P["conc"] < 0.5, exact.var(), np.nan), rtol=1e-10)
    np.testing.assert_allclose(mode.numpy(), P["loc"])


def where_finite(o, finite, lib):
    if lib is D:
        return ember.where(ember.tensor(finite), o, 0.0)
    return torch.where(torch.tensor(finite), o, 0.0)


@needs_torch
def test_logistic_normal_parity_with_torch():
    value = rng.dirichlet(np.ones(4), (5, 2))
    res = {}
    for lib, mk in ((D, ember.tensor), (torch.distributions, torch.tensor)):
        ts = _tensors(lib, ["lloc", "lscale"])
        d = _ln(lib, ts)
        lp = d.log_prob(mk(value))
        w = np.random.default_rng(0).standard_normal(tuple(lp.shape))
        g = (ember.autograd.grad if lib is D else torch.autograd.grad)((lp * mk(w)).sum(), list(ts.values()))
        res[lib] = (d, lp, g)
    (e, elp, eg), (t, tlp, tg) = res[D], res[torch.distributions]
    assert e.batch_shape == tuple(t.batch_shape) and e.event_shape == tuple(t.event_shape) == (4,)
    assert_close(elp, tlp, rtol=1e-10, atol=1e-12)
    for a, b in zip(eg, tg, strict=True):
        assert_close(a, b, rtol=1e-9, atol=1e-11)
    assert D.LogisticNormal(0.0, 1.0).event_shape == (2,)  # a scalar base becomes one 1-dim event


def test_samples():
    ember.manual_seed(8)
    conc = np.array([-0.3, 0.0, 0.1, 0.2])
    d = D.GeneralizedPareto(ember.zeros(4, dtype=ember.float64), ember.full((4,), 1.5, dtype=ember.float64),
                            ember.tensor(conc))  # fmt: skip
    n = 20000
    x = d.sample((n,))
    assert x.shape == (n, 4) and bool(d.support.check(x).all())
    xs, mean, var = x.numpy(), d.mean.numpy(), d.variance.numpy()
    assert np.all(np.abs(xs.mean(0) - mean) < 5 * np.sqrt(var / n)), (xs.mean(0), mean)
    np.testing.assert_allclose(xs.var(0), var, rtol=0.15)  # shape <= 0.2: the fourth moment exists
    ln = D.LogisticNormal(ember.tensor(P["lloc"]), ember.tensor(P["lscale"]))
    y = ln.rsample((n,))
    assert y.shape == (n, 2, 4) and bool(D.constraints.simplex.check(y).all())
    # the stick-breaking inverse of the samples is the normal base: check its mean and std
    z = D.StickBreakingTransform().inv(y).numpy()
    assert np.all(np.abs(z.mean(0) - P["lloc"]) < 5 * P["lscale"] / np.sqrt(n))
    np.testing.assert_allclose(z.std(0), P["lscale"], rtol=0.03)


def test_validation_and_expand():
    with pytest.raises(ValueError, match="scale"):
        D.GeneralizedPareto(0.0, ember.tensor([-1.0]), 0.1)
    with pytest.raises(ValueError, match="support"):
        D.GeneralizedPareto(ember.tensor([0.0]), 1.0, -0.5).log_prob(ember.tensor([2.5]))  # above loc - scale / c
    with pytest.raises(ValueError, match="scale"):
        D.LogisticNormal(ember.zeros(3), ember.tensor([1.0, 0.0, 1.0]))
    for d in (_gp(D, _tensors(D, ["loc", "scale", "conc"])), _ln(D, _tensors(D, ["lloc", "lscale"]))):
        big = d.expand((3, *d.batch_shape))
        assert type(big) is type(d) and big.batch_shape == (3, *d.batch_shape) and big.event_shape == d.event_shape
        assert big.sample((2,)).shape == (2, 3, *d.batch_shape, *d.event_shape)


VM_K = np.array([1e-6, 0.3, 2.0, 3.74, 3.76, 10.0, 50.0])  # both sides of the Bessel branches' switch at 3.75
VM_LOC = np.linspace(-3.0, 3.0, 7)


@needs_torch
def test_von_mises_parity_with_torch():
    v = np.linspace(-3.1, 3.1, 14).reshape(2, 7)
    res = {}
    for lib, mk in ((D, ember.tensor), (torch.distributions, torch.tensor)):
        loc, k = mk(VM_LOC, requires_grad=True), mk(VM_K, requires_grad=True)
        d = lib.VonMises(loc, k)
        out = [d.log_prob(mk(v)), d.mean, d.mode, d.variance]
        with pytest.raises(NotImplementedError):
            d.entropy()
        w = [np.random.default_rng(i).standard_normal(tuple(o.shape)) for i, o in enumerate(out)]
        g = (ember.autograd.grad if lib is D else torch.autograd.grad)(
            sum((o * mk(wi)).sum() for o, wi in zip(out, w, strict=True)), [loc, k]
        )
        res[lib] = (out, g)
    for k, (a, b) in enumerate(zip(res[D][0], res[torch.distributions][0], strict=True)):
        assert_close(a, b, rtol=1e-10, atol=1e-12, msg=f"output {k}")
    for a, b in zip(res[D][1], res[torch.distributions][1], strict=True):
        assert_close(a, b, rtol=1e-9, atol=1e-11)


def test_von_mises_samples():
    """E[cos(x - loc)] = I1(k) / I0(k) = 1 - variance, E[sin(x - loc)] = 0, values in [-pi, pi]."""
    ember.manual_seed(12)
    d = D.VonMises(ember.tensor(VM_LOC), ember.tensor(VM_K))
    n = 20000
    x = d.sample((n,))
    assert x.shape == (n, 7) and not x.requires_grad and not d.has_rsample
    xs = x.numpy()
    assert xs.min() >= -math.pi and xs.max() <= math.pi
    c, s = np.cos(xs - VM_LOC), np.sin(xs - VM_LOC)
    assert np.all(np.abs(c.mean(0) - (1 - d.variance.numpy())) < 5 * c.std(0) / np.sqrt(n) + 1e-12)
    assert np.all(np.abs(s.mean(0)) < 5 * s.std(0) / np.sqrt(n) + 1e-12)
    big = d.expand((3, 7))
    assert big.batch_shape == (3, 7) and big.sample((2,)).shape == (2, 3, 7)
    with pytest.raises(ValueError, match="concentration"):
        D.VonMises(0.0, ember.tensor([-1.0]))

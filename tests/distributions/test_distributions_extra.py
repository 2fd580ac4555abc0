"""ContinuousBernoulli (and ExponentialFamily), LowRankMultivariateNormal, LKJCholesky and Wishart against
torch.distributions and against their definitions."""

import math

import numpy as np
import pytest

import ember
from ember import distributions as D
from ember.testing import assert_close, torch_or_none

torch = torch_or_none()
needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
rng = np.random.default_rng(41)

P = {
    # both sides of 1/2 and inside PyTorch's Taylor region (0.499, 0.501]
    "probs": np.array([[0.05, 0.3, 0.4995, 0.5005], [0.62, 0.9, 0.999, 0.501]]),
    "logits": rng.standard_normal((2, 4)) * 2,
    "loc": rng.standard_normal((2, 4)),
    "factor": rng.standard_normal((2, 4, 2)),
    "diag": rng.uniform(0.5, 2.0, (2, 4)),
    "eta": np.array([0.6, 1.0, 3.0]),
}
CB_VALUES = rng.uniform(0.01, 0.99, (5, 2, 4))
LKJ_VALUES = None  # drawn by Ember's sampler below (any point of the support)
CASES = {
    "CB_probs": (lambda d, t: d.ContinuousBernoulli(probs=t["probs"]), ["probs"], CB_VALUES),
    "CB_logits": (lambda d, t: d.ContinuousBernoulli(logits=t["logits"]), ["logits"], CB_VALUES),
    "LowRankMVN": (lambda d, t: d.LowRankMultivariateNormal(t["loc"], t["factor"], t["diag"]),
                   ["loc", "factor", "diag"], rng.standard_normal((5, 2, 4))),
    "LowRankMVN_bcast": (lambda d, t: d.LowRankMultivariateNormal(t["loc"][0], t["factor"], t["diag"][1]),
                         ["loc", "factor", "diag"], rng.standard_normal((3, 1, 4))),
    "LKJ": (lambda d, t: d.LKJCholesky(3, t["eta"]), ["eta"], None),
}  # fmt: skip
ATTRS = ("mean", "variance", "stddev", "mode", "covariance_matrix", "precision_matrix", "scale_tril")


def _build(lib, case):
    ctor, names, _ = CASES[case]
    mk = ember.tensor if lib is D else torch.tensor
    ts = {k: mk(P[k], requires_grad=True) for k in names}
    return ctor(lib, ts), ts


def _value(case):
    if case == "LKJ":
        ember.manual_seed(5)
        return D.LKJCholesky(3, ember.tensor(P["eta"])).sample((4,)).numpy()
    return CASES[case][2]


def _outputs(lib, d, value):
    mk = ember.tensor if lib is D else torch.tensor
    out = {"log_prob": d.log_prob(mk(value))}
    for name in (*ATTRS, "entropy", "cdf", "icdf"):
        try:
            if name == "entropy":
                v = d.entropy()
            elif name in ("cdf", "icdf"):
                v = getattr(d, name)(mk(value))
            else:
                v = getattr(d, name)
        except (NotImplementedError, AttributeError):
            v = None
        out[name] = v
    return out


@needs_torch
@pytest.mark.parametrize("case", sorted(CASES))
def test_parity_with_torch(case):
    value = _value(case)
    e, et = _build(D, case)
    t, tt = _build(torch.distributions, case)
    assert e.batch_shape == tuple(t.batch_shape) and e.event_shape == tuple(t.event_shape)
    assert e.has_rsample == t.has_rsample
    eo, to = _outputs(D, e, value), _outputs(torch.distributions, t, value)
    assert [k for k in eo if eo[k] is None] == [k for k in to if to[k] is None], case
    keys = [k for k in to if to[k] is not None]
    for k in keys:
        assert_close(eo[k], to[k], rtol=1e-10, atol=1e-12, msg=f"{case}.{k}")
    keys = [k for k in keys if to[k].requires_grad]
    ws = {k: np.random.default_rng(i).standard_normal(tuple(to[k].shape)) for i, k in enumerate(keys)}
    eg = ember.autograd.grad(sum((eo[k] * ember.tensor(ws[k])).sum() for k in keys), list(et.values()))
    tg = torch.autograd.grad(sum((to[k] * torch.tensor(ws[k])).sum() for k in keys), list(tt.values()))
    for n, a, b in zip(et, eg, tg, strict=True):
        assert_close(a, b, rtol=1e-9, atol=1e-10, msg=f"{case} grad of {n}")


def test_exponential_family_entropy_is_the_closed_form():
    """ExponentialFamily.entropy (Bregman divergence through autograd) equals ContinuousBernoulli's own entropy."""
    logits = ember.tensor([-3.0, -0.7, 0.4, 2.5], dtype=ember.float64, requires_grad=True)
    d = D.ContinuousBernoulli(logits=logits)
    assert isinstance(d, D.ExponentialFamily)
    h = D.ExponentialFamily.entropy(d)
    assert_close(h, d.entropy(), rtol=1e-9)


def test_low_rank_equals_dense_multivariate_normal():
    loc, w, diag = (ember.tensor(P[k]) for k in ("loc", "factor", "diag"))
    low = D.LowRankMultivariateNormal(loc, w, diag)
    dense = D.MultivariateNormal(loc, covariance_matrix=w @ w.mT + diag.diag_embed())
    x = ember.tensor(CASES["LowRankMVN"][2])
    assert_close(low.log_prob(x), dense.log_prob(x), rtol=1e-10)
    assert_close(low.entropy(), dense.entropy(), rtol=1e-10)
    assert_close(low.precision_matrix, dense.precision_matrix, rtol=1e-9, atol=1e-12)
    assert_close(low.scale_tril, dense.scale_tril, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("case", ["CB_probs", "CB_logits", "LowRankMVN"])
def test_sample_moments_and_pathwise_gradient(case):
    ember.manual_seed(2024)
    d, ts = _build(D, case)
    n = 20000
    x = d.rsample((n,))
    assert tuple(x.shape) == (n, *d.batch_shape, *d.event_shape) and bool(d.support.check(x.detach()).all())
    xs, mean, var = x.detach().numpy(), d.mean.detach().numpy(), d.variance.detach().numpy()
    assert np.all(np.abs(xs.mean(0) - mean) < 5 * np.sqrt(var / n)), (case, xs.mean(0), mean)
    fourth = ((xs - xs.mean(0)) ** 4).mean(0)
    assert np.all(np.abs(xs.var(0) - var) < 6 * np.sqrt((fourth - xs.var(0) ** 2) / n)), case
    if case == "LowRankMVN":
        cov = np.einsum("nbi,nbj->bij", xs - xs.mean(0), xs - xs.mean(0)) / n
        np.testing.assert_allclose(cov, d.covariance_matrix.detach().numpy(), atol=0.15)
    w = ember.tensor(np.random.default_rng(0).standard_normal(tuple(d.mean.shape)))
    names = list(ts)
    g_mc = ember.autograd.grad((x.mean(0) * w).sum(), [ts[k] for k in names], allow_unused=True, retain_graph=True)
    g_ex = ember.autograd.grad((d.mean * w).sum(), [ts[k] for k in names], allow_unused=True)
    for k, a, b in zip(names, g_mc, g_ex, strict=True):
        b = np.zeros(ts[k].shape) if b is None else b.numpy()
        a = np.zeros(ts[k].shape) if a is None else a.numpy()
        assert np.abs(a - b).max() < 0.1 * (np.abs(b).max() + 1.0), (case, k, a, b)


def test_lkj_samples_have_the_lkj_marginals():
    """For LKJ(eta) in dim d, (r_ij + 1) / 2 ~ Beta(eta - 1 + d/2, eta - 1 + d/2): mean 0, var 1 / (2 eta + d - 1)."""
    ember.manual_seed(11)
    eta = np.array([0.6, 1.0, 3.0])
    d = D.LKJCholesky(4, ember.tensor(eta))
    n = 20000
    low = d.sample((n,))
    assert low.shape == (n, 3, 4, 4) and bool(D.constraints.corr_cholesky.check(low).all())
    corr = (low @ low.mT).numpy()
    np.testing.assert_allclose(np.diagonal(corr, axis1=-2, axis2=-1), 1.0, atol=1e-12)
    var = 1 / (2 * eta + 4 - 1)
    for ri in (corr[..., i, j] for i in range(4) for j in range(i)):  # PyTorch's sampler fails all but (1, 0)
        assert np.all(np.abs(ri.mean(0)) < 5 * np.sqrt(var / n)), ri.mean(0)
        assert np.all(np.abs(ri.var(0) - var) < 0.05 * var), (ri.var(0), var)


def test_validation_and_expand():
    with pytest.raises(ValueError, match="probs"):  # PyTorch clamps this silently; Ember refuses it
        D.ContinuousBernoulli(probs=ember.tensor([1.5]))
    D.ContinuousBernoulli(probs=ember.tensor([1.5]), validate_args=False)
    with pytest.raises(ValueError, match="either"):
        D.ContinuousBernoulli()
    with pytest.raises(ValueError, match="support"):
        D.ContinuousBernoulli(logits=ember.zeros(2)).log_prob(ember.tensor([0.5, 1.5]))
    with pytest.raises(ValueError, match="cov_diag"):
        D.LowRankMultivariateNormal(ember.zeros(3), ember.ones(3, 1), -ember.ones(3))
    with pytest.raises(ValueError, match="cov_factor must be a batch"):
        D.LowRankMultivariateNormal(ember.zeros(3), ember.ones(2, 1), ember.ones(3))
    with pytest.raises(ValueError, match="dim"):
        D.LKJCholesky(1)
    with pytest.raises(ValueError, match="concentration"):
        D.LKJCholesky(3, ember.tensor([-1.0]))
    with pytest.raises(ValueError, match="support"):
        D.LKJCholesky(2).log_prob(ember.tensor([[1.0, 0.0], [0.5, 0.5]]))
    for case in CASES:
        d, _ = _build(D, case)
        big = d.expand((4, *d.batch_shape))
        assert type(big) is type(d) and big.batch_shape == (4, *d.batch_shape) and big.event_shape == d.event_shape
        assert big.sample((2,)).shape == (2, 4, *d.batch_shape, *d.event_shape)
        v = ember.tensor(_value(case)[:1])
        assert_close(big.log_prob(v), d.log_prob(v).expand(4, *d.batch_shape), rtol=1e-12)
    one = ember.tensor(1.0, dtype=ember.float64)
    assert math.isclose(D.LKJCholesky(2, one).log_prob(ember.eye(2, dtype=ember.float64)).item(), -math.log(2))


def _spd(n, *batch, seed=0):
    a = np.random.default_rng(seed).standard_normal((*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


W = {"df": np.array([3.5, 6.0]), "cov": _spd(3, 2)}
W["tril"], W["prec"] = np.linalg.cholesky(W["cov"]), np.linalg.inv(W["cov"])
WISHART = {
    "cov": lambda d, t: d.Wishart(t["df"], covariance_matrix=t["cov"]),
    "tril": lambda d, t: d.Wishart(t["df"], scale_tril=t["tril"]),
    "prec": lambda d, t: d.Wishart(t["df"], precision_matrix=t["prec"]),
}


@needs_torch
@pytest.mark.parametrize("form", sorted(WISHART))
def test_wishart_parity_with_torch(form):
    value = np.stack([_spd(3, 2, seed=s) for s in range(1, 4)])  # (3, 2, 3, 3)
    res = {}
    for lib, mk in ((D, ember.tensor), (torch.distributions, torch.tensor)):
        ts = {k: mk(W[k], requires_grad=True) for k in ("df", form)}
        d = WISHART[form](lib, ts)
        out = [d.log_prob(mk(value)), d.entropy(), d.mean, d.variance, d.mode, d.covariance_matrix,
               d.precision_matrix, d.scale_tril]  # fmt: skip
        ws = [np.random.default_rng(i).standard_normal(tuple(o.shape)) for i, o in enumerate(out)]
        keep = [np.isfinite(o.detach().numpy()) for o in out]  # the NaN mode of df <= p + 1
        mask = (lambda o, k: ember.where(ember.tensor(k), o, 0.0)) if lib is D else (
            lambda o, k: torch.where(torch.tensor(k), o, 0.0))  # fmt: skip
        loss = sum((mask(o, k) * mk(w)).sum() for o, w, k in zip(out, ws, keep, strict=True))
        res[lib] = (d, out, (ember.autograd.grad if lib is D else torch.autograd.grad)(loss, list(ts.values())))
    (e, eo, eg), (t, to, tg) = res[D], res[torch.distributions]
    assert e.batch_shape == tuple(t.batch_shape) and e.event_shape == tuple(t.event_shape)
    for k, (a, b) in enumerate(zip(eo, to, strict=True)):
        assert_close(a, b, rtol=1e-10, atol=1e-12, msg=f"{form} output {k}")
    for a, b in zip(eg, tg, strict=True):
        assert_close(a, b, rtol=1e-9, atol=1e-10, msg=f"{form} grads")
    assert_close(D.ExponentialFamily.entropy(e), e.entropy(), rtol=1e-9)


def test_wishart_samples_and_pathwise_gradient():
    ember.manual_seed(6)
    df = ember.tensor(W["df"], requires_grad=True)
    tril = ember.tensor(W["tril"], requires_grad=True)
    d = D.Wishart(df, scale_tril=tril)
    n = 20000
    x = d.rsample((n,))
    assert x.shape == (n, 2, 3, 3) and bool(d.support.check(x.detach()).all())
    xs, mean, var = x.detach().numpy(), d.mean.detach().numpy(), d.variance.detach().numpy()
    assert np.all(np.abs(xs.mean(0) - mean) < 5 * np.sqrt(var / n)), (xs.mean(0), mean)
    w = ember.tensor(np.random.default_rng(3).standard_normal((2, 3, 3)))
    g_mc = ember.autograd.grad((x.mean(0) * w).sum(), [df, tril], retain_graph=True)
    g_ex = ember.autograd.grad((d.mean * w).sum(), [df, tril])
    for a, b in zip(g_mc, g_ex, strict=True):
        assert np.abs(a.numpy() - b.numpy()).max() < 0.1 * (np.abs(b.numpy()).max() + 1.0), (a, b)
    with pytest.raises(ValueError, match="df"):
        D.Wishart(ember.tensor([1.5]), covariance_matrix=ember.eye(3))
    with pytest.raises(ValueError, match="Exactly one"):
        D.Wishart(4.0)
    big = d.expand((5, 2))
    assert big.batch_shape == (5, 2) and big.sample((2,)).shape == (2, 5, 2, 3, 3)


def test_wishart_redraws_singular_samples():
    d = D.Wishart(4.0, covariance_matrix=ember.eye(3, dtype=ember.float64))
    real = d._bartlett_sampling
    calls, zero_first = [], True

    def first_singular(sample_shape=()):
        calls.append(1)
        x = real(sample_shape)
        return x * 0 if len(calls) == 1 and zero_first else x  # the zero matrix is singular

    d._bartlett_sampling = first_singular
    with pytest.warns(UserWarning, match="Singular"):
        x = d.rsample((4,))
    assert len(calls) == 2 and bool(d.support.check(x).all())
    calls.clear()
    zero_first = False
    d.rsample((4,))  # a valid first draw is kept: no redraw (PyTorch 2.x redraws the valid ones)
    assert len(calls) == 1


def _cb(lib, t, key="probs"):
    return lib.ContinuousBernoulli(probs=t[key])


KL = {  # name: (p over lib and tensors, q over lib and tensors)
    "CB-CB": (_cb, lambda d, t: d.ContinuousBernoulli(logits=t["logits"])),
    "CB-Exponential": (_cb, lambda d, t: d.Exponential(t["diag"])),
    "CB-Normal": (_cb, lambda d, t: d.Normal(t["loc"], t["diag"])),
    "CB-Uniform": (_cb, lambda d, t: d.Uniform(t["lo"], t["hi"])),
    "Beta-CB": (lambda d, t: d.Beta(t["diag"], t["diag"] + 0.5), _cb),
    "Uniform-CB": (lambda d, t: d.Uniform(t["lo"] * 0 + 0.1, t["hi"] * 0 + 0.7), _cb),
    "CB-Pareto(inf)": (_cb, lambda d, t: d.Pareto(t["diag"], t["diag"])),
    "Normal-CB(inf)": (lambda d, t: d.Normal(t["loc"], t["diag"]), _cb),
    "LowRank-LowRank": (lambda d, t: d.LowRankMultivariateNormal(t["loc"], t["factor"], t["diag"]),
                        lambda d, t: d.LowRankMultivariateNormal(t["loc"] * 0.5, t["factor"] * 0.7 + 0.1,
                                                                 t["diag"] + 0.3)),
    "LowRank-MVN": (lambda d, t: d.LowRankMultivariateNormal(t["loc"], t["factor"], t["diag"]),
                    lambda d, t: d.MultivariateNormal(t["loc"] * 0.5, scale_tril=t["tril"])),
    "MVN-LowRank": (lambda d, t: d.MultivariateNormal(t["loc"] * 0.5, scale_tril=t["tril"]),
                    lambda d, t: d.LowRankMultivariateNormal(t["loc"], t["factor"], t["diag"])),
    "Wishart-Wishart(Bregman)": (lambda d, t: d.Wishart(t["df"], scale_tril=t["tril"]),
                                 lambda d, t: d.Wishart(t["df"] + 1.5, covariance_matrix=t["cov"])),
}  # fmt: skip
KP = {
    "probs": P["probs"], "logits": P["logits"], "loc": P["loc"], "factor": P["factor"], "diag": P["diag"],
    "lo": np.array([[-0.5, 0.2, -1.0, 0.0], [-0.1, -2.0, -0.3, 0.5]]), "hi": np.array([[1.5, 2.0, 0.9, 1.2]] * 2),
    "df": np.array([4.5, 6.0]), "cov": _spd(4, 2, seed=9), "tril": np.linalg.cholesky(_spd(4, 2, seed=10)),
}  # fmt: skip


@needs_torch
@pytest.mark.parametrize("pair", sorted(KL))
def test_kl_parity_with_torch(pair):
    res = {}
    for lib, mk in ((D, ember.tensor), (torch.distributions, torch.tensor)):
        ts = {k: mk(np.ascontiguousarray(v), requires_grad=True) for k, v in KP.items()}
        p, q = (f(lib, ts) for f in KL[pair])
        res[lib] = (lib.kl_divergence(p, q), ts)
    (ek, ets), (tk, tts) = res[D], res[torch.distributions]
    finite = np.isfinite(tk.detach().numpy())  # gradients compared where PyTorch's KL is finite
    if pair == "CB-Uniform":  # PyTorch says inf also where q's bounds touch 0 or 1 (the last column): finite here
        tk = torch.where(torch.tensor(KP["lo"] == 0.0), torch.tensor(ek.detach().numpy()), tk)
    assert_close(ek, tk, rtol=1e-10, atol=1e-12, msg=pair)
    if not tk.requires_grad:
        return
    w = np.where(finite, np.random.default_rng(0).standard_normal(tuple(tk.shape)), 0.0)
    names = list(KP)
    eg = ember.autograd.grad((ek * ember.tensor(w)).sum(), [ets[n] for n in names], allow_unused=True)
    tg = torch.autograd.grad((tk * torch.tensor(w)).sum(), [tts[n] for n in names], allow_unused=True)
    for n, a, b in zip(names, eg, tg, strict=True):
        if b is None:
            assert a is None or not np.any(a.numpy()), (pair, n)
        else:  # rtol 1e-8: Beta's entropy gradient goes through trigamma, whose implementations differ by ~1e-9
            assert_close(a, b, rtol=1e-8, atol=1e-10, msg=f"{pair} grad of {n}")

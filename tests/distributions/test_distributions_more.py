"""StudentT, Gumbel, HalfNormal, HalfCauchy, Pareto, Chi2, InverseGamma, Kumaraswamy, FisherSnedecor, Weibull
against torch.distributions: densities, moments, cdf/icdf, entropy, gradients, rsample paths, sampling."""

import math

import numpy as np
import pytest

import ember
from ember import distributions as D
from ember.testing import assert_close, torch_or_none

torch = torch_or_none()
needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
rng = np.random.default_rng(17)

P = {
    # shapes large enough for a finite fourth moment, so the sample variance in test_sample_moments is stable
    # (the heavy-tail branches are tested in test_heavy_tail_branches_match_torch)
    "df": rng.uniform(5.5, 9.0, (2, 3)),
    "loc": rng.standard_normal((2, 3)),
    "scale": rng.uniform(0.5, 2.0, (2, 3)),
    "alpha": rng.uniform(4.5, 6.5, (2, 3)),
    "conc": rng.uniform(4.5, 6.5, (2, 3)),
    "rate": rng.uniform(0.5, 2.0, (2, 3)),
    "k1": rng.uniform(1.2, 4.0, (2, 3)),
    "k0": rng.uniform(1.2, 4.0, (2, 3)),
    "df2": rng.uniform(10.0, 16.0, (2, 3)),
}
POS = rng.uniform(0.05, 5.0, (4, 2, 3))
CASES = {  # name: (constructor over lib and tensors, params, values)
    "StudentT": (lambda d, t: d.StudentT(t["df"], t["loc"], t["scale"]), ["df", "loc", "scale"],
                 3 * rng.standard_normal((4, 2, 3))),
    "Gumbel": (lambda d, t: d.Gumbel(t["loc"], t["scale"]), ["loc", "scale"], 2 * rng.standard_normal((4, 2, 3))),
    "HalfNormal": (lambda d, t: d.HalfNormal(t["scale"]), ["scale"], POS),
    "HalfCauchy": (lambda d, t: d.HalfCauchy(t["scale"]), ["scale"], POS),
    "Pareto": (lambda d, t: d.Pareto(t["scale"], t["alpha"]), ["scale", "alpha"], POS + 2.0),
    "Chi2": (lambda d, t: d.Chi2(t["df"]), ["df"], POS * 2),
    "InverseGamma": (lambda d, t: d.InverseGamma(t["conc"], t["rate"]), ["conc", "rate"], POS),
    "Kumaraswamy": (lambda d, t: d.Kumaraswamy(t["k1"], t["k0"]), ["k1", "k0"], rng.uniform(0.02, 0.98, (4, 2, 3))),
    "FisherSnedecor": (lambda d, t: d.FisherSnedecor(t["df"], t["df2"]), ["df", "df2"], POS),
    "Weibull": (lambda d, t: d.Weibull(t["scale"], t["k1"]), ["scale", "k1"], POS),
}  # fmt: skip
# torch's igamma has no derivative in its first argument: Chi2's cdf is compared by value only
NO_CDF_GRAD = {"Chi2", "InverseGamma"}


def _build(lib, case, params=None):
    ctor, names, _ = CASES[case]
    src = P if params is None else params
    if lib is D:
        ts = {k: ember.tensor(src[k], requires_grad=True) for k in names}
    else:
        ts = {k: torch.tensor(src[k], requires_grad=True) for k in names}
    return ctor(lib, ts), ts


def _outputs(lib, d, value, q):
    mk = ember.tensor if lib is D else torch.tensor
    out = {"log_prob": d.log_prob(mk(value))}
    for attr in ("mean", "variance", "stddev", "mode"):
        out[attr] = getattr(d, attr)
    for name, fn in (("entropy", d.entropy), ("cdf", lambda: d.cdf(mk(value))), ("icdf", lambda: d.icdf(mk(q)))):
        try:
            out[name] = fn()
        except NotImplementedError:
            out[name] = None
    return out


@needs_torch
@pytest.mark.parametrize("case", sorted(CASES))
def test_parity_with_torch(case):
    """Every statistic and its gradient in the parameters equals PyTorch's (float64)."""
    value = CASES[case][2]
    q = np.random.default_rng(5).uniform(0.05, 0.95, value.shape)
    e, et = _build(D, case)
    t, tt = _build(torch.distributions, case)
    assert e.batch_shape == tuple(t.batch_shape) and e.event_shape == tuple(t.event_shape)
    assert e.has_rsample == t.has_rsample
    eo, to = _outputs(D, e, value, q), _outputs(torch.distributions, t, value, q)
    assert [k for k in eo if eo[k] is None] == [k for k in to if to[k] is None], case  # same NotImplemented set
    # Kumaraswamy.mode: PyTorch's is NaN for concentration0 > 1 (see test_kumaraswamy_mode_is_the_density_argmax)
    keys = [k for k in to if to[k] is not None and not (case == "Kumaraswamy" and k == "mode")]
    for k in keys:
        assert_close(eo[k], to[k], rtol=1e-10, atol=1e-12, msg=f"{case}.{k}")
    keys = [k for k in keys if to[k].requires_grad and not (k == "cdf" and case in NO_CDF_GRAD)]
    ws = {k: np.random.default_rng(i).standard_normal(tuple(to[k].shape)) for i, k in enumerate(keys)}
    e_loss = sum((eo[k] * ember.tensor(ws[k])).sum() for k in keys)
    t_loss = sum((to[k] * torch.tensor(ws[k])).sum() for k in keys)
    eg = ember.autograd.grad(e_loss, list(et.values()), allow_unused=True)
    tg = torch.autograd.grad(t_loss, list(tt.values()), allow_unused=True)
    for n, a, b in zip(et, eg, tg, strict=True):
        if b is None:
            assert a is None or not np.any(a.numpy()), (case, n)
            continue
        assert_close(a, b, rtol=1e-9, atol=1e-11, msg=f"{case} grad of {n}")


TRANSFORMED = ["Gumbel", "HalfNormal", "HalfCauchy", "Pareto", "InverseGamma", "Kumaraswamy", "Weibull"]


@needs_torch
@pytest.mark.parametrize("case", TRANSFORMED)
def test_rsample_path_matches_torch(case):
    """The same base draw pushed through the transforms gives PyTorch's sample and gradients in the parameters."""
    e, et = _build(D, case)
    t, tt = _build(torch.distributions, case)
    ember.manual_seed(2)
    base = e.base_dist.sample((5,)).numpy()
    ys = []
    for d, mk in ((e, ember.tensor), (t, torch.tensor)):
        x = mk(base)
        for tr in d.transforms:
            x = tr(x)
        ys.append(x)
    assert_close(ys[0], ys[1], rtol=1e-10, atol=1e-12)
    if not ys[1].requires_grad:  # the parameters live in the base distribution (HalfNormal, InverseGamma, ...)
        assert not ys[0].requires_grad
        return
    w = np.random.default_rng(0).standard_normal(base.shape)
    eg = ember.autograd.grad((ys[0] * ember.tensor(w)).sum(), list(et.values()), allow_unused=True)
    tg = torch.autograd.grad((ys[1] * torch.tensor(w)).sum(), list(tt.values()), allow_unused=True)
    for n, a, b in zip(et, eg, tg, strict=True):
        assert (a is None) == (b is None), (case, n)
        if b is not None:
            assert_close(a, b, rtol=1e-9, atol=1e-11, msg=f"{case} d sample / d {n}")


@pytest.mark.parametrize("case", sorted(c for c in CASES if c != "HalfCauchy"))  # HalfCauchy: no moments
def test_sample_moments(case):
    ember.manual_seed(1234)
    d, _ = _build(D, case)
    n = 20000
    x = d.sample((n,))
    assert tuple(x.shape) == (n, *d.batch_shape) and not x.requires_grad
    xs = x.numpy()
    mean, var = d.mean.detach().numpy(), d.variance.detach().numpy()
    assert np.all(np.abs(xs.mean(0) - mean) < 5 * np.sqrt(var / n)), (case, xs.mean(0), mean)
    np.testing.assert_allclose(xs.var(0), var, rtol=0.2 if case in ("Pareto", "InverseGamma") else 0.1)
    assert bool(d.support.check(x).all())


def test_half_cauchy_sample_quantiles():
    ember.manual_seed(7)
    d = D.HalfCauchy(ember.tensor([0.5, 2.0], dtype=ember.float64))
    xs = d.sample((20000,)).numpy()
    for p in (0.25, 0.5, 0.9):  # quantile p of |Cauchy(0, s)| is s * tan(pi p / 2)
        want = np.array([0.5, 2.0]) * math.tan(math.pi * p / 2)
        got = np.quantile(xs, p, axis=0)
        assert np.all(np.abs(got - want) / want < 0.05), (p, got, want)


@pytest.mark.parametrize("case", ["StudentT", "Gumbel", "HalfNormal", "Pareto", "Chi2", "InverseGamma",
                                  "Kumaraswamy", "FisherSnedecor", "Weibull"])  # fmt: skip
def test_rsample_gradient_of_mean(case):
    """The pathwise gradient of the Monte-Carlo mean equals the gradient of the exact mean."""
    ember.manual_seed(99)
    d, ts = _build(D, case)
    assert d.has_rsample
    n = 20000
    w = ember.tensor(np.random.default_rng(0).standard_normal(tuple(d.mean.shape)))
    mc = (d.rsample((n,)).mean(0) * w).sum()
    exact = (d.mean * w).sum()
    names = list(ts)
    g_mc = ember.autograd.grad(mc, [ts[k] for k in names], allow_unused=True, retain_graph=True)
    g_ex = ember.autograd.grad(exact, [ts[k] for k in names], allow_unused=True)
    for k, a, b in zip(names, g_mc, g_ex, strict=True):
        b = np.zeros(ts[k].shape) if b is None else b.numpy()
        assert np.abs(a.numpy() - b).max() < 0.1 * (np.abs(b).max() + 1.0), (case, k, a.numpy(), b)


@needs_torch
def test_heavy_tail_branches_match_torch():
    """The NaN/inf moments of small degrees of freedom / shapes, as PyTorch reports them."""
    small = np.array([0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0])
    pairs = [
        (lambda d, x: d.StudentT(x), ("mean", "variance", "mode")),
        (lambda d, x: d.Pareto(1.5, x), ("mean", "variance")),
        (lambda d, x: d.InverseGamma(x, 2.0), ("mean", "variance", "mode")),
        (lambda d, x: d.FisherSnedecor(x, x + 1.0), ("mean", "variance", "mode")),
        (lambda d, x: d.Kumaraswamy(x, 0.7), ("mean", "variance")),
    ]
    for ctor, attrs in pairs:
        e, t = ctor(D, ember.tensor(small)), ctor(torch.distributions, torch.tensor(small))
        for a in attrs:
            assert_close(getattr(e, a), getattr(t, a), rtol=1e-10, msg=f"{e!r}.{a}")


def test_kumaraswamy_mode_is_the_density_argmax():
    """PyTorch's mode is NaN whenever concentration0 > 1 (a sign slip); Ember's is the closed form."""
    a, b = ember.tensor([2.0, 3.0, 1.5], dtype=ember.float64), ember.tensor([3.0, 1.5, 5.0], dtype=ember.float64)
    d = D.Kumaraswamy(a, b)
    grid = ember.tensor(np.linspace(1e-4, 1 - 1e-4, 200001)[:, None].repeat(3, 1))
    best = grid.numpy()[d.log_prob(grid).numpy().argmax(0), [0, 1, 2]]
    np.testing.assert_allclose(d.mode.numpy(), best, atol=1e-5)
    assert np.isnan(D.Kumaraswamy(ember.tensor([0.5, 2.0]), ember.tensor([2.0, 0.9])).mode.numpy()).all()


def test_validation_and_expand():
    bad = [
        (lambda: D.StudentT(ember.tensor([-1.0])), "df"),
        (lambda: D.StudentT(2.0, 0.0, ember.tensor([0.0])), "scale"),
        (lambda: D.Gumbel(0.0, ember.tensor([-1.0])), "scale"),
        (lambda: D.HalfNormal(ember.tensor([-1.0])), "scale"),
        (lambda: D.HalfCauchy(ember.tensor([0.0])), "scale"),
        (lambda: D.Pareto(1.0, ember.tensor([-2.0])), "rate.*Exponential"),  # the base checks first, as PyTorch
        (lambda: D.Chi2(ember.tensor([0.0])), "df"),
        (lambda: D.InverseGamma(ember.tensor([-1.0]), 1.0), "concentration"),
        (lambda: D.Kumaraswamy(ember.tensor([1.0]), ember.tensor([-1.0])), "concentration0"),
        (lambda: D.FisherSnedecor(1.0, ember.tensor([-3.0])), "concentration.*Gamma"),  # as PyTorch
        (lambda: D.Weibull(1.0, ember.tensor([-3.0])), "concentration"),
    ]
    for ctor, name in bad:
        with pytest.raises(ValueError, match=name):
            ctor()
    with pytest.raises(ValueError, match="support"):
        D.Pareto(ember.tensor([2.0]), 1.0).log_prob(ember.tensor([1.0]))  # below the scale
    with pytest.raises(ValueError, match="support"):
        D.HalfNormal(ember.tensor([1.0])).log_prob(ember.tensor([-1.0]))
    with pytest.raises(ValueError, match="support"):
        D.Kumaraswamy(1.0, 2.0).log_prob(ember.tensor([1.5]))
    assert D.HalfNormal(1.0, validate_args=False).log_prob(ember.tensor([-1.0])).item() == -math.inf
    for case in CASES:
        d, _ = _build(D, case)
        big = d.expand((4, 2, 3))
        assert type(big) is type(d) and big.batch_shape == (4, 2, 3) and big.sample((2,)).shape == (2, 4, 2, 3)
        v = ember.tensor(CASES[case][2][:1])
        assert_close(big.log_prob(v), d.log_prob(v).expand(4, 2, 3), rtol=1e-12)
        assert_close(big.mean, d.mean.expand(4, 2, 3), rtol=1e-12)
    assert D.Chi2(3.0).batch_shape == () and D.StudentT(3.0).sample((5,)).shape == (5,)
    assert D.Chi2(ember.tensor([3.0])).df.item() == 3.0


KP = {
    "loc": rng.standard_normal((2, 3)),
    "scale": rng.uniform(0.5, 2.0, (2, 3)),
    "loc2": rng.standard_normal((2, 3)),
    "scale2": rng.uniform(0.5, 2.0, (2, 3)),
    "alpha": np.array([[0.5, 1.0, 1.7], [2.0, 3.5, 6.0]]),  # across the alpha <= 1 and <= 2 branches
    "pscale": rng.uniform(0.5, 1.5, (2, 3)),
    "qscale": np.array([[0.3, 0.6, 2.0], [0.9, 0.4, 1.0]]),
    "conc": rng.uniform(0.5, 3.0, (2, 3)),
    "rate": rng.uniform(0.5, 2.0, (2, 3)),
    "low": rng.uniform(0.8, 1.2, (2, 3)),
    "high": rng.uniform(2.0, 3.0, (2, 3)),
    "logits": rng.standard_normal((2, 3, 4)),
    "logits2": rng.standard_normal((2, 3, 4)),
}
KL_PAIRS = {  # name: (p over lib and tensors, q over lib and tensors)
    "Gumbel-Gumbel": (lambda d, t: d.Gumbel(t["loc"], t["scale"]), lambda d, t: d.Gumbel(t["loc2"], t["scale2"])),
    "HalfNormal-HalfNormal": (lambda d, t: d.HalfNormal(t["scale"]), lambda d, t: d.HalfNormal(t["scale2"])),
    "Pareto-Pareto": (lambda d, t: d.Pareto(t["pscale"], t["alpha"]), lambda d, t: d.Pareto(t["qscale"], t["scale"])),
    "OneHot-OneHot": (lambda d, t: d.OneHotCategorical(logits=t["logits"]),
                      lambda d, t: d.OneHotCategorical(logits=t["logits2"])),
    "Transformed": (lambda d, t: d.TransformedDistribution(d.Normal(t["loc"], t["scale"]), d.ExpTransform()),
                    lambda d, t: d.TransformedDistribution(d.Normal(t["loc2"], t["scale2"]), d.ExpTransform())),
    "Exponential-Gumbel": (lambda d, t: d.Exponential(t["rate"]), lambda d, t: d.Gumbel(t["loc"], t["scale"])),
    "Gamma-Gumbel": (lambda d, t: d.Gamma(t["conc"], t["rate"]), lambda d, t: d.Gumbel(t["loc"], t["scale"])),
    "Gumbel-Normal": (lambda d, t: d.Gumbel(t["loc"], t["scale"]), lambda d, t: d.Normal(t["loc2"], t["scale2"])),
    "Normal-Gumbel": (lambda d, t: d.Normal(t["loc"], t["scale"]), lambda d, t: d.Gumbel(t["loc2"], t["scale2"])),
    "Uniform-Gumbel": (lambda d, t: d.Uniform(t["low"], t["high"]), lambda d, t: d.Gumbel(t["loc"], t["scale"])),
    "Pareto-Exponential": (lambda d, t: d.Pareto(t["pscale"], t["alpha"]), lambda d, t: d.Exponential(t["rate"])),
    "Pareto-Gamma": (lambda d, t: d.Pareto(t["pscale"], t["alpha"]), lambda d, t: d.Gamma(t["conc"], t["rate"])),
    "Pareto-Normal": (lambda d, t: d.Pareto(t["pscale"], t["alpha"]), lambda d, t: d.Normal(t["loc"], t["scale"])),
    "Uniform-Pareto": (lambda d, t: d.Uniform(t["low"], t["high"]), lambda d, t: d.Pareto(t["qscale"], t["alpha"])),
    "Gumbel-Gamma(inf)": (lambda d, t: d.Gumbel(t["loc"], t["scale"]), lambda d, t: d.Gamma(t["conc"], t["rate"])),
    "Gumbel-Uniform(inf)": (lambda d, t: d.Gumbel(t["loc"], t["scale"]), lambda d, t: d.Uniform(t["low"], t["high"])),
    "Pareto-Uniform(inf)": (lambda d, t: d.Pareto(t["pscale"], t["alpha"]),
                            lambda d, t: d.Uniform(t["low"], t["high"])),
    "Normal-Pareto(inf)": (lambda d, t: d.Normal(t["loc"], t["scale"]), lambda d, t: d.Pareto(t["qscale"], t["alpha"])),
    "Beta-Pareto(inf)": (lambda d, t: d.Beta(t["conc"], t["rate"]), lambda d, t: d.Pareto(t["qscale"], t["alpha"])),
}  # fmt: skip


@needs_torch
@pytest.mark.parametrize("pair", sorted(KL_PAIRS))
def test_kl_parity_with_torch(pair):
    """KL(p || q) and its gradients in every parameter equal PyTorch's, inf branches included."""
    res = {}
    for lib, mk in ((D, ember.tensor), (torch.distributions, torch.tensor)):
        ts = {k: mk(v, requires_grad=True) for k, v in KP.items()}
        p, q = (f(lib, ts) for f in KL_PAIRS[pair])
        res[lib] = (lib.kl_divergence(p, q), ts)
    (ek, ets), (tk, tts) = res[D], res[torch.distributions]
    assert_close(ek, tk, rtol=1e-10, atol=1e-12, msg=pair)
    if not tk.requires_grad:
        return
    finite = np.isfinite(tk.detach().numpy())
    w = np.where(finite, np.random.default_rng(0).standard_normal(tuple(tk.shape)), 0.0)
    names = list(KP)
    eg = ember.autograd.grad((ek * ember.tensor(w)).sum(), [ets[n] for n in names], allow_unused=True)
    tg = torch.autograd.grad((tk * torch.tensor(w)).sum(), [tts[n] for n in names], allow_unused=True)
    for n, a, b in zip(names, eg, tg, strict=True):
        if b is None:
            assert a is None or not np.any(a.numpy()), (pair, n)
            continue
        # at alpha == 1 (or 2) exactly, PyTorch's masked-out branch divides by zero and its gradient is NaN;
        # Ember's masked branch stays finite, so its gradient there is 0 (the KL is inf in both)
        a, b = a.numpy(), b.numpy()
        assert np.isfinite(a).all(), (pair, n, a)
        ok = np.isfinite(b)
        # atol 1e-10: gradients are sums of O(1) terms (trigamma for Gamma's concentration) cancelling to ~1e-2
        np.testing.assert_allclose(a[ok], b[ok], rtol=1e-9, atol=1e-10, err_msg=f"{pair} grad of {n}")


def test_kl_transformed_needs_equal_transforms():
    p = D.TransformedDistribution(D.Normal(0.0, 1.0), D.ExpTransform())
    with pytest.raises(NotImplementedError):
        D.kl_divergence(p, D.TransformedDistribution(D.Normal(0.0, 1.0), D.SigmoidTransform()))
    assert D.kl_divergence(p, D.TransformedDistribution(D.Normal(0.0, 1.0), D.ExpTransform())).item() == 0.0

"""ember.distributions.transforms, TransformedDistribution and biject_to/transform_to against PyTorch's."""

import numpy as np
import pytest

import ember
from ember import distributions as D
from ember.testing import assert_close, torch_or_none

torch = torch_or_none()
needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
rng = np.random.default_rng(3)

TP = {  # transform parameters
    "loc": rng.standard_normal((2, 3)),
    "scale": rng.uniform(0.5, 2.0, (2, 3)) * np.where(rng.random((2, 3)) < 0.5, -1, 1),
    "expo": rng.uniform(0.3, 2.5, (2, 3)),
}
X_REAL = rng.standard_normal((4, 2, 3)) * 1.5
X_POS = rng.uniform(0.1, 3.0, (4, 2, 3))
X_MAT = rng.standard_normal((4, 3, 3))

# name: (constructor over a lib (ember.distributions / torch.distributions) and parameter tensors, params, x)
TRANSFORMS = {
    "Exp": (lambda d, t: d.ExpTransform(), [], X_REAL),
    "Power": (lambda d, t: d.PowerTransform(t["expo"]), ["expo"], X_POS),
    "Power_neg": (lambda d, t: d.PowerTransform(-t["expo"]), ["expo"], X_POS),
    "Sigmoid": (lambda d, t: d.SigmoidTransform(), [], X_REAL),
    "Softplus": (lambda d, t: d.SoftplusTransform(), [], X_REAL),
    "Tanh": (lambda d, t: d.TanhTransform(), [], X_REAL),
    "Affine": (lambda d, t: d.AffineTransform(t["loc"], t["scale"]), ["loc", "scale"], X_REAL),
    "Affine_num": (lambda d, t: d.AffineTransform(0.5, -2.0), [], X_REAL),
    "Affine_event": (lambda d, t: d.AffineTransform(t["loc"], t["scale"], event_dim=1), ["loc", "scale"], X_REAL),
    "Exp_inv": (lambda d, t: d.ExpTransform().inv, [], X_POS),
    "Compose": (lambda d, t: d.ComposeTransform([d.ExpTransform(), d.AffineTransform(t["loc"], t["scale"]),
                                                   d.TanhTransform()]), ["loc", "scale"], X_REAL * 0.3),
    "Independent": (lambda d, t: d.IndependentTransform(d.SigmoidTransform(), 2), [], X_REAL),
    "StickBreaking": (lambda d, t: d.StickBreakingTransform(), [], X_REAL),
    "Reshape": (lambda d, t: d.ReshapeTransform((2, 3), (3, 2)), [], X_REAL),
    "Abs": (lambda d, t: d.AbsTransform(), [], X_REAL),
    "Softmax": (lambda d, t: d.SoftmaxTransform(), [], X_REAL),
    "LowerCholesky": (lambda d, t: d.LowerCholeskyTransform(), [], X_MAT),
    "PositiveDefinite": (lambda d, t: d.PositiveDefiniteTransform(), [], X_MAT),
    "Cat": (lambda d, t: d.CatTransform([d.ExpTransform(), d.AffineTransform(0.5, -2.0)], dim=-1, lengths=[1, 2]),
            [], X_REAL),
    "Cat_event": (lambda d, t: d.CatTransform([d.IndependentTransform(d.ExpTransform(), 1), d.SoftmaxTransform()],
                                              dim=-1, lengths=[1, 2]), [], X_REAL),
    "Stack": (lambda d, t: d.StackTransform([d.ExpTransform(), d.TanhTransform(), d.SigmoidTransform()], dim=-1),
              [], X_REAL),
    "CorrCholesky": (lambda d, t: d.CorrCholeskyTransform(), [], X_REAL),
}  # fmt: skip


def _lib(lib):
    return D if lib == "ember" else torch.distributions


def _t(lib, a, grad=False):
    return ember.tensor(a, requires_grad=grad) if lib == "ember" else torch.tensor(a, requires_grad=grad)


def _make(lib, name):
    ctor, names, x = TRANSFORMS[name]
    ts = {k: _t(lib, TP[k], True) for k in names}
    return ctor(_lib(lib).transforms, ts), ts, _t(lib, x, True)


def _sign(t):
    try:
        s = t.sign
    except NotImplementedError:
        return "none"
    return s if isinstance(s, int) else tuple(np.asarray(s.detach().numpy()).ravel())


@needs_torch
@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transform_parity_with_torch(name):
    """y = t(x), t.inv(y), log|det J| and their gradients in x and the parameters equal PyTorch's (float64)."""
    outs, grads, meta = {}, {}, {}
    for lib in ("ember", "torch"):
        t, ts, x = _make(lib, name)
        y = t(x)
        out = [y, t.inv(y)]
        if t.bijective:
            out.append(t.log_abs_det_jacobian(x, y))
        outs[lib] = out
        meta[lib] = (t.domain.event_dim, t.codomain.event_dim, t.bijective, t.forward_shape(x.shape),
                     t.inverse_shape(y.shape), _sign(t))  # fmt: skip
        w = [np.random.default_rng(k).standard_normal(tuple(o.shape)) for k, o in enumerate(out)]
        loss = sum((o * _t(lib, wk)).sum() for o, wk in zip(out, w, strict=True))
        grads[lib] = (ember.autograd.grad if lib == "ember" else torch.autograd.grad)(loss, [x, *ts.values()])
    e_meta, t_meta = meta["ember"], meta["torch"]
    assert e_meta[:3] == t_meta[:3] and e_meta[5] == t_meta[5]
    assert tuple(e_meta[3]) == tuple(t_meta[3]) and tuple(e_meta[4]) == tuple(t_meta[4])
    for k, (a, b) in enumerate(zip(outs["ember"], outs["torch"], strict=True)):
        assert_close(a, b, rtol=1e-10, atol=1e-12, msg=f"{name} output {k}")
    for k, (a, b) in enumerate(zip(grads["ember"], grads["torch"], strict=True)):
        assert_close(a, b, rtol=1e-9, atol=1e-11, msg=f"{name} grad {k}")


@pytest.mark.parametrize("name", ["Exp", "Power", "Sigmoid", "Softplus", "Tanh", "Affine", "Exp_inv", "Compose"])
def test_log_abs_det_jacobian_is_log_of_the_derivative(name):
    """For elementwise maps, log|det J| is log|dy/dx| computed by autograd (independent of PyTorch)."""
    t, _, x = _make("ember", name)
    y = t(x)
    (dy,) = ember.autograd.grad(y.sum(), [x])
    assert_close(t.log_abs_det_jacobian(x, y), dy.abs().log(), rtol=1e-9, atol=1e-10)


def test_stick_breaking_is_a_bijection_onto_the_simplex():
    t = D.StickBreakingTransform()
    x = ember.tensor(X_REAL)
    y = t(x)
    assert y.shape == (4, 2, 4) and bool(D.constraints.simplex.check(y).all())
    assert_close(t.inv(y), x, rtol=1e-9, atol=1e-9)
    assert_close(t(ember.zeros(3, dtype=ember.float64)), ember.full((4,), 0.25, dtype=ember.float64), rtol=1e-12)


def test_inverse_cache_and_identity():
    t = D.ExpTransform()
    assert t.inv.inv is t and t.inv.domain is t.codomain and t.inv == D.ExpTransform().inv
    cached = t.with_cache(1)
    x = ember.randn(3)
    y = cached(x)
    assert cached.inv(y) is x  # the cached pair, not log(exp(x))
    assert D.transforms.identity_transform(x) is x
    with pytest.raises(ValueError, match="cache_size"):
        D.ExpTransform(cache_size=2)
    with pytest.raises(NotImplementedError):
        D.AbsTransform().log_abs_det_jacobian(x, x.abs())
    c = D.ComposeTransform([D.ExpTransform(), D.AffineTransform(1.0, -2.0)])
    assert c.sign == -1 and c.inv.inv is c and c.bijective
    assert D.ComposeTransform([D.ExpTransform(), D.AbsTransform()]).bijective is False


@needs_torch
@pytest.mark.parametrize(
    "make",
    [
        lambda c: c.real, lambda c: c.positive, lambda c: c.nonnegative, lambda c: c.greater_than(1.5),
        lambda c: c.greater_than_eq(-2.0), lambda c: c.less_than(0.5), lambda c: c.unit_interval,
        lambda c: c.interval(-1.0, 3.0), lambda c: c.half_open_interval(0.0, 2.0), lambda c: c.simplex,
        lambda c: c.independent(c.positive, 1), lambda c: c.real_vector,
        lambda c: c.cat([c.positive, c.real, c.interval(-1.0, 2.0)], dim=-1),
        lambda c: c.stack([c.positive, c.real, c.unit_interval], dim=-1), lambda c: c.corr_cholesky,
    ],
)  # fmt: skip
def test_biject_to_and_transform_to_match_torch(make):
    x = X_REAL[..., :3]
    for reg in ("biject_to", "transform_to"):
        e = getattr(D, reg)(make(D.constraints))
        t = getattr(torch.distributions, reg)(make(torch.distributions.constraints))
        if make(D.constraints) is D.constraints.corr_cholesky:
            x = X_REAL  # 3 entries make 3 x 3 factors
        ye, yt = e(ember.tensor(x)), t(torch.tensor(x))
        assert_close(ye, yt, rtol=1e-10, atol=1e-12, msg=reg)
        assert bool(make(D.constraints).check(ye).all())
        assert_close(make(D.constraints).check(ye), make(torch.distributions.constraints).check(yt))
        if e.bijective:
            assert_close(e.log_abs_det_jacobian(ember.tensor(x), ye), t.log_abs_det_jacobian(torch.tensor(x), yt),
                         rtol=1e-10, atol=1e-12)  # fmt: skip
    with pytest.raises(NotImplementedError, match="Cannot transform"):
        D.biject_to(D.constraints.boolean)
    with pytest.raises(TypeError):
        D.biject_to.register(int, lambda c: D.ExpTransform())


# TransformedDistribution: (constructor over lib and tensors, params, values in the support)
TD_CASES = {
    "LogNormal_like": (lambda d, t: d.TransformedDistribution(d.Normal(t["loc"], t["s"]), [d.ExpTransform()]),
                       ["loc", "s"], rng.uniform(0.1, 4.0, (5, 2, 3))),
    "Decreasing": (lambda d, t: d.TransformedDistribution(  # exp(-s x): sign -1 (a Tensor), so cdf = 1 - base cdf
        d.Normal(t["loc"], t["s"]), [d.AffineTransform(0.0, -t["s"]), d.ExpTransform()]), ["loc", "s"],
        rng.uniform(0.1, 4.0, (5, 2, 3))),
    "Tanh_normal": (lambda d, t: d.TransformedDistribution(
        d.Normal(t["loc"], t["s"]), [d.TanhTransform()]), ["loc", "s"], rng.uniform(-0.95, 0.95, (2, 3))),
    "Independent_affine": (lambda d, t: d.TransformedDistribution(
        d.Normal(t["loc"], t["s"]), [d.AffineTransform(t["loc"], t["s"], event_dim=1)]), ["loc", "s"],
        rng.standard_normal((5, 2, 3))),
    "StickBreaking": (lambda d, t: d.TransformedDistribution(
        d.Normal(t["loc"], t["s"]), d.StickBreakingTransform()), ["loc", "s"], rng.dirichlet(np.ones(4), (5, 2))),
}  # fmt: skip
TDP = {"loc": rng.standard_normal((2, 3)) * 0.5, "s": rng.uniform(0.5, 1.5, (2, 3))}


def _td(lib, case):
    ctor, names, _ = TD_CASES[case]
    ts = {k: _t(lib, TDP[k], True) for k in names}
    return ctor(_lib(lib), ts), ts


@needs_torch
@pytest.mark.parametrize("case", sorted(TD_CASES))
def test_transformed_distribution_parity(case):
    """Shapes, support, log_prob, cdf/icdf and the rsample path (same base draw) equal PyTorch's, with gradients."""
    value = TD_CASES[case][2]
    res = {}
    for lib in ("ember", "torch"):
        d, ts = _td(lib, case)
        out = [d.log_prob(_t(lib, value))]
        base = d.base_dist.sample((3,))
        base = _t(lib, np.asarray(base.detach().numpy() if lib == "torch" else base.numpy()))
        res[lib] = (d, ts, out, base)
    (e, ets, eout, ebase), (t, tts, tout, _) = res["ember"], res["torch"]
    tbase = torch.tensor(ebase.numpy())  # the same base draw through both
    assert e.batch_shape == tuple(t.batch_shape) and e.event_shape == tuple(t.event_shape)
    assert e.has_rsample == t.has_rsample and e.support.event_dim == t.support.event_dim
    for lib_d, base, out in ((e, ebase, eout), (t, tbase, tout)):
        x = base
        for tr in lib_d.transforms:
            x = tr(x)
        out.append(x)
        if len(lib_d.event_shape) == 0:
            out.append(lib_d.cdf(_t("ember" if lib_d is e else "torch", value)))
            q = np.random.default_rng(1).uniform(0.05, 0.95, value.shape)
            out.append(lib_d.icdf(_t("ember" if lib_d is e else "torch", q)))
    for k, (a, b) in enumerate(zip(eout, tout, strict=True)):
        assert_close(a, b, rtol=1e-9, atol=1e-11, msg=f"{case} output {k}")
    ws = [np.random.default_rng(k).standard_normal(tuple(b.shape)) for k, b in enumerate(tout)]
    e_loss = sum((a * ember.tensor(w)).sum() for a, w in zip(eout, ws, strict=True))
    t_loss = sum((b * torch.tensor(w)).sum() for b, w in zip(tout, ws, strict=True))
    eg = ember.autograd.grad(e_loss, list(ets.values()))
    tg = torch.autograd.grad(t_loss, list(tts.values()))
    for k, (a, b) in enumerate(zip(eg, tg, strict=True)):
        assert_close(a, b, rtol=1e-8, atol=1e-10, msg=f"{case} grad {k}")
    ember.manual_seed(0)
    x = e.sample((7,))
    assert tuple(x.shape) == (7, *e.batch_shape, *e.event_shape) and bool(e.support.check(x).all())
    big = e.expand((4, *e.batch_shape))
    assert big.batch_shape == (4, *e.batch_shape) and big.sample((2,)).shape == (2, 4, *e.batch_shape, *e.event_shape)
    one = ember.tensor(value[:1])
    assert_close(big.log_prob(one), e.log_prob(one).expand(*big.batch_shape), rtol=1e-12)


def test_transformed_distribution_checks():
    with pytest.raises(ValueError, match="Transform"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), [D.ExpTransform(), "exp"])
    with pytest.raises(ValueError, match="at least 1"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), D.StickBreakingTransform())
    d = D.TransformedDistribution(D.Normal(ember.zeros(3), 1.0), D.ExpTransform())
    with pytest.raises(ValueError, match="support"):
        d.log_prob(ember.tensor([1.0, -1.0, 2.0]))
    with pytest.raises(NotImplementedError):
        _ = d.mean


@needs_torch
def test_log_normal_is_a_transformed_distribution():
    """As in PyTorch: LogNormal is exp of its base Normal, and KL(LogNormal || LogNormal) is the Normals' KL."""
    loc, scale = rng.standard_normal(3), rng.uniform(0.5, 1.5, 3)
    e = D.LogNormal(ember.tensor(loc), ember.tensor(scale))
    assert isinstance(e, D.TransformedDistribution) and e.transforms == [D.ExpTransform()]
    assert isinstance(e.expand((2, 3)), D.LogNormal) and e.expand((2, 3)).batch_shape == (2, 3)
    eq = D.LogNormal(ember.tensor(loc + 0.3), ember.tensor(scale * 1.2))
    t = torch.distributions.LogNormal(torch.tensor(loc), torch.tensor(scale))
    tq = torch.distributions.LogNormal(torch.tensor(loc + 0.3), torch.tensor(scale * 1.2))
    assert_close(D.kl_divergence(e, eq), torch.distributions.kl_divergence(t, tq), rtol=1e-12)
    v = rng.uniform(0.1, 3.0, (4, 3))
    generic = D.TransformedDistribution.log_prob(e, ember.tensor(v))  # the change of variables, not the override
    assert_close(e.log_prob(ember.tensor(v)), generic, rtol=1e-12)
    assert_close(generic, t.log_prob(torch.tensor(v)), rtol=1e-12)

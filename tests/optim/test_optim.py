"""Optimizers and schedulers against torch.optim; state round trips; a custom SimpleOptimizer."""

import math

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember import optim
from ember.optim import lr_scheduler as sched
from ember.testing import torch_or_none

torch = torch_or_none()
needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")

OPTIMIZERS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.001, "momentum": 0.5, "maximize": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "betas": (0.8, 0.99), "weight_decay": 0.1, "amsgrad": True}),
    ("Adam", {"lr": 0.01, "maximize": True}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True}),
    ("NAdam", {"lr": 0.01}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.05, "momentum_decay": 0.01}),
    ("RAdam", {"lr": 0.01}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.05}),
    ("Adamax", {"lr": 0.01, "weight_decay": 0.01}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5, "weight_decay": 0.01}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "initial_accumulator_value": 0.1, "weight_decay": 0.01}),
    ("Adadelta", {"lr": 1.0, "rho": 0.8, "weight_decay": 0.01}),
]


def _pair(seed=0):
    rng = np.random.default_rng(seed)
    w = {"0.weight": rng.standard_normal((5, 4)), "0.bias": rng.standard_normal(5),
         "2.weight": rng.standard_normal((3, 5)), "2.bias": rng.standard_normal(3)}  # fmt: skip
    e = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3)).to(ember.float64)
    e.load_state_dict(w)
    t = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3)).double()
    t.load_state_dict({k: torch.tensor(v) for k, v in w.items()})
    return e, t


def _data(step):
    rng = np.random.default_rng(100 + step)
    return rng.standard_normal((8, 4)), rng.standard_normal((8, 3))


@needs_torch
@pytest.mark.parametrize("name,opts", OPTIMIZERS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(OPTIMIZERS)])
def test_optimizer_matches_torch_for_50_steps(name, opts):
    e, t = _pair()
    eo = getattr(optim, name)(e.parameters(), **opts)
    to = getattr(torch.optim, name)(t.parameters(), **opts)
    for step in range(50):
        x, y = _data(step)
        eo.zero_grad()
        ((e(ember.tensor(x)) - ember.tensor(y)) ** 2).mean().backward()
        eo.step()
        to.zero_grad()
        ((t(torch.tensor(x)) - torch.tensor(y)) ** 2).mean().backward()
        to.step()
    for k, v in t.state_dict().items():
        np.testing.assert_allclose(e.state_dict()[k].numpy(), v.numpy(), atol=1e-6, rtol=0, err_msg=k)


def _quadratic(opt_cls, steps=200, **kw):
    p = nn.Param(ember.tensor([3.0, -2.0], dtype=ember.float64))
    o = opt_cls([p], **kw)
    for _ in range(steps):
        o.zero_grad()
        (p**2).sum().backward()
        o.step()
    return p


def test_lion_and_lamb_follow_their_update_rules():
    p = nn.Param(ember.tensor([3.0, -2.0], dtype=ember.float64))
    o = optim.Lion([p], lr=0.1, betas=(0.9, 0.99), weight_decay=0.1)
    (p**2).sum().backward()
    o.step()
    # first step: m = 0, update = sign(0.1 * g) = sign(p); p <- p (1 - lr wd) - lr sign(g)
    np.testing.assert_allclose(p.tolist(), [3.0 * 0.99 - 0.1, -2.0 * 0.99 + 0.1])
    q = nn.Param(ember.tensor([3.0, -4.0], dtype=ember.float64))
    o = optim.LAMB([q], lr=0.1)
    (q**2).sum().backward()
    o.step()
    g = np.array([6.0, -8.0])
    r = g / (np.abs(g) + 1e-6)  # first step: m_hat = g, sqrt(v_hat) = |g|
    trust = 5.0 / np.linalg.norm(r)
    np.testing.assert_allclose(q.tolist(), np.array([3.0, -4.0]) - 0.1 * trust * r, rtol=1e-9)
    for cls in (optim.Lion, optim.LAMB):
        assert float((_quadratic(cls, lr=0.05) ** 2).sum()) < 0.1


def test_param_groups_frozen_params_and_explicit_step():
    m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    opt = optim.SGD([{"params": m[0].parameters(), "lr": 0.0}, {"params": m[1].parameters()}], lr=0.1)
    before0, before1 = m[0].weight.detach().clone(), m[1].weight.detach().clone()
    m(ember.ones(3, 2)).sum().backward()
    opt.step()
    assert np.array_equal(m[0].weight.detach().numpy(), before0.numpy())
    assert not np.array_equal(m[1].weight.detach().numpy(), before1.numpy())
    # frozen params are skipped even with a gradient
    m[1].requires_grad_(False)
    w = m[1].weight.detach().clone()
    opt.step()
    assert np.array_equal(m[1].weight.detach().numpy(), w.numpy())
    # Burn style: the learning rate and a Gradients value given explicitly
    m[1].requires_grad_(True)
    opt.zero_grad()
    grads = m(ember.ones(3, 2)).sum().backward()
    assert m[1].weight.grad is not None
    opt.zero_grad()  # .grad cleared: step uses the value
    w = m[1].weight.detach().clone()
    opt.step(lr=1.0, grads=grads)
    np.testing.assert_allclose(m[1].weight.detach().numpy(), w.numpy() - grads[m[1].weight].numpy(), rtol=1e-6)


def test_hooks_weight_decay_and_clipping():
    p = nn.Param(ember.tensor([1.0, -1.0]))
    opt = optim.SGD([p], lr=1.0)
    seen = []
    h = opt.register_hook(lambda ps, gs: seen.append(len(ps)))
    opt.register_hook(optim.WeightDecay(0.5))
    p.grad = ember.tensor([0.0, 0.0])
    opt.step()
    assert seen == [1] and p.tolist() == [0.5, -0.5]
    h.remove()
    q = nn.Param(ember.tensor([0.0, 0.0]))
    opt = optim.SGD([q], lr=1.0, grad_clip_norm=1.0)
    q.grad = ember.tensor([3.0, 4.0])
    opt.step()
    np.testing.assert_allclose(q.tolist(), [-0.6, -0.8], rtol=1e-5)
    opt = optim.SGD([q], lr=1.0, grad_clip_value=0.1)
    q.grad = ember.tensor([3.0, -4.0])
    opt.step()
    np.testing.assert_allclose(q.tolist(), [-0.7, -0.7], rtol=1e-5)


def test_clip_grad_functions():
    a, b = ember.zeros(2, requires_grad=True), ember.zeros(1, requires_grad=True)
    a.grad, b.grad = ember.tensor([3.0, 0.0]), ember.tensor([4.0])
    norm = nn.utils.clip_grad_norm_([a, b], 1.0)
    assert abs(norm.item() - 5.0) < 1e-6
    np.testing.assert_allclose(a.grad.tolist() + b.grad.tolist(), [0.6, 0.0, 0.8], rtol=1e-5)
    b.grad = ember.tensor([float("inf")])
    with pytest.raises(RuntimeError, match="total norm"):
        nn.utils.clip_grad_norm_([a, b], 1.0, error_if_nonfinite=True)
    b.grad = ember.tensor([-7.0])
    nn.utils.clip_grad_value_([b], 2.0)
    assert b.grad.tolist() == [-2.0]


def test_state_round_trip_continues_identically():
    def run(steps, model, opt, scheduler, start):
        for s in range(start, start + steps):
            x, y = _data(s)
            opt.zero_grad()
            ((model(ember.tensor(x)) - ember.tensor(y)) ** 2).mean().backward()
            opt.step()
            scheduler.step()

    def fresh():
        ember.manual_seed(3)
        m = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3)).to(ember.float64)
        o = optim.Adam(m.parameters(), lr=0.01, amsgrad=True)
        return m, o, sched.StepLR(o, 3, 0.5)

    m1, o1, s1 = fresh()
    run(10, m1, o1, s1, 0)
    m2, o2, s2 = fresh()
    run(5, m2, o2, s2, 0)
    osd, ssd = o2.into_record(), s2.state_dict()
    saved = m2.into_record()
    m3, o3, s3 = fresh()
    m3.load_record(saved)
    o3.load_record(osd)  # fresh params get fresh ids: matched by position
    s3.load_state_dict(ssd)
    run(5, m3, o3, s3, 5)
    for (k, a), (_, b) in zip(m1.state_dict().items(), m3.state_dict().items(), strict=True):
        assert np.array_equal(a.numpy(), b.numpy()), k


def test_custom_simple_optimizer_as_in_the_docs():
    class SignSGD(optim.SimpleOptimizer):
        defaults = {"lr": 0.01}  # noqa: RUF012

        def step(self, lr, param, grad, state, group):
            state["steps"] = state.get("steps", 0) + 1
            return param - lr * self.xp(param).sign(grad), state

    p = nn.Param(ember.tensor([1.0, -1.0]))
    opt = optim.OptimizerAdaptor(SignSGD(), [p], lr=0.5)
    p.grad = ember.tensor([2.0, -3.0])
    opt.step()
    assert p.tolist() == [0.5, -0.5]
    assert opt.state[p.id]["steps"] == 1
    with pytest.raises(TypeError, match=r"unknown options \['momentum'\]"):
        optim.OptimizerAdaptor(SignSGD(), [p], momentum=0.9)


def test_bad_options_are_named():
    p = nn.Param(ember.zeros(2))
    with pytest.raises(ValueError, match="invalid learning rate -1"):
        optim.SGD([p], lr=-1)
    with pytest.raises(ValueError, match="betas must be in"):
        optim.Adam([p], betas=(1.5, 0.9))
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.Adam([])
    with pytest.raises(ValueError, match="invalid learning rate nan"):
        optim.SGD([p], lr=float("nan"))
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero dampening"):
        optim.SGD([p], lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)
    adam = optim.Adam([p])
    p.grad = ember.ones(2)
    adam.step()
    with pytest.raises(ValueError, match="saved from Adam, this optimizer is SGD"):
        optim.SGD([p], lr=0.1).load_state_dict(adam.state_dict())
    q = nn.Param(ember.zeros(3))
    with pytest.raises(
        ValueError, match=r"state 'exp_avg' of param .* has shape \(2,\), but the parameter has shape \(3,\)"
    ):
        optim.Adam([q]).load_state_dict(adam.state_dict())


SCHEDULERS = [
    ("LambdaLR", lambda o: {"lr_lambda": lambda e: 0.95**e}),
    ("MultiplicativeLR", lambda o: {"lr_lambda": lambda e: 0.97}),
    ("StepLR", lambda o: {"step_size": 7, "gamma": 0.5}),
    ("MultiStepLR", lambda o: {"milestones": [10, 30, 30, 60], "gamma": 0.3}),
    ("ConstantLR", lambda o: {"factor": 0.5, "total_iters": 20}),
    ("LinearLR", lambda o: {"start_factor": 0.1, "end_factor": 0.9, "total_iters": 40}),
    ("ExponentialLR", lambda o: {"gamma": 0.97}),
    ("PolynomialLR", lambda o: {"total_iters": 60, "power": 2.0}),
    ("CosineAnnealingLR", lambda o: {"T_max": 30, "eta_min": 0.01}),
    ("CosineAnnealingWarmRestarts", lambda o: {"T_0": 10, "T_mult": 2, "eta_min": 0.001}),
    ("CyclicLR", lambda o: {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 7, "mode": "triangular2"}),
    ("CyclicLR", lambda o: {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 5, "mode": "exp_range", "gamma": 0.99}),
    ("OneCycleLR", lambda o: {"max_lr": 0.5, "total_steps": 100}),
    ("OneCycleLR", lambda o: {"max_lr": 0.5, "total_steps": 100, "three_phase": True, "anneal_strategy": "linear"}),
]


@needs_torch
@pytest.mark.parametrize("name,kw", SCHEDULERS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(SCHEDULERS)])
def test_scheduler_matches_torch_for_100_steps(name, kw):
    ep = nn.Param(ember.zeros(1))
    tp = torch.nn.Parameter(torch.zeros(1))
    eo = optim.SGD([ep], lr=0.1, momentum=0.9)
    to = torch.optim.SGD([tp], lr=0.1, momentum=0.9)
    es = getattr(sched, name)(eo, **kw(eo))
    ts = getattr(torch.optim.lr_scheduler, name)(to, **kw(to))
    for _ in range(99):
        assert es.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-9, abs=1e-12)
        assert eo.param_groups[0]["momentum"] == pytest.approx(to.param_groups[0]["momentum"], rel=1e-9)
        eo.step()
        to.step()
        es.step()
        ts.step()


@needs_torch
def test_sequential_chained_and_plateau_match_torch():
    def make(lib):
        p = nn.Param(ember.zeros(1)) if lib is optim else torch.nn.Parameter(torch.zeros(1))
        return lib.SGD([p], lr=0.1)

    eo, to = make(optim), make(torch.optim)
    es = sched.SequentialLR(eo, [sched.LinearLR(eo, 0.1, total_iters=5), sched.ExponentialLR(eo, 0.9)], [5])
    tl = torch.optim.lr_scheduler
    ts = tl.SequentialLR(to, [tl.LinearLR(to, 0.1, total_iters=5), tl.ExponentialLR(to, 0.9)], [5])
    eo2, to2 = make(optim), make(torch.optim)
    ec = sched.ChainedScheduler([sched.StepLR(eo2, 4, 0.5), sched.ExponentialLR(eo2, 0.95)])
    tc = tl.ChainedScheduler([tl.StepLR(to2, 4, 0.5), tl.ExponentialLR(to2, 0.95)])
    eo3, to3 = make(optim), make(torch.optim)
    ep = sched.ReduceLROnPlateau(eo3, patience=2, factor=0.5, cooldown=1)
    tp = tl.ReduceLROnPlateau(to3, patience=2, factor=0.5, cooldown=1)
    metrics = [1.0, 0.9, 0.95, 0.95, 0.95, 0.96, 0.8, 0.85, 0.85, 0.85, 0.85, 0.85, 0.7] * 4
    for step in range(40):
        for o in (eo, to, eo2, to2):
            o.step()
        es.step()
        ts.step()
        ec.step()
        tc.step()
        ep.step(metrics[step])
        tp.step(metrics[step])
        assert es.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-9)
        assert ec.get_last_lr() == pytest.approx(tc.get_last_lr(), rel=1e-9)
        assert eo3.param_groups[0]["lr"] == pytest.approx(to3.param_groups[0]["lr"], rel=1e-9)


def test_noam_warmup_shape():
    p = nn.Param(ember.zeros(1))
    o = optim.Adam([p], lr=1.0)
    s = sched.NoamLR(o, d_model=512, warmup_steps=10)
    lrs = []
    for _ in range(30):
        o.step()
        s.step()
        lrs.append(s.get_last_lr()[0])
    peak = int(np.argmax(lrs))
    assert peak == 9 and lrs[peak] == pytest.approx(512**-0.5 * 10**-0.5)
    assert lrs[-1] == pytest.approx(512**-0.5 * 30**-0.5)
    assert math.isfinite(sum(lrs))


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_numpy_path_matches_the_blas_path(name, monkeypatch):
    from ember.backends import _kernels_optim

    def run():
        p = nn.Param(ember.tensor(np.linspace(-1, 1, 12).reshape(3, 4)))
        opt = getattr(optim, name)([p], lr=0.1, **({"momentum": 0.9} if name == "SGD" else {}))
        for k in range(5):
            p.grad = ember.tensor(np.cos(np.arange(12.0) + k).reshape(3, 4))
            opt.step()
        return p.detach().numpy().copy()

    with_blas = run()
    monkeypatch.setattr(_kernels_optim, "_blas", lambda *args, **kwargs: None)
    np.testing.assert_allclose(run(), with_blas, rtol=1e-12, atol=1e-12)


@needs_torch
@pytest.mark.parametrize(
    "opts",
    [{"momentum": 0.9}, {"momentum": 0.9, "nesterov": True, "weight_decay": 0.01}, {"momentum": 0.5, "dampening": 0.2}],
)
def test_sgd_after_the_model_is_converted_to_float64_matches_torch(opts):
    # the momentum buffers stay float32 (PyTorch's too); the fused kernel refused the mix on the torch backend
    rng = np.random.default_rng(3)
    w0, xs = rng.standard_normal((3, 4)).astype(np.float32), [rng.standard_normal((5, 4)) for _ in range(5)]
    out = {}
    for lib in (ember, torch):
        p = (nn.Param if lib is ember else torch.nn.Parameter)(lib.tensor(w0.copy()))
        opt = (optim if lib is ember else torch.optim).SGD([p], lr=0.125, **opts)
        for i, x in enumerate(xs):
            if i == 2:
                with lib.no_grad():
                    p.data = p.data.double()
            opt.zero_grad()
            (p @ lib.tensor(x, dtype=p.dtype).T).tanh().sum().backward()
            opt.step()
        buf = opt.state[p]["momentum_buffer"]
        out[lib] = p.detach().numpy(), str(buf.dtype).endswith("float32")
    # (float64 gradients a rounding apart become float32 buffers an ulp apart: close, not bit-equal)
    np.testing.assert_allclose(out[ember][0], out[torch][0], rtol=1e-6, atol=1e-6)
    assert out[ember][0].dtype == np.float64 and out[ember][1] and out[torch][1]

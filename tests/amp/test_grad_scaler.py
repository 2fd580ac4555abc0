"""GradScaler against torch.amp.GradScaler("cpu"): the same gradients (with injected inf/NaN steps) give the
same scale, growth tracker, skipped steps, unscaled gradients and parameters, in float32."""

import numpy as np
import pytest

import ember
from ember.amp import GradScaler

SHAPES = [(5, 4), (5,)]
BAD = {4: np.inf, 9: np.nan, 10: -np.inf}  # step -> value injected into one gradient element


@pytest.fixture(autouse=True)
def _on_the_cpu():
    """GradScaler("cpu") scales CPU gradients: every tensor here lives on the CPU, whatever the default device
    (EMBER_DEVICE=cuda); the CUDA scaler is tests/cuda/test_gpu_only.py's."""
    with ember.device("cpu"):
        yield


def _params(lib, torch, arrays):
    if lib == "torch":
        return [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
    return [ember.nn.Param(ember.tensor(a)) for a in arrays]


def _run(torch, opt_name, opt_kw, clip, scaler_kw, steps=16):
    """``clip``: max norm for clipping after ``unscale_`` on odd steps (0: no clipping; every step unscales
    explicitly and the unscaled gradients are recorded)."""
    rng = np.random.default_rng(0)
    w = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    raws = [[rng.standard_normal(s).astype(np.float32) * 100 for s in SHAPES] for _ in range(steps)]
    for step, value in BAD.items():
        if step < steps:
            raws[step][0][1, 2] = value
    out = {}
    for lib in ("torch", "ember"):
        ps = _params(lib, torch, w)
        mod = torch.optim if lib == "torch" else ember.optim
        opt = getattr(mod, opt_name)(ps, **opt_kw)
        scaler = torch.amp.GradScaler("cpu", **scaler_kw) if lib == "torch" else GradScaler("cpu", **scaler_kw)
        clip_fn = torch.nn.utils.clip_grad_norm_ if lib == "torch" else ember.nn.utils.clip_grad_norm_
        make = torch.tensor if lib == "torch" else ember.tensor
        rec = []
        for step, raw in enumerate(raws):
            for p, r in zip(ps, raw, strict=True):
                p.grad = scaler.scale(make(r))
            if clip and step % 2:
                scaler.unscale_(opt)
                clip_fn(ps, clip)
            unscaled = None
            if not clip:
                scaler.unscale_(opt)
                unscaled = [p.grad.detach().numpy().copy() for p in ps]
            scaler.step(opt)
            scaler.update()
            rec.append((scaler.state_dict(), [p.detach().numpy().copy() for p in ps], unscaled))
        out[lib] = rec
    return out


@pytest.mark.parametrize("clip", [0.0, 1e9])
@pytest.mark.parametrize("growth_interval", [1, 3, 2000])
def test_follows_torch_exactly_with_sgd(torch, clip, growth_interval):
    # powers of two for lr and momentum: every product is exact, so the optimizers' own rounding (FMA or not)
    # cannot differ and the parameters must agree bit for bit; clipping after unscale_ (by a norm too large
    # to change anything here, so that the two libraries' norm roundings cannot differ)
    kw = {"init_scale": 2.0**10, "growth_interval": growth_interval}
    out = _run(torch, "SGD", {"lr": 0.25, "momentum": 0.5}, clip, kw)
    scales = set()
    for step, (t, e) in enumerate(zip(out["torch"], out["ember"], strict=True)):
        assert t[0] == e[0], step  # scale, growth tracker, factors, interval
        scales.add(t[0]["scale"])
        for tp, ep in zip(t[1], e[1], strict=True):
            np.testing.assert_array_equal(ep, tp, err_msg=f"step {step}")
        if t[2] is not None:  # the unscaled gradients themselves, infs and NaNs included
            for tg, eg in zip(t[2], e[2], strict=True):
                np.testing.assert_array_equal(eg, tg, err_msg=f"step {step}")
    assert len(scales) >= 3  # it backed off (and grew, for the short intervals)


def test_skipped_steps_leave_parameters_and_adam_state_alone(torch):
    out = _run(torch, "Adam", {"lr": 0.01}, 50.0, {"init_scale": 2.0**8, "growth_interval": 2})  # clipping bites
    for step, (t, e) in enumerate(zip(out["torch"], out["ember"], strict=True)):
        assert t[0] == e[0], step
        for tp, ep in zip(t[1], e[1], strict=True):
            np.testing.assert_allclose(ep, tp, rtol=1e-6, atol=1e-7, err_msg=f"step {step}")
        if step in BAD:  # skipped: the parameters are those of the step before
            for before, now in zip(out["ember"][step - 1][1], e[1], strict=True):
                np.testing.assert_array_equal(now, before)


OPTIMIZERS = {
    "SGD": {"lr": 0.1, "momentum": 0.9}, "Adam": {}, "AdamW": {}, "NAdam": {}, "RAdam": {}, "Adamax": {},
    "RMSprop": {}, "Adagrad": {}, "Adadelta": {}, "Lion": {}, "LAMB": {},
}  # fmt: skip


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_every_optimizer_skips_on_inf_and_steps_otherwise(name):
    p = ember.nn.Param(ember.ones(3, 2))
    opt = getattr(ember.optim, name)([p], **OPTIMIZERS[name])
    scaler = GradScaler("cpu", init_scale=4.0)
    p.grad = scaler.scale(ember.tensor([[1.0, float("nan")], [0.0, 1.0], [1.0, 1.0]]))
    scaler.step(opt)
    scaler.update()
    assert p.tolist() == [[1.0, 1.0]] * 3 and scaler.get_scale() == 2.0
    p.grad = scaler.scale(ember.full((3, 2), 0.5))
    scaler.unscale_(opt)
    assert p.grad.tolist() == [[0.5, 0.5]] * 3
    scaler.step(opt)
    scaler.update()
    assert p.detach().numpy().max() < 1.0 and scaler.get_scale() == 2.0


def test_state_dict_round_trip_and_disabled_pass_through(torch):
    a = GradScaler("cpu", init_scale=8.0, growth_interval=5)
    b = GradScaler("cpu")
    b.load_state_dict(a.state_dict())
    assert (
        b.state_dict() == a.state_dict() == torch.amp.GradScaler("cpu", init_scale=8.0, growth_interval=5).state_dict()
    )
    off = GradScaler("cpu", enabled=False)
    loss = ember.tensor(3.0)
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    p = ember.nn.Param(ember.ones(2))
    p.grad = ember.ones(2)
    off.step(ember.optim.SGD([p], lr=1.0))
    assert p.tolist() == [0.0, 0.0]


def test_scale_of_lists_and_half_losses():
    s = GradScaler("cpu", init_scale=4.0)
    a, b = s.scale([ember.tensor(1.0), (ember.tensor(2.0),)])
    assert a.item() == 4.0 and b[0].item() == 8.0
    half = s.scale(ember.tensor(1.5, dtype=ember.float16))  # 0-d half times the 0-d float32 scale: float32
    assert half.dtype is ember.float32 and half.item() == 6.0


def test_misuse_is_refused_clearly():
    p = ember.nn.Param(ember.ones(2))
    opt = ember.optim.SGD([p], lr=0.1)
    s = GradScaler("cpu")
    p.grad = s.scale(ember.ones(2))
    s.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        s.unscale_(opt)
    s.step(opt)
    with pytest.raises(RuntimeError, match="already been called since the last update"):
        s.step(opt)
    with pytest.raises(RuntimeError, match="after step"):
        s.unscale_(opt)
    s.update()
    with pytest.raises(RuntimeError, match="no inf checks"):
        s.update()
    with pytest.raises(RuntimeError, match="closure"):
        s.step(opt, closure=lambda: 0.0)
    with pytest.raises(ValueError, match="growth_factor"):
        GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(ValueError, match="device must be 'cuda' or 'cpu'"):
        GradScaler("tpu")
    if not ember.cuda.is_available():
        with pytest.raises(RuntimeError, match=r"GradScaler\('cpu'\)"):  # names what to use instead
            GradScaler("cuda")
        GradScaler("cuda", enabled=False)  # disabled: fine anywhere


def test_float16_gradients_are_refused():
    p = ember.nn.Param(ember.ones(2, dtype=ember.float16))
    p.grad = ember.ones(2, dtype=ember.float16)
    s = GradScaler("cpu")
    s.scale(ember.tensor(1.0))
    with pytest.raises(TypeError, match="float16 gradients"):
        s.unscale_(ember.optim.SGD([p], lr=0.1))

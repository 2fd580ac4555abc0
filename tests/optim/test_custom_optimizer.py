"""A PyTorch-style optimizer written against ``Optimizer`` (``super().__init__(params, defaults)``, a ``step`` over
``param_groups`` keeping tensors in ``self.state[p]``) runs unchanged in Ember: the same class body under both
libraries gives the same parameters, state dict and schedule; step hooks run on custom and built-in optimizers."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _momentum_class(lib):
    class Momentum(lib.optim.Optimizer):
        def __init__(self, params, lr=0.1, momentum=0.0):
            super().__init__(params, dict(lr=lr, momentum=momentum))

        @lib.no_grad()
        def step(self, closure=None):
            loss = None
            if closure is not None:
                with lib.enable_grad():
                    loss = closure()
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    st = self.state[p]
                    if "buf" not in st:
                        st["buf"] = p.grad.clone()
                    else:
                        st["buf"].mul_(group["momentum"]).add_(p.grad)
                    p.add_(st["buf"], alpha=-group["lr"])
            return loss

    return Momentum


def _train(lib, steps=4, opt=None, w=None):
    w = lib.tensor(np.array([1.0, -2.0, 0.5]), requires_grad=True) if w is None else w
    b = lib.tensor(np.array([0.3]), requires_grad=True)
    opt = _momentum_class(lib)([{"params": [w]}, {"params": [b], "lr": 0.05}], momentum=0.9) if opt is None else opt
    sched = lib.optim.lr_scheduler.StepLR(opt, 2, 0.5)
    for i in range(steps):
        opt.zero_grad()
        loss = ((w * (i + 1)).sin().sum() + b * w.sum()) ** 2
        loss.sum().backward()
        opt.step()
        sched.step()
    return w, b, opt


def test_a_pytorch_optimizer_class_runs_unchanged():
    (ew, eb, eo), (tw, tb, to) = _train(ember), _train(torch)
    np.testing.assert_allclose(ew.detach().numpy(), tw.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(eb.detach().numpy(), tb.detach().numpy(), rtol=1e-12)
    es, ts = eo.state_dict(), to.state_dict()
    assert es["param_groups"] == ts["param_groups"]
    assert sorted(es["state"]) == sorted(ts["state"]) == [0, 1]
    np.testing.assert_allclose(es["state"][0]["buf"].numpy(), ts["state"][0]["buf"].numpy(), rtol=1e-12)
    assert isinstance(ember.optim.Adam([ew]), ember.optim.Optimizer)


def test_state_dict_restores_a_copy_and_the_group_options():
    w, _, opt = _train(ember, steps=2)
    saved = opt.state_dict()
    w2 = w.detach().clone().requires_grad_()
    b2 = ember.tensor(np.array([0.3]), requires_grad=True)
    opt2 = _momentum_class(ember)([{"params": [w2]}, {"params": [b2], "lr": 0.05}], momentum=0.9)
    opt2.load_state_dict(saved)
    assert opt2.state[w2]["buf"] is not opt.state[w]["buf"]  # a copy
    np.testing.assert_array_equal(opt2.state[w2]["buf"].numpy(), opt.state[w]["buf"].numpy())
    assert opt2.param_groups[0]["lr"] == saved["param_groups"][0]["lr"] == 0.05  # StepLR halved it after 2 steps
    from ember.optim._base import required

    class NeedsLr(ember.optim.Optimizer):
        def __init__(self, params, lr=required):
            super().__init__(params, {"lr": lr})

    with pytest.raises(ValueError, match="required"):
        NeedsLr([w2])


@pytest.mark.parametrize("kind", ["custom", "builtin"])
def test_step_hooks(kind):
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    opt = _momentum_class(ember)([w], lr=0.1) if kind == "custom" else ember.optim.SGD([w], lr=0.1)
    calls = []
    pre = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", o is opt)))
    opt.register_step_post_hook(lambda o, a, k: calls.append(("post", float(w[0]))))
    (w * w).sum().backward()
    opt.step()
    assert calls == [("pre", True), ("post", pytest.approx(0.8))]
    pre.remove()
    opt.step()
    assert [c[0] for c in calls] == ["pre", "post", "post"]


def test_compiled_step_with_a_custom_optimizer_equals_eager():
    def run(compiled):
        ember.manual_seed(0)
        m = ember.nn.Linear(3, 2)
        opt = _momentum_class(ember)(m.parameters(), lr=0.05, momentum=0.9)

        def step(x):
            loss = (m(x) ** 2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss

        fn = ember.compile(step) if compiled else step
        rng = np.random.RandomState(0)
        losses = [fn(ember.tensor(rng.randn(4, 3).astype(np.float32))).item() for _ in range(5)]
        return losses, m.weight.detach().numpy()

    (el, ew), (cl, cw) = run(False), run(True)
    assert el == cl
    np.testing.assert_array_equal(ew, cw)


def _hook_calls(opt, w):
    calls = []
    opt.register_step_pre_hook(lambda o, a, k: calls.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: calls.append("post"))

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    closure()
    opt.step(closure)
    return calls


def test_step_hooks_run_once_for_subclasses_and_lbfgs():
    class Inner(ember.optim.SGD):
        def step(self, closure=None):
            return super().step(closure)

    w = ember.tensor([1.0, 2.0], requires_grad=True)
    for opt in (Inner([w], lr=0.1), ember.optim.LBFGS([w], max_iter=2), _momentum_class(ember)([w])):
        assert _hook_calls(opt, w) == ["pre", "post"], type(opt).__name__

"""The torch backend's kernel region (issue 28): the engine runs Ember's own first-order array rules below torch's
autograd dispatch layer (``Backend.kernel_region``), and leaves it for user code (hooks, a user Function's
backward), after an error too; gradients are the same bits with and without it. And ``_boxed``, the backend's
entry for aten kernels without a Python binding, gives ``OpOverload._op``'s results bit for bit."""

import numpy as np
import pytest

import ember
from ember import backends

torch = pytest.importorskip("torch")
from ember.backends.torch.kernels import _boxed  # noqa: E402

_PROBE = torch.ones(1, requires_grad=True)


def _below_autograd() -> bool:
    """Whether torch's autograd dispatch layer is skipped here: torch then records nothing, even for a tensor that
    requires its gradient (grad mode is on inside Ember's first-order backward)."""
    return not (_PROBE * 2).requires_grad


def _spy_tanh_backward(monkeypatch, be, seen):
    rule = be.tanh_backward

    def spy(g, y):
        seen.append(_below_autograd())
        return rule(g, y)

    monkeypatch.setattr(be, "tanh_backward", spy)


def _graph(x, w):
    """add, mul, tanh, sigmoid, relu, matmul, broadcasting and reductions: many array rules."""
    h = ((x @ w + 1.0) * 0.5).tanh()
    return (h.sigmoid() * h.relu() - h.mean(0)).sum() + (h * x[:, :1]).pow(2).mean()


def test_array_rules_run_below_torchs_autograd_and_the_region_ends(monkeypatch):
    with backends.use("torch"):
        x = ember.randn(8, requires_grad=True)
        seen = []
        _spy_tanh_backward(monkeypatch, x._backend, seen)
        assert not _below_autograd()
        ((x + 1.0) * 0.5).tanh().tanh().sum().backward()
    assert seen == [True, True]
    assert not _below_autograd()  # left when backward returns
    assert backends.get("numpy").kernel_region is None  # nothing to skip in NumPy


def test_user_code_in_backward_runs_with_torchs_autograd(monkeypatch):
    """A tensor hook, a leaf hook and a user Function's backward that use torch's own autograd get its gradients
    (below the region torch would record nothing), and the array rules after them are below it again."""
    inside = []

    def torch_grad():  # what a hook using real torch's autograd computes: d(t^3)/dt at 2 = 12
        t = torch.tensor(2.0, requires_grad=True)
        (g,) = torch.autograd.grad(t**3, t)
        inside.append(_below_autograd())
        return float(g)

    class Twice(ember.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * (torch_grad() / 6.0)

    with backends.use("torch"):
        x = ember.randn(8, requires_grad=True)
        seen = []
        _spy_tanh_backward(monkeypatch, x._backend, seen)
        h = Twice.apply(x.tanh()).tanh()
        h.register_hook(lambda g: g * (torch_grad() / 12.0))
        x.register_hook(lambda g: g * (torch_grad() / 12.0))
        h.tanh().sum().backward()
        tx = torch.tensor(x.detach().numpy(), requires_grad=True)
        (torch.tanh(torch.tanh(tx) * 2).tanh()).sum().backward()
    assert inside == [False, False, False]
    # the three tanh rules: the last one's, before the hooks; the hooked node's step (its hook, then its rule)
    # runs whole outside the region; the first one's, after the user Function, below it again
    assert seen == [True, False, True]
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
    assert not _below_autograd()


@pytest.mark.parametrize("where", ["array rule", "hook", "user Function"])
def test_the_region_is_left_after_an_error(monkeypatch, where):
    class Boom(ember.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    with backends.use("torch"):
        x = ember.randn(8, requires_grad=True)
        y = x.tanh()
        if where == "array rule":

            def bad(g, y):
                raise ValueError("boom")

            monkeypatch.setattr(x._backend, "tanh_backward", bad)
        elif where == "hook":
            y = y * 2.0
            y.register_hook(lambda g: (_ for _ in ()).throw(ValueError("boom")))
        else:
            y = Boom.apply(y)
        with pytest.raises(ValueError, match="boom") as info:
            y.tanh().sum().backward()
    assert not _below_autograd()  # (while the traceback, which holds the engine's frame, is alive)
    assert info.tb is not None


def test_gradients_are_the_same_bits_without_the_region(monkeypatch):
    with backends.use("torch"):
        be = ember.zeros(1)._backend
        g = np.random.default_rng(0)
        xv, wv = g.standard_normal((5, 4)), g.standard_normal((4, 3))
        grads = {}
        for region in (be.kernel_region, None):
            monkeypatch.setattr(be, "kernel_region", region)
            for dtype in ("float32", "float64"):
                x = ember.tensor(xv, dtype=dtype, requires_grad=True)
                w = ember.tensor(wv, dtype=dtype, requires_grad=True)
                _graph(x, w).backward()
                grads[region is None, dtype] = (x.grad._data.clone(), w.grad._data.clone())
    for dtype in ("float32", "float64"):
        for a, b in zip(grads[False, dtype], grads[True, dtype], strict=True):
            assert a.dtype == getattr(torch, dtype) and torch.equal(a, b)


def _same(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for u, v in zip(a, b, strict=True):
            _same(u, v)
        return
    assert a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride()
    assert torch.equal(a, b) or ((a.isnan() == b.isnan()).all() and torch.equal(a.nan_to_num(), b.nan_to_num()))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_boxed_entry_gives_the_overloads_bits(dtype):
    gen = torch.Generator().manual_seed(0)
    r = lambda *s: torch.randn(*s, generator=gen, dtype=dtype) * 3
    g, y = r(6, 7).t(), r(7, 6).tanh()  # a transposed gradient: strides differ from y's
    y[0, 0] = float("nan")
    x4 = r(2, 3, 9, 7)
    cases = [
        ("tanh_backward", (g, y), {}),
        ("sigmoid_backward", (g, y.sigmoid()), {}),
        ("threshold_backward", (g, y, 0), {}),
        ("gelu_backward", (g, y), {"approximate": "tanh"}),
        ("tanh_backward", (r(0, 3), r(0, 3)), {}),  # empty
        ("tanh_backward", (r(()), r(())), {}),  # 0-d
        ("max_pool2d_with_indices", (x4, [3, 2], [2, 2], [1, 0], [1, 1], True), {}),  # two outputs
        ("_log_softmax_backward_data", (g, r(6, 7).log_softmax(1), 1, dtype), {}),
    ]
    for name, args, kwargs in cases:
        want = getattr(torch.ops.aten, name).default._op(*args, **kwargs)
        _same(_boxed(name)(*args, **kwargs), want)
    with pytest.raises(RuntimeError):  # torch's own error for mismatched shapes
        _boxed("tanh_backward")(r(3), r(4))

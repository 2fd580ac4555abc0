"""``ember.compile``: what cannot be captured is detected (eager with one warning naming the file and line, or
an error with ``fullgraph=True``), modules, the PyTorch-style signature, and guards."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ember
import ember.nn as nn

HERE = re.escape(__file__)


def _bits(t: Any) -> bytes:
    return np.ascontiguousarray(t.detach().numpy()).tobytes()


def _line_of(fn: Callable[..., Any], marker: str) -> int:
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, text in enumerate(lines) if marker in text)


def _item(x: Any) -> Any:
    return x * x.sum().item()  # host


def _float(x: Any) -> Any:
    return x * float(x.sum())  # host


def _bool_if(x: Any) -> Any:
    if x.sum() > 0:  # host
        return x * 2
    return x


def _numpy(x: Any) -> Any:
    return x * ember.tensor(x.numpy().copy())  # host


def _tolist(x: Any) -> Any:
    return x * len(x.tolist())  # host


def _print(x: Any) -> Any:
    y = x * 2
    print(y)  # host
    return y


def _nonzero(x: Any) -> Any:
    return x[ember.nonzero(x > 0)[:, 0]]  # host


def _mask(x: Any) -> Any:
    return x[x > 0]  # host


PATTERNS = [_item, _float, _bool_if, _numpy, _tolist, _print, _nonzero, _mask]


@pytest.mark.parametrize("fn", PATTERNS, ids=lambda f: f.__name__[1:])
def test_non_capturable_pattern_runs_eagerly_with_one_warning(fn: Callable[..., Any], capsys: Any) -> None:
    c = ember.compile(fn)
    x = ember.randn(6)
    line = _line_of(fn, "# host")
    with pytest.warns(UserWarning, match=f"runs eagerly: .* at {HERE}:{line}"):
        first = c(x)
    assert _bits(first) == _bits(fn(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            y = ember.randn(6)
            assert _bits(c(y)) == _bits(fn(y))
    assert c.eager and not c.cache
    capsys.readouterr()


@pytest.mark.parametrize("fn", PATTERNS, ids=lambda f: f.__name__[1:])
def test_non_capturable_pattern_raises_with_fullgraph(fn: Callable[..., Any], capsys: Any) -> None:
    c = ember.compile(fn, fullgraph=True)
    line = _line_of(fn, "# host")
    with pytest.raises(ember.CaptureError, match=f"fullgraph=True.* at {HERE}:{line}"):
        c(ember.randn(6))
    assert isinstance(ember.CaptureError("x"), RuntimeError)
    capsys.readouterr()


def test_a_check_inside_ember_becomes_a_guard_and_its_failure_runs_eagerly() -> None:
    emb = nn.Embedding(5, 3)

    @ember.compile
    def f(idx: Any) -> Any:
        with ember.no_grad():
            return emb(idx).sum(0)

    good = [ember.tensor([0, 1, 4]), ember.tensor([2, 3, 3]), ember.tensor([4, 4, 0])]
    for i in good:
        assert _bits(f(i)) == _bits(f.fn(i))
    assert f.stats["captures"] == 1 and f.stats["replays"] == 1
    if not good[0]._backend.host_checks:
        # torch-CUDA: a replay reads nothing back, so it has no guard (its kernel reports a bad index, as
        # PyTorch's CUDA kernels do, by a device assert that ends the process's CUDA context); a recording
        # call checks the index's host-known range
        g = ember.compile(f.fn)
        with pytest.raises(IndexError, match="out of range"):
            g(ember.tensor([0, 7, 1]))
        return
    with pytest.raises(IndexError, match="out of range"):
        f(ember.tensor([0, 7, 1]))


def test_compiled_module_replays_forward_under_no_grad() -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.2), nn.Linear(8, 2))
    cm = ember.compile(model)
    assert isinstance(cm, nn.Module) and cm._orig_mod is model
    assert list(cm.state_dict()) == [f"_orig_mod.{k}" for k in model.state_dict()]
    model.eval()
    with ember.no_grad():
        for _ in range(4):
            x = ember.randn(3, 4)
            assert _bits(cm(x)) == _bits(model(x))
    assert cm._compiled.stats["replays"] == 2
    cm.train()  # another program (batch statistics, dropout), checked the same way
    with ember.no_grad():
        for _ in range(3):
            x = ember.randn(3, 4)
            state = ember.get_rng_state()
            mean = model[1].running_mean.numpy().copy()
            a = cm(x)
            ember.set_rng_state(state)
            model[1].running_mean.copy_(ember.tensor(mean))
            assert _bits(a) == _bits(model(x))
    assert cm._compiled.stats["captures"] == 2
    y = cm(ember.randn(3, 4))  # grad mode: the ordinary graph
    assert y.requires_grad and y.grad_fn is not None


def test_pytorch_signature_and_decorator_forms() -> None:
    with pytest.warns(UserWarning, match="mode='no-such-mode'"):
        ember.compile(lambda x: x, mode="no-such-mode")
    with pytest.warns(UserWarning, match="backend='inductor'"):
        ember.compile(lambda x: x, backend="inductor")

    @ember.compile(fullgraph=True, dynamic=False)
    def f(x: Any) -> Any:
        return (x * 2).exp()

    x = ember.randn(3)
    for _ in range(3):
        assert _bits(f(x)) == _bits((x * 2).exp())
    assert ember.compile(f.fn, disable=True) is f.fn
    eager = ember.compile(f.fn, backend="eager")
    eager(x)
    assert eager.stats["eager"] == 1 and not eager.cache


def test_program_is_flat_array_code() -> None:
    w = nn.Linear(3, 2)
    opt = ember.optim.SGD(w.parameters(), lr=0.1)

    @ember.compile
    def step(x: Any) -> Any:
        opt.zero_grad()
        loss = w(x).square().mean()
        loss.backward()
        opt.step()
        return loss

    for _ in range(3):
        step(ember.randn(4, 3))
    src = step.cache[0].program.source
    assert src.startswith("def replay(x0):") and "MISS" not in src
    assert "Tensor" not in src and "apply" not in src


def test_hooks_added_after_capture_recapture() -> None:
    lin = nn.Linear(2, 2)
    seen = []
    c = ember.compile(lambda x: lin(x))
    with ember.no_grad():
        x = ember.randn(1, 2)
        c(x)
        c(x)
        lin.register_forward_hook(lambda m, a, o: seen.append(1))
        c(x)
    assert seen == [1] and c.stats["captures"] == 2


def test_compiled_module_under_grad_mode_is_one_node_with_the_recorded_backward() -> None:
    import copy

    def make() -> Any:
        ember.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Tanh(), nn.Dropout(0.3), nn.Linear(6, 3))

    stem1, stem2 = nn.Linear(3, 4), None
    body1 = make()
    stem2, body2 = copy.deepcopy(stem1), copy.deepcopy(body1)
    body2c = ember.compile(body2)  # a compiled part inside a larger model: its input needs a gradient too
    for i in range(4):
        x = ember.randn(5, 3)
        state = ember.get_rng_state()
        y1 = body1(stem1(x))
        ember.set_rng_state(state)
        y2 = body2c(stem2(x))
        assert _bits(y1) == _bits(y2)
        if i >= 2:  # (the second call is checked: replayed beside eager, eager's result returned)
            assert y2.grad_fn.name == "CompiledForwardBackward0"
        (y1 * y1).sum().backward()
        (y2 * y2).sum().backward()
        for p, q in zip([*stem1.parameters(), *body1.parameters()], [*stem2.parameters(), *body2.parameters()],
                        strict=True):  # fmt: skip
            assert _bits(p.grad) == _bits(q.grad)
    assert body2c._graph.stats == {"captures": 1, "checked": 1, "replays": 2, "eager": 0}
    with pytest.raises(RuntimeError, match="no differentiable backward"):
        y = body2c(stem2(ember.randn(5, 3)))
        ember.autograd.grad(y.sum(), stem2.weight, create_graph=True)


def test_a_distributed_call_without_a_host_step_is_not_recorded() -> None:
    import ember.distributed as dist

    def step(x: Any) -> Any:
        dist.barrier()
        return x * 2

    with pytest.raises(ember.CaptureError, match=r"distributed call \(barrier\) runs inside it \(not captured\)"):
        ember.compile(step, fullgraph=True)(ember.ones(3))

    def reduce(x: Any) -> Any:  # a collective is a host step: outside a group, eager's error
        dist.all_reduce(x)
        return x * 2

    with pytest.raises(dist.NotInitializedError):
        ember.compile(reduce, fullgraph=True)(ember.ones(3))


def test_compiled_function_returning_a_graph_is_one_node() -> None:
    w = ember.randn(4, 3, requires_grad=True)
    b = ember.zeros(3, requires_grad=True)

    def f(x: Any) -> Any:
        return (x @ w + b).tanh() * 2

    c = ember.compile(f)
    for _ in range(4):
        x = ember.randn(5, 4, requires_grad=True)
        x2 = ember.tensor(x.detach().numpy().copy(), requires_grad=True)
        y1, y2 = f(x), c(x2)
        assert _bits(y1) == _bits(y2)
        g1 = ember.autograd.grad((y1 * y1).sum(), [x, w, b])
        g2 = ember.autograd.grad((y2 * y2).sum(), [x2, w, b])
        assert [_bits(g) for g in g1] == [_bits(g) for g in g2]
    assert c.graph.stats == {"captures": 1, "checked": 1, "replays": 1, "eager": 0}
    with ember.no_grad():  # without grad mode: the plain program
        assert _bits(c(ember.ones(5, 4))) == _bits(f(ember.ones(5, 4)))


def test_the_default_device_dtype_and_deterministic_mode_are_guards() -> None:
    # a factory inside the step makes its tensor where eager would (was: on the device of the first call, silently)
    f = ember.compile(lambda n: ember.ones(n) * 2)
    here = ember.zeros(1)._backend
    if here.name == "numpy":
        pytest.importorskip("torch")
    other = ember.backends.get("torch" if here.name == "numpy" else "numpy").device
    for _ in range(3):
        assert f(3)._backend is here
    with ember.device(other):
        for _ in range(3):
            out = f(3)
            assert out._backend is (ember.ones(1) * 2)._backend and out._backend is not here
    before = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    try:
        for _ in range(3):
            assert f(3).dtype == ember.float64
    finally:
        ember.set_default_dtype(before)
    assert f(3).dtype == before and f(3)._backend is here
    assert not f.eager and len(f.cache) == 3
    ember.use_deterministic_algorithms(True)  # CuPy's index_add takes another kernel: another program
    try:
        f(3)
    finally:
        ember.use_deterministic_algorithms(False)
    assert len(f.cache) == 4


def test_a_parameter_or_sub_module_assigned_anew_is_a_guard() -> None:
    # the program read the old parameter's tensor (was: replayed with it, silently)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    f = ember.compile(lambda x: model(x))
    x = ember.randn(5, 3)
    with ember.no_grad():
        for _ in range(3):
            assert ember.equal(f(x), model(x))
        model[0].weight = nn.Parameter(ember.randn(4, 3))
        assert ember.equal(f(x), model(x))
        model[2] = nn.Linear(4, 2)
        assert ember.equal(f(x), model(x))
        model[0].register_buffer("unused", ember.zeros(1))  # a new buffer: recaptured, same values
        assert ember.equal(f(x), model(x))
    assert not f.eager and len(f.cache) == 4

    class Shift(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.by = ember.ones(2)  # a plain tensor attribute

        def forward(self, x: Any) -> Any:
            return x + self.by

    shift = Shift()
    g = ember.compile(lambda x: shift(x))
    for _ in range(3):
        assert ember.equal(g(ember.zeros(2)), ember.ones(2))
    shift.by = ember.full((2,), 3.0)
    assert ember.equal(g(ember.zeros(2)), shift.by)

    old = nn.Linear(2, 2)  # a module unpickled from before its dicts counted their writes: checked at every call
    object.__setattr__(old, "_params", dict(old._params))
    h = ember.compile(lambda x: old(x))
    with ember.no_grad():
        for _ in range(3):
            assert ember.equal(h(ember.ones(1, 2)), old(ember.ones(1, 2)))
        old._params["bias"] = nn.Parameter(ember.full((2,), 5.0))  # (a plain dict's write: no count)
        assert ember.equal(h(ember.ones(1, 2)), old(ember.ones(1, 2)))


def test_a_tensor_attribute_carried_between_calls_is_read_afresh() -> None:
    # state a module keeps between calls (self.h = ...): the recorded program read the first call's tensor
    class Accumulate(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.h = ember.zeros(2)
            self.last = None

        def forward(self, x: Any) -> Any:
            self.h = self.h + x
            self.last = self.h * 2  # written only: no guard needed, no recapture
            return self.h

    acc = Accumulate()
    f = ember.compile(lambda x: acc(x))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")  # (a new program per call, then eager with a warning past the cache)
        outs = [f(ember.ones(2)).tolist() for _ in range(12)]
    assert outs == [[float(i), float(i)] for i in range(1, 13)]
    assert [str(w.message) for w in seen if "a module's tensor attribute the program reads" in str(w.message)]

    class Shift(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.by = ember.ones(2)
            self.seen = None

        def forward(self, x: Any) -> Any:
            self.seen = x * 1  # a tensor attribute written at each call: the program is still replayed
            return x + self.by

    shift = Shift()
    g = ember.compile(lambda x: shift(x))
    for _ in range(4):
        assert ember.equal(g(ember.zeros(2)), ember.ones(2))
    assert len(g.cache) == 1 and g.stats["replays"] == 2

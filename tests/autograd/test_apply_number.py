"""``apply_number`` (``Tensor.__add__``/``__radd__``/``__mul__``/``__rmul__`` with a Python number) makes the same
result and record as ``Function.apply``: the same bits, edges, generation, saved versions, result fields, for
every kind of tensor (leaves, parameters, results, a second output, tensors written in place, views whose base
was written, transposed, detached, constants); it hands autocast, interceptors (the profiler, forward AD) and
anomaly mode to ``apply``; and the dunders' gradients are PyTorch's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember
from ember.autograd._apply_number import apply_number
from ember.autograd._grad_mode import ANOMALY_USED
from ember.autograd._node import _edges_of
from ember.ops._pointwise_binary import Add, Mul

from .test_apply_record import KINDS, _same_edges, _stale_view

TENSORS = [k for k in KINDS if k not in ("number", "int")]
NUMBERS = [1.5, 3, -2.0, 0.0, 2**30, 1e-40]


def _bits(t: ember.Tensor) -> bytes:
    return np.ascontiguousarray(np.asarray(t.detach().tolist(), dtype=np.float64)).tobytes()


def _fields(r: ember.Tensor) -> tuple[Any, ...]:
    return (r._requires_grad, type(r._creator), r._out_idx, r._vcl, r._grad, r._hooks, r._view, r._retain, r.dtype)


@pytest.mark.parametrize("kind", TENSORS)
@pytest.mark.parametrize("op", [Add, Mul])
@pytest.mark.parametrize("swap", [False, True])
def test_records_as_apply(kind: str, op: Any, swap: bool) -> None:
    for v in NUMBERS:
        x = KINDS[kind]()
        stale = x._creator if _stale_view(x) else None
        got = apply_number(op, x, v, swap)
        assert not _stale_view(x) and (stale is None or x._creator is not stale)  # a written base: fresh history
        args = (v, x) if swap else (x, v)
        want = op.apply(*args)  # the same arguments, as apply_number saw them
        assert _bits(got) == _bits(want) and _fields(got) == _fields(want)
        edges, generation, versions = _edges_of(args)
        for r in (got, want):
            node = r._creator
            if all(e is None for e in edges):
                assert node is None
                continue
            assert _same_edges(node._edges, edges), (node._edges, edges)
            assert node.generation == generation and node.inputs == args and node.backend is x._backend
            assert node._versions == (versions if op.saves_inputs else ())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 5)])
def test_dunder_gradients_match_pytorch(dtype: str, shape: tuple[int, ...], torch) -> None:
    v = np.random.default_rng(len(shape)).standard_normal(shape)

    def run(lib: Any) -> tuple[Any, ...]:
        x = lib.tensor(v.copy(), dtype=getattr(lib, dtype), requires_grad=True)
        xs = x.t() if len(shape) == 2 else x  # non-contiguous
        z = (0.5 * ((xs + 1.0) * 3)).tanh() + 2 + xs * -1.5
        (z * z).sum().backward()
        return z, x.grad

    for a, b in zip(run(ember), run(torch), strict=True):
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1] and tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_no_grad_records_nothing() -> None:
    x = KINDS["leaf"]()
    with ember.no_grad():
        for y in (x + 1.0, 1.0 + x, x * 2, 2 * x):
            assert y._creator is None and not y.requires_grad


def test_anomaly_mode_goes_through_apply() -> None:
    x = KINDS["leaf"]()
    with ember.autograd.detect_anomaly():
        z = 2.0 * (x + 1.0)
    assert z._creator._trace and z._creator.inputs[1]._creator._trace  # anomaly's record: where each was made


def test_autocast_and_interceptors_go_through_apply(monkeypatch) -> None:
    was, ANOMALY_USED[0] = ANOMALY_USED[0], False  # (anomaly mode used once, by any test: everything goes to apply)
    try:
        _interceptors_and_autocast(monkeypatch)
    finally:
        ANOMALY_USED[0] = was


def _interceptors_and_autocast(monkeypatch) -> None:
    import ember.autograd._function as F
    import ember.autograd.forward_ad as fwAD

    x = KINDS["leaf"]()
    with ember.autograd.profiler.profile() as prof:
        x * 3.0 + 1.0
    names = [e.name for e in prof.function_events]
    assert any("Mul" in n for n in names) and any("Add" in n for n in names), names
    with fwAD.dual_level():
        d = fwAD.make_dual(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 10.0]))
        t = fwAD.unpack_dual(3.0 * (d + 1.0)).tangent
    np.testing.assert_array_equal(t.numpy(), [3.0, 30.0])
    seen: list[Any] = []
    cast = F.cast_args
    monkeypatch.setattr(F, "cast_args", lambda cls, args: seen.append(cls.__name__) or cast(cls, args))
    with ember.autocast("cpu", dtype=ember.float16):
        y = 2 * (x + 1.0)
    assert seen == ["Add", "Mul"]  # autocast's own pass over the arguments
    np.testing.assert_array_equal(y.detach().numpy(), 2 * (x.detach().numpy() + 1))


def test_saved_tensors_hooks_see_each_node() -> None:
    x = KINDS["leaf"]()
    packed: list[Any] = []
    hooks = (lambda t: packed.append(t) or t, lambda t: t)
    with ember.autograd.graph.saved_tensors_hooks(*hooks):
        y = Mul.apply(x, 2.0)
    n = len(packed)
    with ember.autograd.graph.saved_tensors_hooks(*hooks):
        z = x * 2.0
    assert len(packed) == 2 * n
    (y + z).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 3), 4.0, dtype=np.float32))


@pytest.mark.parametrize("kind", TENSORS)
@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "tanh", "sigmoid"])
def test_one_argument_records_as_apply(kind: str, name: str) -> None:
    from ember.ops import _pointwise_unary as U

    op = {"exp": U.Exp, "log": U.Log, "sqrt": U.Sqrt, "tanh": U.Tanh, "sigmoid": U.Sigmoid}[name]
    x = KINDS[kind]()
    x = (x * x + 0.5).detach().requires_grad_(x.requires_grad) if name in ("log", "sqrt") else x  # positive
    stale = x._creator if _stale_view(x) else None
    got = getattr(ember, name)(x)  # apply_one
    assert not _stale_view(x) and (stale is None or x._creator is not stale)
    want = op.apply(x)
    assert _bits(got) == _bits(want) and _fields(got)[1:] == _fields(want)[1:]
    assert got._requires_grad == want._requires_grad
    edges, generation, versions = _edges_of((x,))
    for r in (got, want):
        node = r._creator
        if edges[0] is None:
            assert node is None
            continue
        assert _same_edges(node._edges, edges) and node.generation == generation and node.inputs == (x,)
        assert node._versions == (versions if op.saves_inputs else ())
        if op.saves_output:
            assert r._vcl == [0] and node._out_vcs[0] is r._vcl


def test_one_argument_gradients_match_pytorch(torch) -> None:
    v = np.random.default_rng(3).uniform(0.5, 2.0, (3, 5))

    def run(lib: Any) -> tuple[Any, ...]:
        x = lib.tensor(v.copy(), dtype=lib.float64, requires_grad=True)
        z = lib.sigmoid(lib.tanh(lib.sqrt(lib.log(lib.exp(x.t()) + 1.0))))
        (z * z).sum().backward()
        return z, x.grad

    for a, b in zip(run(ember), run(torch), strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)


def test_one_argument_interceptors_go_through_apply() -> None:
    was, ANOMALY_USED[0] = ANOMALY_USED[0], False
    try:
        x = KINDS["leaf"]()
        with ember.autograd.profiler.profile() as prof:
            ember.tanh(x)
        assert any("Tanh" in e.name for e in prof.function_events)
    finally:
        ANOMALY_USED[0] = was
    sub = ember.nn.Parameter(ember.tensor([0.5, 1.0]))  # a subclass: apply itself
    np.testing.assert_allclose(ember.tanh(sub).detach().numpy(), np.tanh([0.5, 1.0]), rtol=1e-6)

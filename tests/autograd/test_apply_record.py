"""``Function.apply`` records the same node on its straight-line path (an operator of one or two arguments) as on
its general pass: the edges, generation and versions equal ``_edges_of``'s record of the arguments, taken before
the call, for every kind of argument (numbers, constants, leaves, parameters, results, a second output,
tensors written in place, views whose base was written, float64, empty and non-contiguous tensors); and the
engine routes each gradient of an operator with several inputs to its own input."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ember
from ember._errors import DeviceError
from ember.autograd import Op
from ember.autograd._node import _ZERO, _edges_of
from ember.ops._pointwise_binary import Add, Mul
from ember.ops._pointwise_unary import Tanh

M = [[2.0, 0.5, -1.0], [0.25, 3.0, 0.5], [-0.5, 1.0, 4.0]]


def _leaf() -> ember.Tensor:
    return ember.tensor(M, requires_grad=True)


def _written() -> ember.Tensor:
    t = _leaf() * 2.0
    t.add_(1.0)  # version 1: the general pass records it
    return t


def _view_of_written_base() -> ember.Tensor:
    base = _leaf() * 1.0
    v = base.t()
    base.mul_(2.0)  # the view's history is stale: apply gives it a fresh one before recording
    return v


KINDS: dict[str, Callable[[], Any]] = {
    "number": lambda: 1.5,
    "int": lambda: 3,
    "const": lambda: ember.tensor(M),
    "leaf": _leaf,
    "param": lambda: ember.nn.Parameter(ember.tensor(M)),
    "result": lambda: _leaf() * 2.0,
    "deep": lambda: ((_leaf() * 2.0).tanh() * 3.0).tanh(),  # a higher generation
    "second_output": lambda: ember.linalg.qr(_leaf())[1],  # edge (node, 1)
    "written": _written,
    "view_of_written_base": _view_of_written_base,
    "transposed": lambda: _leaf().t(),  # a non-contiguous view with a history
    "detached": lambda: (_leaf() * 2.0).detach(),
}


def _same_edges(got: list[Any], want: list[Any]) -> bool:
    if len(got) != len(want):
        return False
    for g, w in zip(got, want, strict=True):
        if g.__class__ is tuple and w.__class__ is tuple:
            if len(g) != len(w) or any(a is not b for a, b in zip(g, w, strict=True)):
                return False
        elif g is not w:
            return False
    return True


def _stale_view(a: Any) -> bool:
    return isinstance(a, ember.Tensor) and a._view is not None and bool(a._vcl) and a._view[2] != a._vcl[0]


def _check_record(op: type[Op], args: tuple[Any, ...]) -> ember.Tensor:
    stale = {id(a): a._creator for a in args if _stale_view(a)}
    out = op.apply(*args)
    # apply gives a view whose base was written a fresh history first, and records that; it changes nothing else,
    # so the reference record read now is the one of the arguments as apply saw them
    for a in args:
        assert not _stale_view(a)
        if id(a) in stale:
            assert a._creator is not stale[id(a)]
    edges, generation, versions = _edges_of(args)
    node = out._creator
    if all(e is None for e in edges):
        assert node is None and not out.requires_grad
        return out
    assert node is not None and out.requires_grad
    assert _same_edges(node._edges, edges), (node._edges, edges)
    assert node.generation == generation
    assert node.inputs is args or node.inputs == args
    if op.saves_inputs:
        assert node._versions is versions or node._versions == versions
    return out


@pytest.mark.parametrize("a", list(KINDS))
@pytest.mark.parametrize("b", list(KINDS))
def test_two_arguments_record_as_the_general_pass(a: str, b: str) -> None:
    x, y = KINDS[a](), KINDS[b]()
    if not isinstance(x, ember.Tensor) and not isinstance(y, ember.Tensor):
        pytest.skip("two numbers: no node")
    for op in (Add, Mul):
        out = _check_record(op, (x, y))
        xv = np.asarray(x.tolist()) if isinstance(x, ember.Tensor) else x
        yv = np.asarray(y.tolist()) if isinstance(y, ember.Tensor) else y
        want = xv + yv if op is Add else xv * yv
        np.testing.assert_allclose(np.asarray(out.tolist()), want, rtol=1e-6)


@pytest.mark.parametrize("a", [k for k in KINDS if k not in ("number", "int")])
def test_one_argument_records_as_the_general_pass(a: str) -> None:
    x = KINDS[a]()
    out = _check_record(Tanh, (x,))
    np.testing.assert_allclose(np.asarray(out.tolist()), np.tanh(np.asarray(x.tolist())), rtol=1e-6)
    if out.requires_grad:  # its saved output is versioned from 0 (an in-place change to it is caught)
        assert out._vcl == [0] and out._creator._out_vcs[0] is out._vcl


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (3, 5), (2, 0, 3)])
@pytest.mark.parametrize("transpose", [False, True])
def test_gradients_through_the_straight_line_path_match_pytorch(
    dtype: str, shape: tuple[int, ...], transpose: bool, torch
) -> None:
    rng = np.random.default_rng(len(shape) + sum(shape))
    v, w = rng.standard_normal(shape), rng.standard_normal(shape)
    if transpose:
        v, w = v.T, w.T

    def run(lib: Any) -> tuple[Any, Any, Any]:
        x = lib.tensor(v.copy(), dtype=getattr(lib, dtype), requires_grad=True)
        y = lib.tensor(w.copy(), dtype=getattr(lib, dtype), requires_grad=True)
        xs, ys = (x.t(), y.t()) if transpose and len(shape) == 2 else (x, y)  # non-contiguous operands
        z = ((xs * ys + 0.5) * xs).tanh() * 2.0 + ys
        (z * z).sum().backward()
        return z, x.grad, y.grad

    ours, theirs = run(ember), run(torch)
    for a, b in zip(ours, theirs, strict=True):
        assert a.dtype.itemsize == b.dtype.itemsize
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_two_backends_are_refused_on_the_straight_line_path() -> None:
    other = "torch" if ember.tensor([1.0])._backend.name != "torch" else "numpy"
    pytest.importorskip("torch")
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x.detach().to(ember.backends.get(other, "cpu"))
    for args in ((x, y), (y, x)):
        with pytest.raises(DeviceError, match="expected all tensors on the same device and backend"):
            Mul.apply(*args)


def test_no_grad_and_anomaly_mode_on_the_straight_line_path() -> None:
    x = _leaf()
    with ember.no_grad():
        y = Mul.apply(x, 2.0)
    assert y._creator is None and not y.requires_grad
    with ember.autograd.detect_anomaly():
        z = Mul.apply(x, 2.0)
    assert z._creator is not None and z._creator._trace  # the anomaly path still records where it was made
    (z.sum()).backward()
    np.testing.assert_allclose(np.asarray(x.grad.tolist()), np.full((3, 3), 2.0))


class _ThreeInputs(Op):
    """``a * s + c`` with a number ``s`` between two tensors of different shapes (``c`` broadcasts): gradients
    at positions 0 and 2, each checked against its own input's shape."""

    saves_inputs = False

    def forward(self, a: Any, s: Any, c: Any) -> Any:
        return a * s + c

    def backward_arrays(self, g: Any) -> tuple[Any, Any, Any]:
        s = self.inputs[1]  # type: ignore[index]
        return g * s, None, g[:1] * 0.0 + g.sum()


class _Wrong(Op):
    """A backward rule that breaks the engine's contract in the way ``mode`` says."""

    saves_inputs = False
    mode = "short"

    def forward(self, a: Any, b: Any) -> Any:
        return a + b

    def backward_arrays(self, g: Any) -> Any:
        if self.mode == "short":
            return (g,)
        if self.mode == "shape":
            return g, g[:1]
        return None, g  # "none": no gradient for input 0


def test_each_gradient_reaches_its_own_input() -> None:
    a, c = ember.tensor([1.0, 2.0], requires_grad=True), ember.tensor([3.0], requires_grad=True)
    out = _ThreeInputs.apply(a, 5.0, c)
    (out * ember.tensor([1.0, 10.0])).sum().backward()
    assert a.grad.tolist() == [5.0, 50.0] and c.grad.tolist() == [11.0]
    b = ember.tensor([3.0])  # no gradient wanted: its (computed) gradient is dropped
    a.grad = None
    _ThreeInputs.apply(a, 2.0, b).sum().backward()
    assert a.grad.tolist() == [2.0, 2.0] and b.grad is None


@pytest.mark.parametrize("mode", ["short", "shape", "none"])
def test_a_backward_rule_breaking_the_contract_is_refused(mode: str) -> None:
    a, b = ember.tensor([1.0, 2.0], requires_grad=True), ember.tensor([3.0, 4.0], requires_grad=True)
    wrong = type("WrongBackward", (_Wrong,), {"mode": mode})
    out = wrong.apply(a * 1.0, b)
    if mode == "none":
        out.sum().backward()
        assert a.grad is None and b.grad.tolist() == [1.0, 1.0]
        return
    match = "returned 1 gradients for 2 inputs" if mode == "short" else r"gradient of shape \(1,\) for an input"
    with pytest.raises(RuntimeError, match=match):
        out.sum().backward()


def test_zero_marker_means_all_inputs_at_version_zero() -> None:
    x = _leaf() * 1.0
    assert Mul.apply(x, 2.0)._creator._versions is _ZERO
    x.mul_(3.0)
    assert Mul.apply(x, 2.0)._creator._versions == (1, -1)

"""Operators whose array rule keeps the shapes (``Node.shaped_grads``): the engine skips its per-edge shape check.

The claim holds by induction only if every such rule returns its inputs' shapes whenever its incoming gradients
have its outputs' shapes, and every gradient entering the graph has its root's shape. These tests sweep each
claiming operator over broadcasting, number operands on either side, 0-d, empty and non-contiguous inputs in
float32 and float64, with a non-uniform upstream gradient, against PyTorch's gradients (values and shapes); pin the
list of classes that claim it (a new one needs its sweep here) and that the claim is not inherited; and check that
a root gradient given as a list or array is shape-checked like a Tensor.
"""

import numpy as np
import pytest
import torch

import ember
from ember.autograd._function import Function, Op

CLAIMING = {"Add", "Sub", "Mul", "Div", "Neg", "Exp", "Log", "Tanh", "Sigmoid", "Relu"}

BINARY = {
    "add": lambda lib, a, b: a + b,
    "sub": lambda lib, a, b: a - b,
    "mul": lambda lib, a, b: a * b,
    "div": lambda lib, a, b: a / b,
}
UNARY = {
    "neg": lambda lib, a: -a,
    "exp": lambda lib, a: lib.exp(a),
    "log": lambda lib, a: lib.log(a),
    "tanh": lambda lib, a: a.tanh(),
    "sigmoid": lambda lib, a: lib.sigmoid(a),
    "relu": lambda lib, a: lib.relu(a),
}
SHAPE_PAIRS = [
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (2, 3)),
    ((3, 1), (1, 4)),
    ((), (2, 3)),
    ((2, 3), ()),
    ((0, 3), (3,)),
]
SHAPES = [(), (0,), (1,), (5,), (2, 3), (4, 1, 3)]


def _subclasses(cls):
    out, todo = [], [cls]
    while todo:
        for c in todo.pop().__subclasses__():
            out.append(c)
            todo.append(c)
    return out


def _value(rng, shape, dtype, positive=False):
    v = rng.uniform(0.5, 2.0, size=shape) if positive else rng.uniform(-2.0, 2.0, size=shape)
    return v.astype(dtype)


def _grads(lib, make, values, dtype, upstream, transpose):
    """Gradients of ``(make(*inputs) * upstream).sum()`` (an input given as a number stays one)."""
    ins = []
    for v in values:
        if isinstance(v, float):
            ins.append(v)
            continue
        if transpose and v.ndim == 2:  # a non-contiguous input: the transpose of a contiguous array
            t = lib.tensor(np.ascontiguousarray(v.T), dtype=getattr(lib, dtype)).T
            t = t.detach().requires_grad_(True)
        else:
            t = lib.tensor(v, dtype=getattr(lib, dtype), requires_grad=True)
        ins.append(t)
    out = make(lib, *ins)
    (out * lib.tensor(upstream, dtype=getattr(lib, dtype))).sum().backward()
    return out.detach().numpy(), [t.grad.numpy() if not isinstance(t, float) else None for t in ins]


def _compare(make, values, dtype, transpose=False):
    rng = np.random.default_rng(3)
    shape = np.broadcast_shapes(*[np.shape(v) for v in values if not isinstance(v, float)])  # (all elementwise)
    upstream = rng.uniform(-1.0, 1.0, size=shape).astype(dtype)
    e_out, e_g = _grads(ember, make, values, dtype, upstream, transpose)
    t_out, t_g = _grads(torch, make, values, dtype, upstream, transpose)
    tol = 1e-6 if dtype == "float32" else 1e-13
    np.testing.assert_allclose(e_out, t_out, rtol=tol, atol=tol)
    for v, a, b in zip(values, e_g, t_g, strict=True):
        if b is None:
            continue
        assert a.shape == b.shape == np.shape(v)
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_rules_against_pytorch(name, dtype):
    rng = np.random.default_rng(0)
    make = BINARY[name]
    for sa, sb in SHAPE_PAIRS:
        a = _value(rng, sa, dtype)
        b = _value(rng, sb, dtype, positive=name == "div")
        _compare(make, [a, b], dtype)
        _compare(make, [a, b], dtype, transpose=True)
        _compare(make, [a, 1.5], dtype)  # a number on either side broadcasts nothing
        _compare(make, [2.5, b], dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_rules_against_pytorch(name, dtype):
    rng = np.random.default_rng(1)
    for s in SHAPES:
        a = _value(rng, s, dtype, positive=name == "log")
        _compare(UNARY[name], [a], dtype)
        _compare(UNARY[name], [a], dtype, transpose=True)


def test_a_chain_of_claiming_nodes_against_pytorch():
    rng = np.random.default_rng(2)
    v, w = rng.uniform(-1, 1, size=(4, 3)), rng.uniform(0.5, 1.5, size=(3,))

    def make(lib, x, y):
        r = (x + 1.0) * 0.5
        r = (r.tanh() - y) / y
        return lib.relu(-lib.sigmoid(r) * 2.0 + 1.25) + lib.log(lib.exp(r) + 1.0)

    _compare(make, [v, w], "float64")


def test_the_classes_that_claim_it():
    import ember.nn  # (the operator classes of every layer)
    import ember.nn.functional  # noqa: F401

    claiming = {c.__name__ for c in _subclasses(Function) if c.shaped_grads}
    assert claiming == CLAIMING  # a new claim needs its sweep above
    assert Function.shaped_grads is False


def test_the_claim_is_not_inherited():
    from ember.ops._pointwise_binary import Add

    class MyAdd(Add):
        def backward_arrays(self, g):
            return g, g

    class Mine(Op):
        shaped_grads = True

    assert Add.shaped_grads and not MyAdd.shaped_grads and Mine.shaped_grads


def test_a_root_gradient_given_as_a_list_is_shape_checked():
    x = ember.ones(3, requires_grad=True)
    y = x.tanh()
    with pytest.raises(RuntimeError, match=r"gradient of shape \(1,\) given for an output of shape \(3,\)"):
        y.backward([1.0], retain_graph=True)
    with pytest.raises(RuntimeError, match="given for an output of shape"):
        ember.autograd.grad(y, x, grad_outputs=[np.ones((1,), dtype=np.float32)], retain_graph=True)
    assert x.grad is None
    y.backward([1.0, 2.0, 3.0])
    np.testing.assert_allclose(x.grad.numpy(), (1 - np.tanh(1.0) ** 2) * np.array([1.0, 2.0, 3.0]), rtol=1e-6)

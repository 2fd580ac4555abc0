"""Each operator class's own bound ``apply`` (``_function._bind_apply``) and the ONNX tracer's hook in ``apply``.

A class that inherits ``Function.apply`` gets it bound to itself, so ``Op.apply`` read from the class is one
dictionary read (a classmethod makes a bound method per read). These tests pin that every such class runs its own
operator, that a class defining ``apply`` itself (``ViewOp``, a user's override calling ``super().apply``) still
reaches the right class, as in PyTorch, and that ``ember.onnx``'s trace records each outermost call once.
"""

from types import MethodType

import numpy as np
import pytest
import torch

import ember
from ember.autograd._function import TRACE, Function
from ember.onnx._trace import trace
from ember.ops._indexing_view import Reshape, ViewOp


def _all_subclasses(cls):
    out, todo = [], [cls]
    while todo:
        for c in todo.pop().__subclasses__():
            out.append(c)
            todo.append(c)
    return out


def _resolved_apply(cls):
    """The ``apply`` function ``cls.apply`` runs, found without the bound entries."""
    for k in cls.__mro__:
        a = k.__dict__.get("apply")
        if a is None or (a.__class__ is MethodType and a.__self__ is k):
            continue
        return a.__func__ if isinstance(a, classmethod) else a
    raise AssertionError(cls)


def test_every_operator_runs_its_own_class():
    import ember.nn  # (the operator classes of every layer)
    import ember.nn.functional

    classes = _all_subclasses(Function)
    bound = [c for c in classes if "apply" not in c.__dict__ or c.__dict__["apply"].__class__ is MethodType]
    assert len(bound) > 100
    for c in bound:
        a = c.apply
        assert a.__class__ is MethodType and a.__self__ is c, c
        assert a.__func__ is _resolved_apply(c), c
    # a view op runs ViewOp.apply bound to itself; ViewOp's own super().apply reaches Function's, unbound
    assert Reshape.apply.__func__ is ViewOp.__dict__["apply"].__func__
    assert "apply" not in ember.autograd._function.Op.__dict__


def _two_level(lib):
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Cube(Scale):  # overrides forward/backward and apply, which calls super().apply
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x**2 * g

        @classmethod
        def apply(cls, *args, **kwargs):
            return super().apply(*args, **kwargs) + 1

    return Scale, Cube


def test_an_override_calling_super_apply_runs_its_own_class_as_in_pytorch():
    v = np.array([0.5, -1.25, 2.0])
    res = {}
    for name, lib in (("ember", ember), ("torch", torch)):
        scale, cube = _two_level(lib)
        x = lib.tensor(v, requires_grad=True)
        y = cube.apply(x)
        y.sum().backward()
        z = scale.apply(lib.tensor(v))
        res[name] = (y.detach().numpy(), x.grad.numpy(), z.numpy())
    for a, b in zip(res["ember"], res["torch"], strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=0)
    np.testing.assert_allclose(res["ember"][0], v**3 + 1)


def test_a_subclass_made_later_binds_to_itself():
    _, cube = _two_level(ember)

    class Twice(cube):  # inherits Cube's apply (a classmethod): bound to Twice
        pass

    assert Twice.__dict__["apply"].__self__ is Twice
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    Twice.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 12.0])


def test_trace_records_outermost_calls_once_and_restores_the_hook():
    class Double(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return (x + 0.0) * 2  # two operators inside: not recorded

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = ember.randn(2, 3)
    with trace() as calls:
        y = x.reshape(3, 2)  # a view op: ViewOp.apply, then Function.apply inside it
        z = Double.apply(y)
        w = ember.tanh(z)
    assert [c.op for c in calls] == ["Reshape", "Double", "Tanh"]
    assert calls[0].outputs == (y,) and calls[1].outputs == (z,) and calls[2].outputs == (w,)
    assert calls[0].args[0] is x
    assert TRACE[0] is None
    assert y._view is not None  # still a view of x


def test_trace_hook_is_restored_after_an_error():
    x = ember.randn(2, 3)
    with pytest.raises(ValueError, match="shape"), trace() as calls:
        x.reshape(5)
    assert calls == [] and TRACE[0] is None
    assert ember.tanh(x).shape == (2, 3)

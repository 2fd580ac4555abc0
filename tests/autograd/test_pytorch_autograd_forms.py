"""Autograd forms PyTorch code uses, run as the same code under both libraries: Functions with ``setup_context``
(forward without ``ctx``), ``ctx.set_materialize_grads``, zeros for the gradients of unused outputs,
``@once_differentiable`` (and its error on a double backward), ``backward(inputs=...)``, and
``torch.autograd.functional`` with tuple outputs, tuple inputs and ``strict``."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
LIBS = pytest.mark.parametrize("lib", [ember, torch], ids=["ember", "torch"])


def _np(t: Any) -> Any:
    return np.round(np.asarray(t.detach().tolist(), dtype=float), 10).tolist()


def _functions(lib: Any) -> list[Any]:
    fn_mod = importlib.import_module(f"{lib.__name__}.autograd.function")
    out: list[Any] = []

    class MulAdd(lib.autograd.Function):  # PyTorch 2's form: forward without ctx, then setup_context
        @staticmethod
        def forward(x: Any, y: Any) -> Any:
            return x * y, x + y

        @staticmethod
        def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
            ctx.save_for_backward(*inputs)
            ctx.mark_non_differentiable(output[1])

        @staticmethod
        def backward(ctx: Any, g1: Any, g2: Any) -> Any:
            x, y = ctx.saved_tensors
            return g1 * y, g1 * x

    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = lib.tensor([4.0, 5.0, 6.0], requires_grad=True)
    p, s = MulAdd.apply(x, y)
    p.sum().backward()
    out.append((_np(p), _np(s), s.requires_grad, _np(x.grad), _np(y.grad)))

    class Two(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x * 2, x * 3

        @staticmethod
        def backward(ctx: Any, g1: Any, g2: Any) -> Any:
            return g1 * 2 + g2 * 3  # an unused output's gradient arrives as zeros

    a, _ = Two.apply(x)
    x.grad = None
    a.sum().backward()
    out.append(_np(x.grad))

    seen: list[Any] = []

    class NoZeros(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx: Any, g1: Any, g2: Any) -> Any:
            seen.append(g2 is None)
            return g1 * 2

    a, _ = NoZeros.apply(x)
    a.sum().backward()
    out.append(seen)

    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.save_for_backward(x)
            return x**2

        @staticmethod
        @fn_mod.once_differentiable
        def backward(ctx: Any, g: Any) -> Any:
            (x,) = ctx.saved_tensors
            seen.append(lib.is_grad_enabled())
            return 2 * x * g

    (g,) = lib.autograd.grad(Square.apply(x).sum(), x, create_graph=True)
    out.append((_np(g), g.requires_grad))
    v = lib.ones(3, requires_grad=True)
    (g,) = lib.autograd.grad(Square.apply(x), x, v, create_graph=True)
    out.append(g.requires_grad)
    try:
        g.sum().backward()
    except RuntimeError as e:
        out.append("differentiate twice" in str(e))
    out.append(seen)
    return out


def test_function_forms_as_pytorch() -> None:
    assert _functions(ember) == _functions(torch)


def _backward_inputs(lib: Any) -> list[Any]:
    x = lib.ones(2, requires_grad=True)
    z = lib.ones(2, requires_grad=True)
    y = x * 3
    (y * 2).sum().backward(inputs=[y, z])
    out: list[Any] = [x.grad is None, _np(y.grad), z.grad is None]
    ((x * 3) * 2).sum().backward(inputs=x)
    ((x * 3) * 2).sum().backward(inputs=[x], retain_graph=False)
    out.append(_np(x.grad))
    lib.autograd.backward([(x * x).sum()], inputs=[x])
    out.append(_np(x.grad))
    try:
        (x * 2).sum().backward(inputs=[])
    except RuntimeError as e:
        out.append(str(e))
    return out


def test_backward_inputs_as_pytorch() -> None:
    assert _backward_inputs(ember) == _backward_inputs(torch)


def _transforms(lib: Any) -> list[Any]:
    F = lib.autograd.functional
    a = lib.tensor([1.0, 2.0], dtype=lib.float64)
    b = lib.tensor([0.5, -1.0, 3.0], dtype=lib.float64)

    def two_out(x: Any, y: Any) -> Any:
        return (x.sin() * y.sum(), (x**2).sum() + y.prod())

    out: list[Any] = []
    jac = F.jacobian(two_out, (a, b))
    out.append([[_np(j) for j in row] for row in jac])
    out.append(_np(F.jacobian(lambda x: x.exp(), a)))
    out.append([_np(j) for j in F.jacobian(lambda x: (x.exp(), x.sum()), a)])
    h = F.hessian(lambda x, y: (x**2).sum() * y.sum() + (y**3).sum(), (a, b))
    out.append([[_np(t) for t in row] for row in h])
    out.append(_np(F.hessian(lambda x: (x**3).prod(), a)))
    v, j = F.vjp(two_out, (a, b), (lib.ones(2, dtype=lib.float64), lib.tensor(2.0, dtype=lib.float64)))
    out.append(([_np(t) for t in v], [_np(t) for t in j]))
    v, j = F.jvp(two_out, (a, b), (lib.ones(2, dtype=lib.float64), lib.ones(3, dtype=lib.float64)))
    out.append([_np(t) for t in j])
    v, hv = F.hvp(lambda x: (x**3).sum(), a, lib.ones(2, dtype=lib.float64))
    out.append(_np(hv))
    out.append(_np(F.jacobian(lambda x, y: x * 2, (a, b))[1]))  # independent of y: zeros
    for fn in (lambda: F.jacobian(lambda x, y: x * 2, (a, b), strict=True),
               lambda: F.vjp(lambda x: x * 2, a)):  # fmt: skip
        try:
            fn()
        except RuntimeError as e:
            out.append(str(e)[:40])
    out.append(_np(F.jacobian(lambda x: x**2, a, vectorize=True, strategy="forward-mode")))
    return out


def test_autograd_functional_as_pytorch() -> None:
    assert _transforms(ember) == _transforms(torch)


def _dirty(lib: Any) -> list[Any]:
    class Double(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.mark_dirty(x)
            return x.mul_(2)

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g * 2

    class NotReturned(Double):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.mark_dirty(x)
            x.mul_(2)
            return x * 1

    a = lib.tensor([1.0, 3.0], requires_grad=True)
    x = a.clone()
    y = Double.apply(x)
    out: list[Any] = [y is x, _np(y), type(x.grad_fn).__name__ == type(y.grad_fn).__name__]
    (y * y).sum().backward()
    out.append(_np(a.grad))
    for bad in (lambda: NotReturned.apply(a.clone()), lambda: Double.apply(lib.ones(2, requires_grad=True))):
        try:
            bad()
        except RuntimeError as e:
            out.append(str(e)[:50])
    return out


def test_mark_dirty_as_pytorch() -> None:
    assert _dirty(ember) == _dirty(torch)


def _double_backward(lib: Any) -> list[Any]:
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (x,) = ctx.saved_tensors
            return 3 * x**2 * g

    class Mul(lib.autograd.Function):  # the setup_context form, saving both inputs
        @staticmethod
        def forward(a: Any, b: Any) -> Any:
            return a * b

        @staticmethod
        def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            a, b = ctx.saved_tensors
            return g * b, g * a

    x = lib.tensor([1.0, -2.0, 0.5], dtype=lib.float64, requires_grad=True)
    w = lib.tensor([0.3, 0.7, -1.1], dtype=lib.float64, requires_grad=True)
    out: list[Any] = []
    (g,) = lib.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    (h,) = lib.autograd.grad(g.sum(), x)
    out.append((_np(g), _np(h)))
    y = Mul.apply(Cube.apply(x), w)  # a gradient penalty through both Functions
    (gx,) = lib.autograd.grad(y.sum(), x, create_graph=True)
    penalty = (gx**2).sum()
    hx, hw = lib.autograd.grad(penalty, (x, w))
    out.append((_np(gx), _np(hx), _np(hw)))
    return out


def test_double_backward_through_user_functions_as_pytorch() -> None:
    """A user Function's saved inputs are the caller's tensors, so a second backward differentiates what its
    backward computed from them (Ember saved forward's detached aliases: no graph, an error or missing terms)."""
    assert _double_backward(ember) == _double_backward(torch)

"""Function transforms with PyTorch's names: vjp, jvp, jacobian, hessian, hvp."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ..ops._indexing_join import stack
from ._engine import grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _tup(x: Any) -> tuple[Tensor, ...]:
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _prep(inputs: Any) -> tuple[tuple[Tensor, ...], bool]:
    single = isinstance(inputs, Tensor)
    return tuple(t.detach().requires_grad_(True) for t in _tup(inputs)), single


def _grads(out: Tensor, xs: tuple[Tensor, ...], v: Any, create_graph: bool) -> tuple[Tensor, ...]:
    if not out.requires_grad:
        return tuple(x.new_zeros(x.shape) for x in xs)
    gs = grad([out], list(xs), [v], create_graph=create_graph, allow_unused=True, retain_graph=True)
    return tuple(x.new_zeros(x.shape) if g is None else g for g, x in zip(gs, xs, strict=True))


def vjp(func: Callable[..., Tensor], inputs: Any, v: Any = None, create_graph: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), v^T J)``."""
    xs, single = _prep(inputs)
    out = func(*xs)
    gs = _grads(out, xs, v, create_graph)
    res = out if create_graph else out.detach()
    return res, (gs[0] if single else gs)


def jvp(func: Callable[..., Tensor], inputs: Any, v: Any = None, create_graph: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), J v)`` by the double-vjp trick (two reverse passes)."""
    xs, _ = _prep(inputs)
    vs = _tup(v) if v is not None else tuple(x.new_ones(x.shape) for x in xs)
    out = func(*xs)
    u = out.new_zeros(out.shape).requires_grad_(True)
    gs = grad([out], list(xs), [u], create_graph=True, allow_unused=True, retain_graph=True)
    total = None
    for g, vv in zip(gs, vs, strict=True):
        if g is not None:
            term = (g * vv).sum()
            total = term if total is None else total + term
    if total is None or not total.requires_grad:
        jv = out.new_zeros(out.shape)
    else:
        (jv,) = grad([total], [u], create_graph=create_graph, allow_unused=True)
        if jv is None:
            jv = out.new_zeros(out.shape)
    return (out if create_graph else out.detach()), (jv if create_graph else jv.detach())


def jacobian_of(out: Tensor, xs: tuple[Tensor, ...], create_graph: bool) -> tuple[Tensor, ...]:
    """The Jacobian of ``out`` (already computed from ``xs``) for each of ``xs``, by rows: ``out.shape + x.shape``."""
    n = out.numel()
    rows: list[list[Tensor]] = [[] for _ in xs]
    for i in range(n):
        e = out.new_zeros(n)
        e[i] = 1.0
        gs = _grads(out, xs, e.reshape(out.shape), create_graph)
        for k, g in enumerate(gs):
            rows[k].append(g)
    return tuple(
        stack(r).reshape(out.shape + x.shape) if r else x.new_zeros(out.shape + x.shape)
        for r, x in zip(rows, xs, strict=True)
    )


def jacobian(func: Callable[..., Tensor], inputs: Any, create_graph: bool = False) -> Any:
    """The Jacobian, of shape ``out.shape + in.shape`` for each input."""
    xs, single = _prep(inputs)
    jac = jacobian_of(func(*xs), xs, create_graph)
    return jac[0] if single else jac


def hessian(func: Callable[..., Tensor], inputs: Any, create_graph: bool = False) -> Any:
    """The Hessian of a scalar function."""

    def grad_fn(*xs: Tensor) -> Tensor:
        out = func(*xs)
        (g,) = _grads(out, xs[:1], None, True)
        return g

    if not isinstance(inputs, Tensor) and len(_tup(inputs)) > 1:
        raise ValueError("hessian: pass a single tensor input")
    return jacobian(grad_fn, inputs, create_graph=create_graph)


def hvp(func: Callable[..., Tensor], inputs: Any, v: Any, create_graph: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), H v)`` for a scalar function (Hessian-vector product, double backward)."""
    xs, single = _prep(inputs)
    vs = _tup(v)
    out = func(*xs)
    gs = _grads(out, xs, None, True)
    total = None
    for g, vv in zip(gs, vs, strict=True):
        term = (g * vv).sum()
        total = term if total is None else total + term
    assert total is not None
    hv = _grads(total, xs, None, create_graph)
    res = tuple(h if create_graph else h.detach() for h in hv)
    return (out if create_graph else out.detach()), (res[0] if single else res)


vhp = hvp

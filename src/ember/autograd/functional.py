"""Function transforms with PyTorch's names and signatures: vjp, jvp, jacobian, hessian, hvp, vhp.

As ``torch.autograd.functional``: ``inputs`` is a Tensor or a tuple of them and the results follow that structure;
``func`` may return a Tensor or a tuple of them (``jacobian`` then nests: per output, per input); an output that
does not depend on an input gives zeros, or a RuntimeError with ``strict=True``. ``vectorize`` and ``strategy``
are accepted (the rows are computed one by one either way; the values are the same).
"""

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


def _outputs(out: Any, name: str) -> tuple[tuple[Tensor, ...], bool]:
    single = isinstance(out, Tensor)
    outs = _tup(out) if isinstance(out, (Tensor, tuple, list)) else (out,)
    if not all(isinstance(o, Tensor) for o in outs):
        raise TypeError(f"The outputs of the user-provided function given to {name} must be either a Tensor or a "
                        "tuple of Tensors")  # fmt: skip
    return outs, single


def _strict_error(i: int, j: int) -> RuntimeError:
    return RuntimeError(f"Output {i} of the user-provided function is independent of input {j}. This is not allowed "
                        "in strict mode.")  # fmt: skip


def _grads(
    out: Tensor, xs: tuple[Tensor, ...], v: Any, create_graph: bool, strict: bool = False, index: int = 0
) -> tuple[Tensor, ...]:
    """d(out . v)/dx for each x (zeros where out does not depend on x; strict: an error)."""
    if not out.requires_grad:
        gs: list[Any] = [None] * len(xs)
    else:
        gs = list(grad([out], list(xs), [v], create_graph=create_graph, allow_unused=True, retain_graph=True))
    if strict:
        for j, g in enumerate(gs):
            if g is None:
                raise _strict_error(index, j)
    return tuple(x.new_zeros(x.shape) if g is None else g for g, x in zip(gs, xs, strict=True))


def _keep(t: Tensor, create_graph: bool) -> Tensor:
    return t if create_graph else t.detach()


def vjp(
    func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False
) -> tuple[Any, Any]:
    """``(func(inputs), v^T J)``; ``v`` may be omitted for a single-element output."""
    xs, single = _prep(inputs)
    outs, single_out = _outputs(func(*xs), "vjp")
    vs = _tup(v) if v is not None else tuple(o.new_ones(o.shape) for o in outs)
    if v is None and any(o.numel() != 1 for o in outs):
        raise RuntimeError("The vector v can only be None if the user-provided function returns a single Tensor "
                           "with a single element.")  # fmt: skip
    total: list[Tensor] | None = None
    for i, (o, vv) in enumerate(zip(outs, vs, strict=True)):
        gs = _grads(o, xs, vv, create_graph, strict, i)
        total = list(gs) if total is None else [a + b for a, b in zip(total, gs, strict=True)]
    assert total is not None
    res = tuple(_keep(g, create_graph) for g in total)
    out_val = tuple(_keep(o, create_graph) for o in outs)
    return (out_val[0] if single_out else out_val), (res[0] if single else res)


def jvp(
    func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False
) -> tuple[Any, Any]:
    """``(func(inputs), J v)`` by the double-vjp trick (two reverse passes)."""
    xs, _ = _prep(inputs)
    vs = _tup(v) if v is not None else tuple(x.new_ones(x.shape) for x in xs)
    if v is None and any(x.numel() != 1 for x in xs):
        raise RuntimeError("The vector v can only be None if the input to the user-provided function is a single "
                           "Tensor with a single element.")  # fmt: skip
    outs, single_out = _outputs(func(*xs), "jvp")
    jvs = []
    for i, out in enumerate(outs):
        u = out.new_zeros(out.shape).requires_grad_(True)
        gs = grad([out], list(xs), [u], create_graph=True, allow_unused=True, retain_graph=True) if (
            out.requires_grad) else [None] * len(xs)  # fmt: skip
        total = None
        for j, (g, vv) in enumerate(zip(gs, vs, strict=True)):
            if g is None:
                if strict:
                    raise _strict_error(i, j)
                continue
            term = (g * vv).sum()
            total = term if total is None else total + term
        jv = None
        if total is not None and total.requires_grad:
            (jv,) = grad([total], [u], create_graph=create_graph, allow_unused=True)
        jvs.append(out.new_zeros(out.shape) if jv is None else _keep(jv, create_graph))
    out_val = tuple(_keep(o, create_graph) for o in outs)
    return (out_val[0] if single_out else out_val), (jvs[0] if single_out else tuple(jvs))


def jacobian_of(
    out: Tensor, xs: tuple[Tensor, ...], create_graph: bool, strict: bool = False, index: int = 0
) -> tuple[Tensor, ...]:
    """The Jacobian of ``out`` (already computed from ``xs``) for each of ``xs``, by rows: ``out.shape + x.shape``."""
    n = out.numel()
    rows: list[list[Tensor]] = [[] for _ in xs]
    used = [False] * len(xs)
    for i in range(n):
        e = out.new_zeros(n)
        e[i] = 1.0
        gs = grad([out], list(xs), [e.reshape(out.shape)], create_graph=create_graph, allow_unused=True,
                  retain_graph=True) if out.requires_grad else [None] * len(xs)  # fmt: skip
        for k, (g, x) in enumerate(zip(gs, xs, strict=True)):
            used[k] = used[k] or g is not None
            rows[k].append(x.new_zeros(x.shape) if g is None else g)
    if strict and n:
        for k, u in enumerate(used):
            if not u:
                raise _strict_error(index, k)
    return tuple(
        stack(r).reshape(out.shape + x.shape) if r else x.new_zeros(out.shape + x.shape)
        for r, x in zip(rows, xs, strict=True)
    )


def jacobian(
    func: Callable[..., Any],
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
) -> Any:
    """The Jacobian, of shape ``out.shape + in.shape`` for each (output, input) pair."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    xs, single = _prep(inputs)
    outs, single_out = _outputs(func(*xs), "jacobian")
    per_out = []
    for i, o in enumerate(outs):
        jac = tuple(_keep(j, create_graph) for j in jacobian_of(o, xs, create_graph, strict, i))
        per_out.append(jac[0] if single else jac)
    return per_out[0] if single_out else tuple(per_out)


def hessian(
    func: Callable[..., Tensor],
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
) -> Any:
    """The Hessian of a function returning a single-element Tensor (per pair of inputs for a tuple of them)."""
    xs, single = _prep(inputs)

    def grad_fn(*ys: Tensor) -> tuple[Tensor, ...]:
        out = func(*ys)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor with a single element")
        return _grads(out.reshape(()), ys, None, True, strict)

    res = jacobian(grad_fn, xs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)  # fmt: skip
    return res[0][0] if single else res


def hvp(
    func: Callable[..., Tensor], inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False
) -> tuple[Any, Any]:
    """``(func(inputs), H v)`` for a function returning a single-element Tensor (double backward; H is
    symmetric, so this is also ``vhp``)."""
    xs, single = _prep(inputs)
    if v is None and any(x.numel() != 1 for x in xs):
        raise RuntimeError("The vector v can only be None if the input to the user-provided function is a single "
                           "Tensor with a single element.")  # fmt: skip
    vs = _tup(v) if v is not None else tuple(x.new_ones(x.shape) for x in xs)
    out = func(*xs)
    if not isinstance(out, Tensor) or out.numel() != 1:
        raise RuntimeError("The Tensor returned by the function given to hvp should contain a single element")
    gs = _grads(out.reshape(()), xs, None, True, strict)
    total = None
    for g, vv in zip(gs, vs, strict=True):
        term = (g * vv).sum()
        total = term if total is None else total + term
    assert total is not None
    hv = _grads(total, xs, None, create_graph, strict)
    res = tuple(_keep(h, create_graph) for h in hv)
    return _keep(out, create_graph), (res[0] if single else res)


vhp = hvp

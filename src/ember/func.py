"""PyTorch's ``torch.func`` function transforms, built on Ember's tape: ``grad``, ``grad_and_value``, ``vjp``,
``jvp``, ``jacrev``/``jacfwd``, ``hessian``, ``vmap`` and ``functional_call``.

The transforms differentiate by running the function on the tape (``create_graph=True``, so they nest:
``grad(grad(f))``); a transform at the outermost level hands back results cut from the graph, as PyTorch's do.
Arguments may be tensors or dicts, lists and tuples of them (``grad(loss)(params)`` with ``params`` a dict).
``vmap`` maps by running the function once per batch entry and stacking the results: the same values as PyTorch's
batching rules, with the cost of a loop; random operations inside draw per entry (PyTorch's
``randomness="different"``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._C import TRANSFORMS
from ._pytree import tree_flatten
from ._tensor import Tensor
from .autograd import functional as _functional
from .autograd._engine import grad as _grad
from .autograd._grad_mode import enable_grad
from .ops import stack

__all__ = [
    "functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "linearize",
    "stack_module_state", "vjp", "vmap",
]  # fmt: skip


def _flatten(tree: Any) -> tuple[list[Any], Callable[[list[Any]], Any]]:
    """The leaves of a pytree (``ember.utils._pytree``), and a function rebuilding the tree from new leaves."""
    leaves, spec = tree_flatten(tree)
    return leaves, spec.unflatten


def _inside(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` counted as running inside a transform (``_C._are_functorch_transforms_active()``), as PyTorch's
    functorch levels are active while a transform runs its function."""

    def run(*args: Any, **kwargs: Any) -> Any:
        TRANSFORMS.depth += 1
        try:
            return func(*args, **kwargs)
        finally:
            TRANSFORMS.depth -= 1

    return run


def _leaf_grads(outs: list[Any], flat: list[Any], cotangents: Any, create_graph: bool) -> list[Any]:
    """The gradient of ``outs`` for each entry of ``flat``: zeros for a tensor they do not use, None for what is
    not a tensor."""
    found = iter(_grad(outs, [x for x in flat if isinstance(x, Tensor)], cotangents, retain_graph=True,
                       create_graph=create_graph, allow_unused=True))  # fmt: skip
    grads = []
    for x in flat:
        if isinstance(x, Tensor):
            g = next(found)
            grads.append(x.new_zeros(x.shape) if g is None else g)
        else:
            grads.append(None)
    return grads


def _argnums(argnums: int | tuple[int, ...], n: int) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums or any(not -n <= a < n for a in nums):
        raise ValueError(f"argnums {argnums!r} out of range for a function given {n} positional arguments")
    return tuple(a % n for a in nums)


def _track(leaves: list[Any]) -> tuple[list[Any], bool]:
    """The leaves ready to differentiate against, and whether any was already on an outer transform's tape."""
    outer = any(isinstance(x, Tensor) and x.requires_grad for x in leaves)
    tracked = [x if not isinstance(x, Tensor) or x.requires_grad else x.detach().requires_grad_() for x in leaves]
    return tracked, outer


def grad_and_value(
    func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """``func``'s gradient with respect to the arguments ``argnums`` (a tree like them), and its value."""

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums(argnums, len(args))
        given = list(args)
        rebuilds, flat, outer = [], [], False
        for a in nums:
            leaves, rebuild = _flatten(given[a])
            leaves, was = _track(leaves)
            outer = outer or was
            given[a] = rebuild(leaves)
            rebuilds.append((rebuild, len(leaves)))
            flat += leaves
        with enable_grad():
            result = _inside(func)(*given, **kwargs)
        out, aux = result if has_aux else (result, None)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError(f"grad: the function must return one number (a 1-element tensor), got {out!r:.80}")
        grads = _leaf_grads([out], flat, None, create_graph=True)
        if not outer:  # the outermost transform: plain results
            grads = [g.detach() if isinstance(g, Tensor) else g for g in grads]
            out = out.detach()
        trees, i = [], 0
        for rebuild, n in rebuilds:
            trees.append(rebuild(grads[i : i + n]))
            i += n
        g = trees[0] if isinstance(argnums, int) else tuple(trees)
        return (g, (out, aux)) if has_aux else (g, out)

    return wrapped


def grad(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """``func``'s gradient with respect to the arguments ``argnums`` (``func`` returns one number)."""
    both = grad_and_value(func, argnums, has_aux)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        g, rest = both(*args, **kwargs)
        return (g, rest[1]) if has_aux else g

    return wrapped


def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` gives the vector-Jacobian product for each primal."""
    flat, rebuild = _flatten(list(primals))
    tracked, outer = _track(flat)
    with enable_grad():
        result = _inside(func)(*rebuild(tracked))
    out, aux = result if has_aux else (result, None)
    outs, _ = _flatten(out)

    def vjp_fn(cotangents: Any) -> tuple[Any, ...]:
        gs = _leaf_grads(outs, tracked, _flatten(cotangents)[0], create_graph=outer)
        return tuple(rebuild(gs))

    shown = out if outer else _flatten(out)[1]([o.detach() for o in outs])
    return (shown, vjp_fn, aux) if has_aux else (shown, vjp_fn)


def jvp(
    func: Callable[..., Any], primals: Any, tangents: Any, *, strict: bool = False, has_aux: bool = False
) -> tuple[Any, ...]:
    """``(func(*primals), J @ tangents)`` (``has_aux``: ``func`` returns ``(output, aux)`` and aux comes third)."""
    if not has_aux:
        return _functional.jvp(_inside(func), tuple(primals), tuple(tangents), strict=strict)  # type: ignore[no-any-return]
    aux: list[Any] = []

    def main(*xs: Any) -> Any:
        out, a = _inside(func)(*xs)
        aux.append(a)
        return out

    out, jv = _functional.jvp(main, tuple(primals), tuple(tangents), strict=strict)
    return out, jv, _detach_tree(aux[0])


def linearize(func: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is ``J @ tangents`` at ``primals``."""
    out = _inside(func)(*primals)

    def jvp_fn(*tangents: Any) -> Any:
        return jvp(func, primals, tangents)[1]

    return out, jvp_fn


def stack_module_state(models: Any) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """The parameters and buffers of models of one class stacked along a new first dim, by name (for an ensemble
    run with ``vmap`` over ``functional_call``); stacked parameters are new leaves that require grad."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: expected at least one model, got 0")
    if len({m.training for m in models}) != 1:
        raise RuntimeError("stack_module_state: expected all models to be in the same training/eval mode")
    if len({type(m) for m in models}) != 1:
        raise RuntimeError("stack_module_state: expected all models to be of the same class")

    def stacked(ts: list[Tensor], name: str) -> Tensor:
        flags = {t.requires_grad for t in ts}
        if len(flags) != 1:
            raise RuntimeError(f"stack_module_state: expected {name} from each model to have the same .requires_grad")
        out = stack([t.detach() for t in ts])
        return out.requires_grad_() if flags.pop() else out

    ps = [dict(m.named_parameters()) for m in models]
    bs = [dict(m.named_buffers()) for m in models]
    return {k: stacked([p[k] for p in ps], k) for k in ps[0]}, {k: stacked([b[k] for b in bs], k) for k in bs[0]}


def jacrev(
    func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, *, has_aux: bool = False,
    chunk_size: int | None = None, _preallocate_and_copy: bool = False,
) -> Callable[..., Any]:  # fmt: skip
    """The Jacobian of ``func`` with respect to the arguments ``argnums`` (tensors): ``out.shape + in.shape``
    (``has_aux``: ``func`` returns ``(output, aux)`` and the result is ``(jacobian, aux)``; ``chunk_size`` is
    PyTorch's batching of the rows, which are computed one by one here)."""

    def wrapped(*args: Any) -> Any:
        nums = _argnums(argnums, len(args))
        tracked, outer = _track([args[a] for a in nums])
        full = list(args)
        for a, v in zip(nums, tracked, strict=True):
            full[a] = v
        with enable_grad():
            out = _inside(func)(*full)
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("jacrev(f, ...)(*args): output of function f should be a tuple: (output, aux) "
                                   "if has_aux is True")  # fmt: skip
            out, aux = out
        jac = list(_functional.jacobian_of(out, tuple(tracked), create_graph=True))  # (create_graph: they nest)
        if not outer:
            jac = [j.detach() for j in jac]
        res = jac[0] if isinstance(argnums, int) else tuple(jac)
        return (res, aux if outer else _detach_tree(aux)) if has_aux else res

    return wrapped


def jacfwd(
    func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *, randomness: str = "error"
) -> Callable[..., Any]:
    """The Jacobian, as ``jacrev`` (the same values, computed by rows in reverse; forward mode is
    ``ember.autograd.forward_ad``)."""
    return jacrev(func, argnums, has_aux=has_aux)


def _detach_tree(x: Any) -> Any:
    """``x`` with every tensor in it detached (lists, tuples and dicts kept)."""
    if isinstance(x, Tensor):
        return x.detach()
    if isinstance(x, (list, tuple)):
        return type(x)(_detach_tree(v) for v in x)
    if isinstance(x, dict):
        return {k: _detach_tree(v) for k, v in x.items()}
    return x


def hessian(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
    """The Hessian of ``func`` (one number) with respect to the argument ``argnums``."""
    return jacrev(jacrev(func, argnums), argnums)


def vmap(
    func: Callable[..., Any], in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
    chunk_size: int | None = None,
) -> Callable[..., Any]:  # fmt: skip
    """``func`` mapped over dim ``in_dims`` of its arguments (None: an argument not mapped; a tuple: one entry per
    argument), its results stacked along ``out_dims``."""

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        dims = in_dims if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
        if len(dims) != len(args):
            raise ValueError(f"vmap: in_dims has {len(dims)} entries for {len(args)} positional arguments")
        trees = [_flatten(a) for a in args]  # an argument may be a dict/list/tuple of tensors: each leaf is mapped
        sizes = {
            leaf.shape[d] for (leaves, _), d in zip(trees, dims, strict=True) if d is not None
            for leaf in leaves if isinstance(leaf, Tensor)
        }  # fmt: skip
        if len(sizes) != 1:
            raise ValueError(f"vmap: the mapped dims must have one size, got {sorted(sizes) or 'no mapped tensor'}")
        (n,) = sizes
        results = []
        for i in range(n):
            picked = [
                a if d is None else build([x.select(d, i) if isinstance(x, Tensor) else x for x in leaves])
                for a, (leaves, build), d in zip(args, trees, dims, strict=True)
            ]
            results.append(_inside(func)(*picked, **kwargs))
        leaves0, rebuild = _flatten(results[0])
        columns = [[_flatten(r)[0][k] for r in results] for k in range(len(leaves0))]
        outs = out_dims if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(columns)
        return rebuild([stack(col, d) for col, d in zip(columns, outs, strict=True)])

    return wrapped


def functional_call(
    module: Any, parameter_and_buffer_dicts: Any, args: Any = None, kwargs: dict[str, Any] | None = None, *,
    tie_weights: bool = True, strict: bool = False,
) -> Any:  # fmt: skip
    """Call ``module`` with some of its parameters and buffers replaced by the given tensors (by dotted name), for
    this call only; gradients flow to the given tensors."""
    given: dict[str, Any] = {}
    for d in (
        parameter_and_buffer_dicts
        if isinstance(parameter_and_buffer_dicts, (tuple, list))
        else [parameter_and_buffer_dicts]
    ):
        for k, v in d.items():
            if k in given:
                raise ValueError(f"functional_call: {k!r} appears in more than one of the dicts")
            given[k] = v
    names = {n for n, _ in module.named_parameters()} | {n for n, _ in module.named_buffers()}
    unknown = sorted(set(given) - names)
    if strict and (unknown or names - set(given)):
        raise RuntimeError(
            f"functional_call: strict: unexpected keys {unknown}, missing keys {sorted(names - set(given))}"
        )
    if unknown:
        raise ValueError(f"functional_call: {type(module).__name__} has no parameter or buffer {unknown}")
    places: dict[int, list[tuple[Any, str]]] = {}  # each parameter's places (a tied weight has several)
    for m in module.modules():
        for leaf, p in m._params.items():
            if p is not None:
                places.setdefault(id(p), []).append((m, leaf))
    saved = []
    for name, value in given.items():
        owner, _, leaf = name.rpartition(".")
        m = module.get_submodule(owner) if owner else module
        for pm, pleaf in places.get(id(m._params[leaf]), [(m, leaf)]) if tie_weights else [(m, leaf)]:
            saved.append((pm, pleaf, pm._params[pleaf]))
            pm._params[pleaf] = value  # (read through Module.__getattr__ as the parameter was)
    try:
        call_args = args if isinstance(args, tuple) else (() if args is None else (args,))
        return module(*call_args, **(kwargs or {}))
    finally:
        for m, leaf, old in reversed(saved):
            m._params[leaf] = old

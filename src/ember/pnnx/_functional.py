"""Converters for PNNX's stateless operators: ``F.x`` -> ``ember.nn.functional.x``, ``torch.x`` -> ``ember.x``,
``Tensor.x`` -> the method, and ``prim::*``.

The loader passes an input bound by ``$key=operand`` as that keyword, the line's parameters as keywords
and the other inputs positionally (``torch.cat``/``torch.stack`` receive them as one list). Ember's
functions keep PyTorch's names and arguments, so the rule (``_rule.py``) covers every operator Ember has;
``FUNCTION_EXCEPTIONS`` holds the few whose pnnx form means something else (static shapes holding the
traced batch, the fused ``Tensor.slice``, inference-only dropout and batch norm, list inputs).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .. import _creation, ops
from .._errors import ShapeError
from .._tensor import Tensor
from ..nn import functional as F
from ._rule import RuleTable, function_call, method_call

__all__ = ["FUNCTION_EXCEPTIONS", "FUNCTION_OPS", "BATCH_SHAPED", "CREATES", "LIST_INPUT"]

INT_MAX = 2147483647
INT_MIN = -2147483648


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, Tensor):
        return tuple(int(v) for v in shape.tolist())
    return (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)


def _batch_free(input: Tensor, shape: Any, traced_batch: int | None) -> tuple[int, ...]:
    """``shape`` with the traced batch size replaced by ``input``'s (pnnx writes static shapes)."""
    s = _shape(shape)
    if traced_batch is not None and s and s[0] == traced_batch and input.ndim and input.shape[0] != traced_batch:
        return (input.shape[0],) + s[1:]
    return s


def reshape(input: Tensor, shape: Any, *, traced_batch: int | None = None) -> Tensor:
    return ops.reshape(input, _batch_free(input, shape, traced_batch))


def view(input: Tensor, shape: Any = None, *, traced_batch: int | None = None, **kw: Any) -> Tensor:
    if shape is None:  # Tensor.view(dtype=...) is not a shape change
        raise ShapeError(f"Tensor.view: expected a shape, got {kw}")
    return ops.view(input, _batch_free(input, shape, traced_batch))


def expand(input: Tensor, sizes: Any, *, traced_batch: int | None = None) -> Tensor:
    return ops.expand(input, _batch_free(input, sizes, traced_batch))


def slice(
    input: Tensor,
    dim: int | None = None,
    start: Any = 0,
    end: Any = INT_MAX,
    step: Any = 1,
    *,
    dims: Any = None,
    starts: Any = None,
    ends: Any = None,
    steps: Any = None,
    selects: Any = None,
) -> Tensor:
    """``Tensor.slice``: ``x[..., start:end:step]`` on one dim, or the fused form over several ``dims``."""
    if dims is None:
        dims, starts, ends, steps, selects = [dim], [start], [end], [step], None
    n = len(dims)
    starts, ends, steps = (list(v) if v is not None else [d] * n for v, d in ((starts, 0), (ends, INT_MAX), (steps, 1)))
    selects = list(selects) if selects is not None else [INT_MAX] * n
    index: list[Any] = [builtins.slice(None)] * input.ndim
    for d, a, b, s, sel in zip(dims, starts, ends, steps, selects):
        d = int(d) % input.ndim
        if int(sel) != INT_MAX:
            index[d] = int(sel)
        else:
            stop = None if int(b) >= INT_MAX else int(b)
            first = None if int(a) <= INT_MIN else int(a)
            index[d] = builtins.slice(first, stop, int(s))
    return input[tuple(index)]


def dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Inference: dropout is the identity (PNNX graphs are exported in eval mode)."""
    return input


def batch_norm(input: Tensor, running_mean: Tensor, running_var: Tensor, weight: Tensor | None = None,
               bias: Tensor | None = None, training: bool = False, momentum: float = 0.1, eps: float = 1e-5
               ) -> Tensor:  # fmt: skip
    return F.batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    return F.interpolate(input, size, scale_factor, "nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    return F.interpolate(input, size, scale_factor, "bilinear", True)


def _adaptive(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``F.adaptive_*_pool*d``: pnnx writes PyTorch's ``None`` (keep that dim) in ``output_size`` as 0."""

    def call(input: Tensor, output_size: Any, *args: Any, **kw: Any) -> Any:
        if isinstance(output_size, (list, tuple)):
            output_size = tuple(None if s == 0 else s for s in output_size)
        return fn(input, output_size, *args, **kw)

    return call


def einsum(operands: Sequence[Tensor], equation: str) -> Tensor:
    return ops.einsum(equation, *operands)


def _dtype(dtype: Any) -> Any:
    return dtype.removeprefix("torch.") if isinstance(dtype, str) else dtype


def arange(start: Any = None, end: Any = None, step: Any = 1, dtype: Any = None, device: Any = None, **kw: Any
           ) -> Tensor:  # fmt: skip
    """``torch.arange`` (pnnx binds ``end`` alone for ``torch.arange(n)``); made on the model input's device."""
    if start is None:
        start, end = end, None
    return _creation.arange(start, end, step, dtype=_dtype(dtype), device=device)


def meshgrid(tensors: Sequence[Tensor], indexing: str = "ij") -> tuple[Tensor, ...]:
    """``torch.meshgrid`` as pnnx writes it: the tensors as one list."""
    return ops.meshgrid(*tensors, indexing=indexing)


def tuple_construct(*items: Any) -> tuple[Any, ...]:
    return items


def tuple_unpack(items: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(items)


#: Operators whose shape parameter holds the traced batch size (the loader makes it follow the input).
BATCH_SHAPED = frozenset({"Tensor.reshape", "Tensor.view", "torch.reshape", "Tensor.expand"})

#: Operators that create tensors: the loader passes the device of the model's first input.
CREATES = frozenset({"torch.arange"})

#: Operators whose un-keyed inputs form one list argument (``torch.cat((a, b), dim=1)``).
LIST_INPUT = frozenset({"torch.cat", "torch.concat", "torch.stack", "torch.einsum"})

#: Operator types whose pnnx form differs from the rule's call (everything else: ``_resolve``).
FUNCTION_EXCEPTIONS: dict[str, Callable[..., Any]] = {
    # static shapes holding the traced batch size; the fused slice
    "Tensor.reshape": reshape,
    "Tensor.view": view,
    "torch.reshape": reshape,
    "Tensor.expand": expand,
    "Tensor.slice": slice,
    # inference: dropout is the identity, batch norm uses the running statistics
    **{
        f"F.{name}": dropout
        for name in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")
    },
    "F.batch_norm": batch_norm,
    # adaptive pools: 0 in output_size means "keep that dim"
    **{
        f"F.adaptive_{kind}_pool{d}d": _adaptive(getattr(F, f"adaptive_{kind}_pool{d}d"))
        for kind in ("avg", "max")
        for d in (1, 2, 3)
    },
    # PyTorch's deprecated names (Ember's warn, as PyTorch's do; the file already chose them)
    "F.upsample_nearest": upsample_nearest,
    "F.upsample_bilinear": upsample_bilinear,
    # list inputs and argument orders of their own
    "torch.einsum": einsum,
    "torch.meshgrid": meshgrid,
    "aten::meshgrid": meshgrid,
    "torch.arange": arange,
    # TorchScript structure
    "prim::TupleConstruct": tuple_construct,
    "prim::ListConstruct": tuple_construct,
    "prim::TupleUnpack": tuple_unpack,
    "prim::ListUnpack": tuple_unpack,
}


def _resolve(op_type: str) -> Callable[..., Any] | None:
    if op_type.startswith("aten::"):  # a TorchScript op pnnx passes through: all arguments positional
        name = op_type[len("aten::") :]
        for candidate in (f"torch.{name}", f"F.{name}", f"Tensor.{name}"):
            found = _resolve(candidate)
            if found is not None:
                return found
        return None
    prefix, _, name = op_type.partition(".")
    if not name or name.startswith("_"):
        return None
    if prefix == "F":
        fn = getattr(F, name, None)
    elif prefix == "torch":
        import ember

        fn = getattr(ember, name, None)
        if isinstance(fn, type) or type(fn).__name__ == "module":
            return None
        if fn is None:  # ``torch.clone(x)`` is ``x.clone()``
            return _resolve(f"Tensor.{name}")
    elif prefix == "Tensor":
        unbound = getattr(Tensor, name, None)
        return method_call(name, unbound) if callable(unbound) else None
    else:
        return None
    return function_call(fn) if callable(fn) else None


def _enumerate() -> Iterator[str]:
    import ember

    yield from (f"F.{n}" for n in F.__all__)
    yield from (f"torch.{n}" for n in ember.ops.__all__)
    yield from (f"Tensor.{n}" for n in dir(Tensor) if not n.startswith("_"))
    yield from (f"aten::{n}" for n in ember.ops.__all__)


#: ``F.*`` / ``torch.*`` / ``Tensor.*`` / ``prim::*`` operator type -> function with PyTorch's argument names.
FUNCTION_OPS = RuleTable(FUNCTION_EXCEPTIONS, _resolve, _enumerate)

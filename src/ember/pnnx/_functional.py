"""Converters for PNNX's stateless operators: ``F.*``, ``torch.*``, ``Tensor.*`` and ``prim::*``.

Each entry is the function the operator names, with PyTorch's argument names: the loader passes an
input bound by ``$key=operand`` as that keyword, the line's parameters as keywords, and the other
inputs positionally (``torch.cat``/``torch.stack`` receive them as one list). Where Ember's function
already has PyTorch's signature the entry is that function; the rest are small adapters here.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

from .. import _creation, ops
from .._errors import ShapeError
from .._tensor import Tensor
from ..nn import functional as F

__all__ = ["FUNCTION_OPS", "BATCH_SHAPED", "CREATES", "LIST_INPUT"]

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


def _same(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """An activation whose ``inplace`` flag means nothing here."""

    def f(input: Tensor, *args: Any, inplace: bool = False, **kw: Any) -> Tensor:
        return fn(input, *args, **kw)

    f.__name__ = fn.__name__
    return f


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


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    return ops.cat(list(tensors), dim)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    return ops.stack(list(tensors), dim)


def permute(input: Tensor, dims: Any) -> Tensor:
    return ops.permute(input, *dims)


def repeat(input: Tensor, sizes: Any) -> Tensor:
    return ops.repeat(input, *_shape(sizes))


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, beta: float = 1, alpha: float = 1) -> Tensor:
    return ops.addmm(input, mat1, mat2, beta=beta, alpha=alpha)


def einsum(operands: Sequence[Tensor], equation: str) -> Tensor:
    return ops.einsum(equation, *operands)


def mean(input: Tensor, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    return ops.mean(input, dim, keepdim)


def sum(input: Tensor, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    return ops.sum(input, dim, keepdim)


def softmax(input: Tensor, dim: int = -1, dtype: Any = None, _stacklevel: int = 3) -> Tensor:
    return F.softmax(input, dim)


def log_softmax(input: Tensor, dim: int = -1, dtype: Any = None, _stacklevel: int = 3) -> Tensor:
    return F.log_softmax(input, dim)


def contiguous(input: Tensor, memory_format: Any = None) -> Tensor:
    return input.contiguous()


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

#: ``F.*`` / ``torch.*`` / ``Tensor.*`` / ``prim::*`` operator type -> function with PyTorch's argument names.
FUNCTION_OPS: dict[str, Callable[..., Any]] = {
    # activations
    "F.relu": _same(F.relu),
    "F.relu6": _same(F.relu6),
    "F.silu": F.silu,
    "F.sigmoid": F.sigmoid,
    "F.tanh": F.tanh,
    "F.gelu": F.gelu,
    "F.mish": F.mish,
    "F.hardswish": F.hardswish,
    "F.hardsigmoid": F.hardsigmoid,
    "F.leaky_relu": F.leaky_relu,
    "F.elu": F.elu,
    "F.selu": _same(F.selu),
    "F.celu": _same(F.celu),
    "F.softplus": F.softplus,
    "F.hardtanh": _same(F.hardtanh),
    "F.logsigmoid": F.logsigmoid,
    "F.prelu": F.prelu,
    "F.softmax": softmax,
    "F.log_softmax": log_softmax,
    "torch.sigmoid": ops.sigmoid,
    "torch.tanh": ops.tanh,
    "torch.relu": ops.relu,
    # layers in functional form (ONNX-sourced graphs)
    "F.linear": F.linear,
    "F.conv1d": F.conv1d,
    "F.conv2d": F.conv2d,
    "F.conv_transpose2d": F.conv_transpose2d,
    "F.batch_norm": batch_norm,
    "F.layer_norm": F.layer_norm,
    "F.group_norm": F.group_norm,
    "F.instance_norm": F.instance_norm,
    "F.normalize": F.normalize,
    "F.dropout": dropout,
    "F.dropout2d": dropout,
    "F.max_pool1d": F.max_pool1d,
    "F.max_pool2d": F.max_pool2d,
    "F.avg_pool1d": F.avg_pool1d,
    "F.avg_pool2d": F.avg_pool2d,
    "F.adaptive_avg_pool1d": F.adaptive_avg_pool1d,
    "F.adaptive_avg_pool2d": F.adaptive_avg_pool2d,
    "F.adaptive_max_pool2d": F.adaptive_max_pool2d,
    "F.interpolate": F.interpolate,
    "F.upsample": F.interpolate,
    "F.upsample_nearest": upsample_nearest,
    "F.upsample_bilinear": upsample_bilinear,
    "F.pad": F.pad,
    "F.pixel_shuffle": F.pixel_shuffle,
    "F.pixel_unshuffle": F.pixel_unshuffle,
    "F.embedding": F.embedding,
    "F.scaled_dot_product_attention": F.scaled_dot_product_attention,
    # tensor functions
    "torch.cat": cat,
    "torch.concat": cat,
    "torch.stack": stack,
    "torch.flatten": ops.flatten,
    "torch.split": ops.split,
    "torch.chunk": ops.chunk,
    "torch.unbind": ops.unbind,
    "torch.matmul": ops.matmul,
    "torch.bmm": ops.bmm,
    "torch.mm": ops.mm,
    "torch.addmm": addmm,
    "torch.einsum": einsum,
    "torch.permute": permute,
    "torch.transpose": ops.transpose,
    "torch.reshape": reshape,
    "torch.squeeze": ops.squeeze,
    "torch.unsqueeze": ops.unsqueeze,
    "torch.mean": mean,
    "torch.sum": sum,
    "torch.amax": ops.amax,
    "torch.amin": ops.amin,
    "torch.max": ops.max,
    "torch.min": ops.min,
    "torch.argmax": ops.argmax,
    "torch.clamp": ops.clamp,
    "torch.where": ops.where,
    "torch.roll": ops.roll,
    "torch.flip": ops.flip,
    "torch.arange": arange,
    "torch.meshgrid": meshgrid,
    "aten::meshgrid": meshgrid,
    # tensor methods
    "Tensor.reshape": reshape,
    "Tensor.view": view,
    "Tensor.expand": expand,
    "Tensor.permute": permute,
    "Tensor.repeat": repeat,
    "Tensor.slice": slice,
    "Tensor.select": ops.select,
    "Tensor.contiguous": contiguous,
    "Tensor.expand_as": ops.expand_as,
    "Tensor.masked_fill": ops.masked_fill,
    # TorchScript structure
    "prim::TupleConstruct": tuple_construct,
    "prim::ListConstruct": tuple_construct,
    "prim::TupleUnpack": tuple_unpack,
    "prim::ListUnpack": tuple_unpack,
}

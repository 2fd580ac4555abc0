"""Differentiable collectives (torch.distributed.nn.functional's names): gradients flow back across ranks.

``all_reduce(x)`` returns a new tensor holding the sum over ranks; its backward all-reduces the incoming
gradient, because every rank's output depends on every rank's input. Every rank must run the backward pass
through it (the same collectives in the same order). SyncBatchNorm builds on it.
"""

from __future__ import annotations

from typing import Any

from ..._tensor import Tensor
from ...autograd._capture import collective
from ...autograd._function import Function
from .._group import DistUsageError, ReduceOp, backend_error, reduce_op, require, torch_reduce_op
from .._interop import borrow

__all__ = ["all_reduce"]


def _reduce_into(t: Tensor, op: ReduceOp, group: Any) -> Tensor:
    _reduce_in_place(t, op, group)
    return t


@collective
def _reduce_in_place(t: Tensor, op: ReduceOp, group: Any) -> None:
    """The all-reduce (a host step of a step ``ember.compile`` captured: replayed as this call)."""
    tdist = require("all_reduce")
    b = borrow(t, "all_reduce", writable=True)
    try:
        tdist.all_reduce(b.torch, op=torch_reduce_op(op), group=group)
    except RuntimeError as e:
        raise backend_error("all_reduce (differentiable)", group, e) from e
    b.written()


class _AllReduce(Function):
    @staticmethod
    def forward(ctx: Any, x: Tensor, op: ReduceOp, group: Any) -> Tensor:
        ctx.op, ctx.group = op, group
        return _reduce_into(x.clone(), op, group)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None, None]:
        return _reduce_into(grad.detach().clone(), ctx.op, ctx.group), None, None


def all_reduce(tensor: Tensor, op: Any = ReduceOp.SUM, group: Any = None) -> Tensor:
    """The reduction over ranks of ``tensor`` as a new tensor (SUM or AVG), differentiable."""
    rop = reduce_op(op, "all_reduce")
    if rop not in (ReduceOp.SUM, ReduceOp.AVG):
        raise DistUsageError(f"all_reduce (differentiable): op must be SUM or AVG, got {rop!r}")
    if not isinstance(tensor, Tensor):
        raise TypeError(f"all_reduce: expected an ember.Tensor, got {type(tensor).__name__}")
    return _AllReduce.apply(tensor, rop, group)  # type: ignore[no-any-return]

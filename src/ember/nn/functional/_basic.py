"""Neural-network functions (PyTorch's ``torch.nn.functional`` names)."""

from __future__ import annotations

import sys
import warnings
from typing import Any

from ..._errors import DTypeError, OutOfRangeError, ShapeError, ValueRangeError
from ..._tensor import Tensor
from ...autograd._autocast import autocast_op
from ...autograd._function import Op
from ...autograd._grad_mode import is_grad_enabled
from ...backends._kernels_loss import REDUCTIONS
from ...ops import register_method
from ...ops._indexing import where
from ...ops._pointwise_unary import exp
from ...ops._reduction import mean
from ...ops._reduction import sum as _sum
from ...ops._util import broadcast_shapes, norm_dim

__all__ = ["softmax", "softmin", "log_softmax", "gumbel_softmax", "nll_loss", "cross_entropy", "linear_cross_entropy",
           "mse_loss"]  # fmt: skip


class LogSoftmax(Op):
    """Stable log-softmax: ``x - max - log(sum(exp(x - max)))``; backward ``g - softmax * sum(g)``. Both are
    backend kernels (``log_softmax``/``log_softmax_backward``; torch: its fused ``_log_softmax`` pair)."""

    saves_inputs = False
    saves_output = True

    def forward(self, x: Any, dim: int) -> Any:
        self.dim = dim
        y = self.backend.log_softmax(x, dim)
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> tuple[Tensor, None]:
        y = self.output()
        return g - exp(y) * _sum(g, self.dim, keepdim=True), None

    def backward_arrays(self, g: Any) -> tuple[Any, None]:
        return self.backend.log_softmax_backward(g, self.out_array(), self.dim), None


class Softmax(Op):
    saves_inputs = False
    saves_output = True

    def forward(self, x: Any, dim: int) -> Any:
        xp = self.backend.xp
        self.dim = dim
        m = (xp.max(x, axis=dim, keepdims=True) if 0 not in x.shape else 0) if x.ndim else x
        e = xp.exp(x - m)
        y = e / _sum_along(xp, e, dim)
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> tuple[Tensor, None]:
        y = self.output()
        gy = g * y
        return gy - y * _sum(gy, self.dim, keepdim=True), None

    def backward_arrays(self, g: Any) -> tuple[Any, None]:
        y = self.out_array()
        gy = g * y
        return gy - y * _sum_along(self.backend.xp, gy, self.dim), None


def _sum_along(xp: Any, a: Any, dim: int) -> Any:
    """The sum along ``dim`` (kept); a 0-d array is its own sum (CuPy refuses axis 0 of a 0-d array)."""
    return xp.sum(a, axis=dim, keepdims=True) if a.ndim else a


def _float_input(x: Tensor, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    return x if x.dtype.kind == "f" else x.float()


def legacy_dim(name: str, dim: int | None, ndim: int) -> int:
    """PyTorch's implicit dim when none was given (deprecated there, with the same warning): 0 for 0-, 1- and
    3-d inputs, else 1."""
    if dim is not None:
        return dim
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", UserWarning, stacklevel=3)  # fmt: skip
    return 0 if ndim in (0, 1, 3) else 1


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """``log(softmax(input))`` along ``dim``, finite for large |input|. No ``dim``: PyTorch's deprecated implicit
    choice, with its warning."""
    x = _float_input(input if dtype is None else input.to(dtype), "log_softmax")
    return LogSoftmax.apply(x, norm_dim(legacy_dim("log_softmax", dim, x.ndim), x.ndim, "log_softmax"))


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """Normalised exponentials along ``dim`` (no ``dim``: PyTorch's deprecated implicit choice)."""
    x = _float_input(input if dtype is None else input.to(dtype), "softmax")
    return Softmax.apply(x, norm_dim(legacy_dim("softmax", dim, x.ndim), x.ndim, "softmax"))


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """``softmax(-input)`` along ``dim`` (no ``dim``: PyTorch's deprecated implicit choice)."""
    x = _float_input(input if dtype is None else input.to(dtype), "softmin")
    return Softmax.apply(-x, norm_dim(legacy_dim("softmin", dim, x.ndim), x.ndim, "softmin"))


class NLLLoss(Op):
    """PyTorch's ``nll_loss`` as one node over the backend's kernel pair (``nll_loss``/``nll_loss_backward``, on
    torch its own ``aten`` pair): log-probabilities (M, C), int64 targets (M,), class weights (C,) or None, the
    ignored index and the reduction all inside the kernels. The gradient is linear in the loss's gradient
    (``NLLLossGrad``); only ``logp``'s shape and dtype are read back."""

    saves_inputs = False

    def forward(self, logp: Any, target: Any, weight: Any, reduction: str, ignore_index: int) -> Any:
        out, total = self.backend.nll_loss(logp, target, weight, reduction, ignore_index)
        self.saved = (logp, target, weight, reduction, ignore_index, total)
        return out

    def backward(self, g: Tensor) -> tuple[Tensor, None, None, None, None]:
        return NLLLossGrad.apply(g, self), None, None, None, None

    def backward_arrays(self, g: Any) -> tuple[Any, None, None, None, None]:
        logp, target, weight, reduction, ignore_index, total = self.saved
        gx = self.backend.nll_loss_backward(g, logp, target, weight, reduction, ignore_index, total)
        return gx, None, None, None, None


class NLLLossGrad(Op):
    """``NLLLoss``'s gradient as an operator of the loss's gradient ``g`` (for ``create_graph``): linear in ``g``,
    so its own gradient is the same loss of the incoming gradient (PyTorch's double backward of ``nll_loss``)."""

    saves_inputs = False

    def forward(self, g: Any, node: NLLLoss) -> Any:
        self.node = node
        logp, target, weight, reduction, ignore_index, total = node.saved
        return self.backend.nll_loss_backward(g, logp, target, weight, reduction, ignore_index, total)

    def backward(self, h: Tensor) -> tuple[Tensor, None]:
        _, target, weight, reduction, ignore_index, _ = self.node.saved
        return NLLLoss.apply(h, target, weight, reduction, ignore_index), None


def legacy_reduction(size_average: Any, reduce: Any, reduction: str) -> str:
    """PyTorch's deprecated ``size_average``/``reduce`` pair as a ``reduction`` (``reduction`` when both are None)."""
    if size_average is None and reduce is None:
        return reduction
    level: int = 1  # the warning names the first caller outside Ember (wrappers vary)
    frame: Any = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("ember."):
        level, frame = level + 1, frame.f_back
    warnings.warn("size_average and reduce args will be deprecated, please use reduction instead.", UserWarning,
                  stacklevel=level + 1)  # fmt: skip
    if reduce is False:
        return "none"
    return "sum" if size_average is False else "mean"


def _reduce(loss: Tensor, reduction: str, op: str, weight_sum: Tensor | None = None) -> Tensor:
    if reduction == "none":
        return loss
    if reduction == "sum":
        return _sum(loss)
    if reduction == "mean":
        return _sum(loss) / weight_sum if weight_sum is not None else mean(loss)
    raise ValueRangeError(f"{op}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")


def _class_target(op: str, input: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """``input`` as (M, C) and ``target`` as (M,), after checking their shapes agree as PyTorch's do."""
    if input.ndim < 1:
        raise ShapeError(f"{op}: input must have a class dimension, got a 0-d tensor")
    if target.dtype.is_floating_point:
        raise DTypeError(f"{op}: target must hold class indices (int64), got {target.dtype}")
    want = () if input.ndim == 1 else (input.shape[0],) + tuple(input.shape[2:])
    if tuple(target.shape) != want:
        raise ShapeError(
            f"{op}: target of shape {tuple(target.shape)} does not match input of shape {tuple(input.shape)} "
            f"(expected a target of shape {want} holding class indices; a multi-target (N, 1) is not supported)"
        )
    if input.ndim == 2:
        return input, target
    c = input.shape[1] if input.ndim > 1 else input.shape[0]
    if input.ndim > 2:  # (N, C, d1, ...) -> (N*d1*..., C)
        input = input.movedim(1, -1)
    return input.reshape(-1, c), target.reshape(-1)


@autocast_op("nll_loss")
def nll_loss(
    input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None, ignore_index: int = -100,
    reduce: Any = None, reduction: str = "mean",
) -> Tensor:  # fmt: skip
    """Negative log-likelihood of class indices ``target`` under log-probabilities ``input`` (N, C, ...)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if reduction not in REDUCTIONS:
        raise ValueRangeError(f"nll_loss: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
    tshape = tuple(target.shape)
    given = target._data  # (its known range: a reshape of a non-contiguous target below is a copy, unknown)
    input, target = _class_target("nll_loss", input, target)
    c = input.shape[1]
    be = target._backend
    xp = be.xp
    tgt = target._data
    if be.host_checks and not be.nll_kernel_checks_targets:  # (CuPy's kernels would not report a bad target)
        _check_targets(xp, tgt, c, ignore_index)
    elif not be.host_checks:  # the range, when the host knows it without a sync (targets uploaded from host data)
        r = be.known_range(given) if tgt.shape[0] else None
        for v in r or ():
            if v != ignore_index and not 0 <= v < c:
                raise OutOfRangeError(f"nll_loss: target {v} is out of range for {c} classes")
    if tgt.dtype != xp.int64:
        target = Tensor._make(xp.astype(tgt, xp.int64), be)
    if weight is not None:
        _check_weight(weight, input, c)
    try:
        loss = NLLLoss.apply(input, target, weight, reduction, ignore_index)
    except IndexError:
        if be.host_checks and be.nll_kernel_checks_targets:  # the kernel's own check (torch on the CPU): worded
            _check_targets(xp, tgt, c, ignore_index)
        raise
    return loss.reshape(tshape) if reduction == "none" and tuple(loss.shape) != tshape else loss


def _check_targets(xp: Any, tgt: Any, c: int, ignore_index: int) -> None:
    """Raise ``OutOfRangeError`` naming the first target outside ``[0, c)`` that is not ``ignore_index``."""
    # one bool read back, not the targets' range: ember.compile guards on what is read (a range would recapture)
    bad = (tgt != ignore_index) & ((tgt < 0) | (tgt >= c))
    if bool(xp.any(bad)):
        pos = int(xp.argmax(bad))
        raise OutOfRangeError(f"nll_loss: target {int(tgt[pos])} at position {pos} is out of range for {c} classes")


def _check_weight(weight: Tensor, input: Tensor, c: int) -> None:
    """Class weights as PyTorch's kernels take them: (C,), the input's dtype, not requiring a gradient."""
    if not isinstance(weight, Tensor):
        raise TypeError(f"nll_loss: weight must be a Tensor, got {type(weight).__name__}")
    if tuple(weight.shape) != (c,):
        raise ShapeError(
            f"nll_loss: weight should be defined either for all {c} classes or no classes, got a weight of shape "
            f"{tuple(weight.shape)}"
        )
    if weight.dtype != input.dtype:
        raise DTypeError(f"nll_loss: weight of dtype {weight.dtype} does not match input of dtype {input.dtype}")
    if weight.requires_grad and is_grad_enabled():
        raise ValueRangeError(
            "nll_loss: not differentiable with respect to weight; pass weight.detach() (as PyTorch, which refuses "
            "a weight that requires grad)"
        )


@autocast_op("cross_entropy")
def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: Any = None,
    ignore_index: int = -100,
    reduce: Any = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross entropy of logits ``input`` (N, C, ...) with class indices or class probabilities."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    cdim = 1 if input.ndim > 1 else 0
    c = input.shape[cdim] if input.ndim else 0
    logp = log_softmax(input, cdim)
    wshape = (c,) + (1,) * (input.ndim - 2)
    if target.dtype.is_floating_point:  # class probabilities
        if tuple(target.shape) != tuple(input.shape):
            raise ShapeError(
                f"cross_entropy: class-probability target of shape {tuple(target.shape)} does not match input "
                f"of shape {tuple(input.shape)}"
            )
        if label_smoothing:
            target = target * (1 - label_smoothing) + label_smoothing / c
        lw = logp * weight.reshape(wshape) if weight is not None else logp
        loss = -_sum(lw * target, cdim)
        return _reduce(loss, reduction, "cross_entropy")
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if not label_smoothing:
        return nll
    # PyTorch's rule: the smoothing term -sum_c w_c log p_c is zero at ignored targets and, for 'mean',
    # divided by the same total weight as the nll term
    smooth = -_sum(logp * weight.reshape(wshape) if weight is not None else logp, cdim)
    keep = target != ignore_index
    smooth = where(keep, smooth, 0.0)  # (selected out, not multiplied by 0: see nll_loss)
    if reduction == "mean":
        if weight is not None:
            total = _sum(where(keep, weight[where(keep, target, 0)], 0.0))
        else:
            total = _sum(keep.to(smooth.dtype))
        smooth = _sum(smooth) / total
    else:
        smooth = _reduce(smooth, reduction, "cross_entropy")
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / c)


def _check_target_shape(op: str, input: Tensor, target: Tensor) -> None:
    """Shapes that broadcast but differ give PyTorch's warning (a likely mistake); others a ShapeError."""
    if input.shape == target.shape:
        return

    broadcast_shapes(input.shape, target.shape, op=op)
    warnings.warn(f"{op}: using a target size {tuple(target.shape)} that is different to the input size "
                  f"{tuple(input.shape)}. This will likely lead to incorrect results due to broadcasting. "
                  "Please ensure they have the same size.", UserWarning, stacklevel=3)  # fmt: skip


def _broadcast_pair(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """Both expanded to their common shape first, as PyTorch's mse/l1/smooth_l1 losses do (so a 0-d target
    promotes like a dimensioned one: float32 input with a float64 0-d target computes in float64)."""
    if input.shape == target.shape:
        return input, target
    from ...ops._indexing_view import expand
    from ...ops._util import broadcast_shapes

    shape = broadcast_shapes(input.shape, target.shape)
    return tuple(t if t.shape == shape else expand(t, *shape) for t in (input, target))  # type: ignore[return-value]


def _reduce_weighted(
    loss: Tensor, weight: Tensor | None, reduction: str, op: str, shape: Any, weighted_mean: bool = True
) -> Tensor:
    """A pointwise loss scaled by ``weight`` (of the input's ``shape``), whose 'mean' divides by the weights' sum
    (PyTorch's mse/l1 ``weight``), or by the element count where ``weighted_mean`` is False (its huber's)."""
    if weight is None:
        return _reduce(loss, reduction, op)
    if tuple(weight.shape) != tuple(shape):
        raise ShapeError(f"{op}: weight of shape {tuple(weight.shape)} must have the input's shape {tuple(shape)}")
    loss = loss * weight
    return _reduce(loss, reduction, op, _sum(weight) if reduction == "mean" and weighted_mean else None)


@autocast_op("mse_loss")
def mse_loss(
    input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:  # fmt: skip
    """Mean squared error; ``weight`` (the input's shape) scales each term, and 'mean' divides by its sum."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_target_shape("mse_loss", input, target)
    shape = input.shape
    input, target = _broadcast_pair(input, target)
    d = input - target
    return _reduce_weighted(d * d, weight, reduction, "mse_loss", shape)


register_method("softmax", softmax)
register_method("log_softmax", log_softmax)


def linear_cross_entropy(
    input: Tensor, linear_weight: Tensor, target: Tensor, *, linear_bias: Tensor | None = None,
    weight: Tensor | None = None, reduction: str = "mean", ignore_index: int | None = None,
    label_smoothing: float = 0.0, options: Any = None,
) -> Tensor:  # fmt: skip
    """``cross_entropy(linear(input, linear_weight, linear_bias), target)``; ``linear_weight`` is (C, in) or
    (C, d_1, ..., d_K, in) for a K-dimensional loss. ``options`` (PyTorch's chunking strategy) is accepted:
    chunking changes memory use, not the result."""
    *classes, fan_in = linear_weight.shape
    if linear_bias is not None and tuple(linear_bias.shape) != tuple(classes):
        raise ShapeError(f"linear_cross_entropy: expected linear_bias shape {tuple(classes)}, got "
                         f"{tuple(linear_bias.shape)}")  # fmt: skip
    if len(classes) > 1 and input.ndim < 2:
        raise ShapeError(f"linear_cross_entropy: a K-dimensional loss (linear_weight {tuple(linear_weight.shape)}) "
                         f"needs a batched input (N, {fan_in}), got shape {tuple(input.shape)}")  # fmt: skip
    if ignore_index is not None and target.dtype.is_floating_point:
        raise ValueRangeError("linear_cross_entropy: ignore_index cannot be given when target holds probabilities")
    logits = input @ linear_weight.reshape(-1, fan_in).T
    logits = logits.reshape(*input.shape[:-1], *classes)
    if linear_bias is not None:
        logits = logits + linear_bias
    if len(classes) > 1 and input.ndim > 1:  # (N, C, d_1, ...) as cross_entropy takes it
        logits = logits.movedim(input.ndim - 1, 1)
    return cross_entropy(logits, target, weight, ignore_index=-100 if ignore_index is None else ignore_index,
                         reduction=reduction, label_smoothing=label_smoothing)  # fmt: skip


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """A sample from the Gumbel-softmax (Concrete) distribution: ``softmax((logits + g) / tau)`` with Gumbel noise g;
    ``hard`` returns one-hot samples whose gradient is the soft sample's (straight-through)."""
    from ..._creation import rand

    u = rand(*logits.shape, dtype=logits.dtype, device=logits.device)
    gumbels = -(-(u.clamp(min=1e-20)).log()).log()
    y = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y
    index = y.argmax(dim, keepdim=True)
    one_hot = (y * 0).detach().scatter(dim, index, 1.0)
    return one_hot - y.detach() + y

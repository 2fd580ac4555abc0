"""Normalisation: batch, layer, group, instance and RMS norm, and ``normalize``.

One fused operator, ``Standardize``, computes ``(x - mean) / sqrt(var + eps)`` over some dims with the
closed-form backward; the norms add their affine part with ordinary tensor operations.
"""

from __future__ import annotations

import math
from typing import Any

from ..._dtype import DType, bfloat16, float16, float32
from ..._errors import DTypeError, ShapeError
from ..._tensor import Tensor
from ...autograd._autocast import autocast_op
from ...autograd._function import Op
from ...autograd._grad_mode import STATE, no_grad
from ...ops._indexing_join import stack
from ...ops._other_shape import pad
from ...ops._pointwise_unary import sqrt
from ...ops._reduction import mean
from ...ops._reduction import sum as _sum
from ...ops._util import _float
from ._empty import on_one_sample

__all__ = ["batch_norm", "group_norm", "instance_norm", "layer_norm", "local_response_norm", "normalize", "rms_norm"]


class Standardize(Op):
    """``xhat = (x - mean) * rstd`` over ``axes`` (biased variance); backward in closed form."""

    saves_output = True

    def forward(self, x: Any, axes: tuple[int, ...], eps: float, stats: tuple[Any, Any]) -> Any:
        m, var = stats  # computed once by the caller, who also needs them for running statistics
        xc = x - m
        rstd = 1.0 / self.backend.xp.sqrt(var + eps)
        self.axes, self.rstd = axes, rstd
        y = xc * rstd
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> tuple[Tensor, None, None, None]:
        a = self.axes
        if STATE.enabled:  # create_graph: the statistics depend on x too, so rebuild them as a graph
            x, _, eps, _ = self.inputs  # type: ignore[misc]
            y, rstd = _standardize_graph(x, a, eps)
        else:
            y = self.output()
            rstd = Tensor._make(self.rstd, self.backend)
        return _standardize_grad(g, y, rstd, a), None, None, None


def _standardize_graph(x: Tensor, axes: tuple[int, ...], eps: float) -> tuple[Tensor, Tensor]:
    """``(xhat, rstd)`` over ``axes`` as a graph of ``x`` (for ``create_graph``)."""
    xc = x - mean(x, axes, keepdim=True)
    rstd = (mean(xc * xc, axes, keepdim=True) + eps).rsqrt()
    return xc * rstd, rstd


def _standardize_grad(g: Tensor, xhat: Tensor, rstd: Tensor, axes: tuple[int, ...]) -> Tensor:
    """The gradient of ``xhat = (x - mean) * rstd`` for the gradient ``g`` of ``xhat``."""
    return (g - mean(g, axes, keepdim=True) - xhat * mean(g * xhat, axes, keepdim=True)) * rstd


class BatchNormEval(Op):
    """Batch norm with fixed statistics (``running_mean``/``running_var``, which get no gradient): one
    backend kernel forward (``batch_norm_eval``); backward in closed form from the inputs."""

    bf16_follows_input = True  # (float32 parameters with a bfloat16 input: the output bfloat16)

    def forward(self, x: Any, mean: Any, var: Any, weight: Any, bias: Any, eps: float) -> Any:
        return self.backend.batch_norm_eval(x, mean, var, weight, bias, eps)

    def backward(self, g: Tensor) -> tuple[Tensor | None, ...]:
        x, mean, var, weight, bias, eps = self.inputs  # type: ignore[misc]
        shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        axes = (0,) + tuple(range(2, x.ndim))
        rstd = (var.detach() + eps).rsqrt().reshape(shape)
        x_dtype = x.dtype
        if var.dtype is not x_dtype:  # mixed precision: the gradients in float32, each returned in its input's dtype
            g, x = g.to(var.dtype), x.to(var.dtype)
        need = self.needs_input_grad
        gx = gw = gb = None
        if need[0]:
            gx = (g * (rstd if weight is None else rstd * weight.reshape(shape))).to(x_dtype)
        if weight is not None and need[3]:
            gw = _sum(g * ((x - mean.detach().reshape(shape)) * rstd), axes)
        if bias is not None and need[4]:
            gb = _sum(g, axes)
        return gx, None, None, gw, gb, None


class BatchNormTrain(Op):
    """Batch norm over the batch statistics as one node: statistics, normalisation and the affine part in
    one backend kernel (``batch_norm_train``), the closed-form gradients of all three inputs in another.
    ``running`` (running mean and variance arrays of the input's dtype, and the momentum) is updated by the
    kernel; else ``stats`` (a list) receives the batch mean and biased variance for the running statistics."""

    bf16_follows_input = True  # (float32 parameters with a bfloat16 input: the output bfloat16)

    def value_needed(self, i: int) -> bool:  # x and weight (as PyTorch saves them); the bias never
        return i < 2

    @staticmethod
    def tangent_args(args: tuple[Any, ...]) -> tuple[Any, ...]:
        """The arguments for forward AD's second run: no running statistics to update, a fresh ``stats``."""
        return (*args[:4], None, [])

    def forward(self, x: Any, weight: Any, bias: Any, eps: float, running: Any, stats: list[Any]) -> Any:
        y, mean, var, self.saved = self.backend.batch_norm_train(x, weight, bias, eps, running)
        stats += (mean, var)
        return y

    def backward_arrays(self, g: Any) -> tuple[Any, ...]:
        w = self.inputs[1]  # type: ignore[index]
        gx, gw, gb = self.backend.batch_norm_train_backward(
            g, self.saved, None if w is None else w._data, self._req(0), self._req(1), self._req(2)
        )
        return gx, gw, gb, None, None, None

    def backward(self, g: Tensor) -> tuple[Any, ...]:
        if not STATE.enabled:  # anomaly mode, first order: the kernels
            out = self.backward_arrays(g._data)
            return tuple(None if a is None else Tensor._make(a, self.backend) for a in out)
        # create_graph: the same closed form as a graph of x, weight and g
        x0, w, b, eps, _, _ = self.inputs  # type: ignore[misc]
        p = w if w is not None else b
        x = x0 if p is None or p.dtype is x0.dtype else x0.to(p.dtype)  # mixed precision: in float32
        g = g.to(x.dtype)
        axes = (0, *range(2, x.ndim))
        xhat, rstd = _standardize_graph(x, axes, eps)
        gx = None
        if self._req(0):
            gxhat = g if w is None else g * w.reshape((1, x.shape[1]) + (1,) * (x.ndim - 2))
            gx = _standardize_grad(gxhat, xhat, rstd, axes).to(x0.dtype)
        gw = _sum(g * xhat, axes) if self._req(1) else None
        gb = _sum(g, axes) if self._req(2) else None
        return gx, gw, gb, None, None, None


def _kernel_dtype(x: Tensor, *ts: Tensor | None) -> DType | None:
    """The dtype that the per-channel tensors ``ts`` (those given) must share for the batch-norm kernels to take
    them with ``x``: ``x``'s own, or float32 for a float16/bfloat16 ``x`` (PyTorch's mixed precision, as under
    autocast: float32 statistics and affine parameters, normalised in float32, the output in ``x``'s dtype);
    None when they do not."""
    given = [t.dtype for t in ts if isinstance(t, Tensor)]
    if all(d is x.dtype for d in given):
        return x.dtype
    if x.dtype in (float16, bfloat16) and all(d is float32 for d in given):
        return float32
    return None


def _check_params(op: str, x: Tensor, *ts: Tensor | None) -> bool:
    """PyTorch's rule for a norm's parameters and statistics (``_kernel_dtype``), or a DTypeError naming them;
    True when they are float32 beside a float16/bfloat16 input (computed in float32, the result in its dtype)."""
    kd = _kernel_dtype(x, *ts)
    if kd is None:
        got = ", ".join(str(t.dtype) for t in ts if t is not None)
        raise DTypeError(
            f"{op}: expected the parameters and statistics ({got}) to have the input's dtype {x.dtype} "
            "(or all float32 beside a float16/bfloat16 input)"
        )
    return kd is not x.dtype


def _stats_in_kernel(x: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor,
                     running_var: Tensor) -> bool:  # fmt: skip
    """Whether the batch-norm kernel can update the running statistics itself: plain arrays on the input's backend,
    without gradient (their dtype was checked by ``_check_params``)."""
    be = x._backend
    return all(t._backend is be and not t.requires_grad and be.is_plain(t._data) for t in (running_mean, running_var))


def _fused_train(x: Tensor, weight: Tensor | None, bias: Tensor | None) -> bool:
    """Whether training-mode batch norm can run as one node: weight and bias None or tensors (their dtype was
    checked by ``_check_params``)."""
    return all(t is None or isinstance(t, Tensor) for t in (weight, bias))


def _standardize(x: Tensor, axes: tuple[int, ...], eps: float) -> tuple[Tensor, Any, Any]:
    """``xhat`` over ``axes``, with the batch mean and biased variance arrays (for running statistics)."""
    if math.prod(x.shape[a] for a in axes) == 0:  # nothing to normalise over: NaN statistics, as PyTorch's
        xp = x._backend.xp
        m = xp.sum(x._data, axis=axes, keepdims=True) / 0.0  # (NumPy's mean would warn "Mean of empty slice")
        v = m
    else:
        m = x._data.mean(axis=axes, keepdims=True)
        d = x._data - m
        v = (d * d).mean(axis=axes, keepdims=True)
    return Standardize.apply(x, axes, float(eps), (m, v)), m, v


def _affine(y: Tensor, weight: Any, bias: Any, shape: tuple[int, ...]) -> Tensor:
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def _fused_eval(x: Tensor, *ts: Tensor | None) -> bool:
    """Whether evaluation-mode batch norm can run as one kernel: statistics without gradient, weight and bias None
    or tensors (their dtypes were checked by ``_check_params``)."""
    return all(t is None or not t.requires_grad for t in ts[:2]) and all(t is None or isinstance(t, Tensor) for t in ts)


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each channel (dim 1) over the batch and spatial dims.

    Training uses the batch statistics and updates ``running_mean``/``running_var`` in place
    (``running = (1 - momentum) * running + momentum * batch``, unbiased variance); evaluation uses the
    running statistics.
    """
    if input.ndim < 2:
        raise ShapeError(f"batch_norm: expected an input of shape (N, C, ...), got {tuple(input.shape)}")
    x = _float(input)
    c = x.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight), ("bias", bias)):
        if t is not None and t.shape != (c,):
            raise ShapeError(
                f"batch_norm: {name} has shape {tuple(t.shape)}, expected ({c},) for input {tuple(input.shape)}"
            )
    mixed = _check_params("batch_norm", x, running_mean, running_var, weight, bias)
    shape = (1, c) + (1,) * (x.ndim - 2)
    axes = (0,) + tuple(range(2, x.ndim))
    if training or running_mean is None or running_var is None:
        n = x.numel() // c
        if training and n == 1:
            raise ShapeError(
                f"batch_norm: expected more than 1 value per channel when training, got input {tuple(input.shape)}"
            )
        if n == 0:  # no values at all: an empty result (the running statistics stay), as PyTorch
            return x * 1.0
        fused = _fused_train(x, weight, bias)
        update = (running_mean, running_var) if training and running_mean is not None and running_var is not None \
            else None  # fmt: skip
        if fused:
            stats: list[Any] = []
            in_kernel = update is not None and _stats_in_kernel(x, weight, bias, *update)
            running = (update[0]._data, update[1]._data, float(momentum)) if in_kernel and update else None
            y = BatchNormTrain.apply(x, weight, bias, float(eps), running, stats)
            if running is not None and update is not None:
                for t in update:
                    t._vc[0] += 1  # written in place by the kernel
                return y
            m, v = stats
        else:
            y, m, v = _standardize(x, axes, eps)
        if training and running_mean is not None and running_var is not None:
            be = x._backend
            with no_grad():
                bm = Tensor._make(m.reshape(c), be).to(running_mean.dtype)
                bv = Tensor._make(v.reshape(c) * (n / max(n - 1, 1)), be).to(running_var.dtype)
                running_mean.mul_(1 - momentum).add_(bm * momentum)
                running_var.mul_(1 - momentum).add_(bv * momentum)
        if fused:
            return y
    elif _fused_eval(x, running_mean, running_var, weight, bias):
        return BatchNormEval.apply(x, running_mean, running_var, weight, bias, float(eps))
    else:  # statistics that need a gradient, or mixed dtypes: ordinary tensor operations
        rm = running_mean.to(x.dtype).reshape(shape)
        rv = running_var.to(x.dtype).reshape(shape)
        y = (x - rm) / sqrt(rv + eps)
    y = _affine(y, weight, bias, shape)
    return y.to(x.dtype) if mixed else y  # (the unfused paths compute in float32 beside float32 parameters)


@autocast_op("layer_norm")
def layer_norm(
    input: Tensor, normalized_shape: Any, weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-5
) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` dims."""
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(ns)
    if not k:
        raise ShapeError("layer_norm: Expected normalized_shape to be at least 1-dimensional, got ()")
    if tuple(input.shape[input.ndim - k :]) != ns or k > input.ndim:
        raise ShapeError(f"layer_norm: normalized_shape {ns} does not match the trailing dims of {tuple(input.shape)}")
    x = _float(input)
    if _check_params("layer_norm", x, weight, bias):  # PyTorch's mixed kernel: in float32, the input's dtype out
        return layer_norm(x.to(float32), ns, weight, bias, eps).to(x.dtype)
    if _fused_layer_norm(x, ns, weight, bias):
        return NativeLayerNorm.apply(x, weight, bias, ns, float(eps))
    y, _, _ = _standardize(x, tuple(range(x.ndim - k, x.ndim)), eps)
    return _affine(y, weight, bias, ns)


class NativeLayerNorm(Op):
    """Layer norm with its affine part as one node (PyTorch's ``native_layer_norm``): one backend kernel forward
    (``layer_norm``), one for the three gradients; it keeps the input and one mean and rstd per row."""

    bf16_follows_input = True  # (float32 parameters with a bfloat16 input: the output bfloat16)

    def value_needed(self, i: int) -> bool:  # x and weight; the bias never
        return i < 2

    def forward(self, x: Any, weight: Any, bias: Any, ns: tuple[int, ...], eps: float) -> Any:
        y, self.saved = self.backend.layer_norm(x, ns, weight, bias, eps)
        return y

    def backward_arrays(self, g: Any) -> tuple[Any, ...]:
        x, w, _, ns, _ = self.inputs  # type: ignore[misc]
        need = (self._req(0), self._req(1), self._req(2))
        gx, gw, gb = self.backend.layer_norm_backward(g, x._data, ns, self.saved, None if w is None else w._data, need)
        return gx, gw, gb, None, None

    def backward(self, g: Tensor) -> tuple[Any, ...]:
        if not STATE.enabled:  # anomaly mode, first order: the kernels
            out = self.backward_arrays(g._data)
            return tuple(None if a is None else Tensor._make(a, self.backend) for a in out)
        x, w, _, ns, eps = self.inputs  # type: ignore[misc]  # create_graph: the closed form as a graph
        axes = tuple(range(x.ndim - len(ns), x.ndim))
        lead = tuple(range(x.ndim - len(ns)))
        xhat, rstd = _standardize_graph(x, axes, eps)
        gx = _standardize_grad(g if w is None else g * w, xhat, rstd, axes) if self._req(0) else None
        gw = _sum(g * xhat, lead) if self._req(1) else None
        gb = _sum(g, lead) if self._req(2) else None
        return gx, gw, gb, None, None


def _fused_layer_norm(x: Tensor, ns: tuple[int, ...], weight: Any, bias: Any) -> bool:
    """Whether layer norm runs as one node: weight and bias None or of shape ``ns`` and the input's dtype."""
    if 0 in ns or not x.dtype.is_floating_point:
        return False
    return all(
        t is None or (isinstance(t, Tensor) and t.dtype is x.dtype and tuple(t.shape) == ns) for t in (weight, bias)
    )


@autocast_op("group_norm")
def group_norm(
    input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-5
) -> Tensor:
    """Normalise groups of channels over (channels in group, spatial dims)."""
    if input.ndim < 2:
        raise ShapeError(f"group_norm: expected an input (N, C, ...), got shape {tuple(input.shape)}")
    n, c = input.shape[:2]
    if c % num_groups:
        raise ShapeError(f"group_norm: {c} channels are not divisible into {num_groups} groups")
    if n == 0:  # an empty batch
        return on_one_sample(lambda x: group_norm(x, num_groups, weight, bias, eps), input)  # type: ignore[no-any-return]
    x = _float(input)
    if _check_params("group_norm", x, weight, bias):
        return group_norm(x.to(float32), num_groups, weight, bias, eps).to(x.dtype)
    xg = x.reshape(n, num_groups, -1)
    y, _, _ = _standardize(xg, (2,), eps)
    return _affine(y.reshape(x.shape), weight, bias, (1, c) + (1,) * (x.ndim - 2))


def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each (sample, channel) over its spatial dims."""
    if input.ndim < 3:
        raise ShapeError(f"instance_norm: expected (N, C, ...) with spatial dims, got {tuple(input.shape)}")
    x = _float(input)
    if _check_params("instance_norm", x, running_mean, running_var, weight, bias):
        y32 = instance_norm(x.to(float32), running_mean, running_var, weight, bias, use_input_stats, momentum, eps)
        return y32.to(x.dtype)
    c = x.shape[1]
    shape = (1, c) + (1,) * (x.ndim - 2)
    if not use_input_stats and running_mean is not None and running_var is not None:
        y = (x - running_mean.reshape(shape)) / sqrt(running_var.reshape(shape) + eps)
        return _affine(y, weight, bias, shape)
    y, m, v = _standardize(x, tuple(range(2, x.ndim)), eps)
    if running_mean is not None and running_var is not None:
        k = x.numel() // (x.shape[0] * c)
        be = x._backend
        with no_grad():
            bm = Tensor._make(m.reshape(x.shape[0], c).mean(0), be)
            bv = Tensor._make((v * (k / max(k - 1, 1))).reshape(x.shape[0], c).mean(0), be)
            running_mean.mul_(1 - momentum).add_(bm * momentum)
            running_var.mul_(1 - momentum).add_(bv * momentum)
    return _affine(y, weight, bias, shape)


def rms_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """``x / sqrt(mean(x^2) + eps)`` over the trailing dims, times ``weight``."""
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(ns)
    if not k:
        raise ShapeError("rms_norm: Expected normalized_shape to be at least 1-dimensional, got ()")
    if tuple(input.shape[input.ndim - k :]) != ns:
        raise ShapeError(f"rms_norm: normalized_shape {ns} does not match the trailing dims of {tuple(input.shape)}")
    x = _float(input)
    if weight is not None and tuple(weight.shape) != ns:
        raise ShapeError(f"rms_norm: weight of shape {tuple(weight.shape)} must have normalized_shape {ns}")
    if x.dtype in (float16, bfloat16):  # as PyTorch 2.13's kernel: in float32 (its eps too), the result rounded once
        return rms_norm(x.float(), ns, None if weight is None else weight.float(), eps).to(x.dtype)
    if eps is None:
        eps = float(x._backend.finfo(x._data.dtype).eps)  # a host constant: no sync
    y = x * (mean(x * x, tuple(range(x.ndim - k, x.ndim)), keepdim=True) + eps).rsqrt()
    if weight is None:
        return y
    y = y * weight
    return y if y.dtype is x.dtype else y.to(x.dtype)  # the input's dtype, whatever the weight's (PyTorch)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``x / max(||x||_p, eps)`` along ``dim``."""
    x = _float(input)
    return x / x.norm(p, dim, keepdim=True).clamp(min=eps)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """Normalise each channel by the sum of squares of its ``size`` neighbouring channels."""
    if input.ndim >= 3 and input.shape[0] == 0:  # an empty batch
        return on_one_sample(lambda t: local_response_norm(t, size, alpha, beta, k), input)
    x = _float(input)
    sq = (x * x).unsqueeze(1)  # (N, 1, C, ...)
    sq = pad(sq.reshape(sq.shape[0], 1, sq.shape[2], -1), (0, 0, size // 2, (size - 1) // 2))
    win = _sum(_channel_windows(sq, size), -1)
    div = (win.reshape(x.shape) * (alpha / size) + k) ** beta
    return x / div


def _channel_windows(sq: Tensor, size: int) -> Tensor:
    c = sq.shape[2] - size + 1
    return stack([sq[:, 0, i : i + c] for i in range(size)], -1)

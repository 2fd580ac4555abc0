"""Convolutions and im2col (unfold/fold): argument checking and the operators' forward/backward wiring.

Three operators share the window arithmetic: ``Conv`` (cross-correlation), ``ConvT`` (its adjoint in the
input: the transposed convolution) and ``ConvW`` (its adjoint in the weight). Each one's backward is
written with the other two, so gradients of every order exist; the first-order backward of ``Conv`` asks
the backend for both gradients at once (``conv_backward``), and its rule on Tensors computes them with that kernel
too (the same bits). The array kernels live in the backend layer
(``Backend.conv``, ``conv_transpose``, ``conv_weight``, ``conv_backward``, ``unfold``, ``fold``).
"""

from __future__ import annotations

import math
import operator
from typing import Any

from ..._errors import DTypeError, ShapeError, ValueRangeError
from ..._tensor import Tensor
from ...autograd._autocast import ACTIVE as AUTOCAST
from ...autograd._autocast import autocast_inputs
from ...autograd._function import Op
from ...autograd._grad_mode import STATE
from ...ops._pointwise_complex import cj
from ...ops._util import _float, same_dtype
from ._empty import on_one_sample

__all__ = [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "fold", "unfold",
]  # fmt: skip

Pads = tuple[tuple[int, int], ...]


def _tuple(v: Any, n: int, name: str, op: str) -> tuple[int, ...]:
    """``v`` as ``n`` ints: paddings >= 0, everything else (kernel size, stride, dilation, sizes) >= 1.

    One int, or a one-element tuple (PyTorch expands it too), stands for all ``n``.
    """
    low = 0 if "padding" in name else 1
    if v.__class__ is int:  # the usual cases first (a layer's stride, padding ...): ~2 µs a call less
        if v >= low:
            return (v,) * n
    elif v.__class__ is tuple and len(v) == n:
        for a in v:
            if a.__class__ is not int or a < low:  # (not a bool either: its class is bool)
                break
        else:
            return v  # type: ignore[no-any-return]
    items = [v] * n if hasattr(v, "__index__") else list(v) if isinstance(v, (tuple, list)) else None
    if items is not None and len(items) == 1:
        items = items * n
    if items is None or len(items) != n or not all(hasattr(a, "__index__") and not isinstance(a, bool) for a in items):
        raise ShapeError(f"{op}: {name} must be an int or {n} ints, got {v!r}")
    t = tuple(operator.index(a) for a in items)
    if any(a < low for a in t):
        raise ValueRangeError(f"{op}: {name} must be >= {low}, got {v!r}")
    return t


def _out_size(n: int, k: int, s: int, lo: int, hi: int, d: int) -> int:
    return (n + lo + hi - d * (k - 1) - 1) // s + 1


class Conv(Op):
    """Cross-correlation plus an optional bias; ``cfg = (stride, pads, dilation, groups, x_shape, w_shape)``."""

    def forward(self, x: Any, w: Any, b: Any, cfg: tuple[Any, ...], save: bool = False) -> Any:
        s, pads, d, groups = cfg[:4]
        self.cfg = cfg
        y, self.saved = self.backend.conv(x, w, s, pads, d, groups, save, b)
        return y

    def _bias_axes(self) -> tuple[int, ...]:
        return (0, *range(2, len(self.cfg[4])))

    def backward(self, g: Tensor) -> tuple[Any, Any, Any, None, None]:
        x, w = self.inputs[:2]  # type: ignore[index]
        saved, self.saved = self.saved, None
        # complex (PyTorch's convention): each input's gradient uses the other input's conjugate
        gx = ConvT.apply(g, cj(w), self.cfg, True) if self._req(0) else None
        cx = cj(x)  # (the saved columns are x's own: a conjugated x is read afresh)
        gw = ConvW.apply(cx, g, self.cfg, saved if cx is x else None, True) if self._req(1) else None
        gb = g.sum(self._bias_axes()) if self._req(2) else None
        return gx, gw, gb, None, None

    def backward_arrays(self, g: Any) -> tuple[Any, Any, Any, None, None]:
        x, w = self.inputs[:2]  # type: ignore[index]
        saved, self.saved = self.saved, None
        s, pads, d, groups = self.cfg[:4]
        gx, gw = self.backend.conv_backward(g, x._data, w._data, saved, s, pads, d, groups, self._req(0), self._req(1))
        gb = self.backend.conv_bias_grad(g) if self._req(2) else None
        return gx, gw, gb, None, None


class ConvT(Op):
    """``y -> J_x^T y`` for Conv: maps (N, O, *out) to (N, C, *x_spatial) (the transposed convolution)."""

    def forward(self, y: Any, w: Any, cfg: tuple[Any, ...], of_conv: bool = False) -> Any:
        """``of_conv``: ``Conv``'s input gradient (its rule on Tensors), by its array rule's kernel (``_real``)."""
        s, pads, d, groups, x_shape, _ = cfg
        self.cfg = cfg
        be = self.backend
        if of_conv and _real(be, y, w):
            x = be.xp.zeros(x_shape, dtype=y.dtype)  # (only its shape and dtype are read)
            return be.conv_backward(y, x, w, None, s, pads, d, groups, True, False)[0]
        return be.conv_transpose(y, w, s, pads, d, groups, x_shape)

    def backward(self, gg: Tensor) -> tuple[Any, Any, None, None]:
        y, w = self.inputs[:2]  # type: ignore[index]
        gy = Conv.apply(gg, cj(w), None, self.cfg) if self._req(0) else None
        gw = ConvW.apply(gg, cj(y), self.cfg) if self._req(1) else None
        return gy, gw, None, None

    def backward_arrays(self, gg: Any) -> tuple[Any, Any, None, None]:
        y, w = self.inputs[:2]  # type: ignore[index]
        s, pads, d, groups, _, w_shape = self.cfg
        be = self.backend
        gy = be.conv(gg, w._data, s, pads, d, groups)[0] if self._req(0) else None
        gw = be.conv_weight(gg, y._data, s, pads, d, groups, w_shape) if self._req(1) else None
        return gy, gw, None, None


class ConvW(Op):
    """``(x, g) -> J_w^T g`` for Conv: the weight gradient."""

    def forward(self, x: Any, g: Any, cfg: tuple[Any, ...], saved: Any = None, of_conv: bool = False) -> Any:
        """``of_conv``: ``Conv``'s weight gradient (its rule on Tensors), by its array rule's kernel (``_real``)."""
        s, pads, d, groups, _, w_shape = cfg
        self.cfg = cfg
        be = self.backend
        if of_conv and _real(be, x, g):
            w = be.xp.zeros(w_shape, dtype=x.dtype)  # (only its shape and dtype are read)
            return be.conv_backward(g, x, w, saved, s, pads, d, groups, False, True)[1]
        return be.conv_weight(x, g, s, pads, d, groups, w_shape, saved)

    def backward(self, gw: Tensor) -> tuple[Any, Any, None, None, None]:
        x, g = self.inputs[:2]  # type: ignore[index]
        gx = ConvT.apply(g, gw, self.cfg) if self._req(0) else None
        gg = Conv.apply(x, gw, None, self.cfg) if self._req(1) else None
        return gx, gg, None, None, None


def _real(be: Any, a: Any, b: Any) -> bool:
    """Whether ``Conv``'s rule on Tensors computes its gradients by ``conv_backward``, the kernel its array rule
    calls (real arrays; complex ones go through ``conv_transpose``/``conv_weight``, which take them): then a gradient
    taken with ``create_graph`` or through saved-tensor hooks is the plain one bit for bit, as in PyTorch (whose
    every convolution gradient is ``convolution_backward``'s). On CUDA cuDNN's transposed convolution rounded the
    last bit of an input gradient otherwise (H200, float64); NumPy's ``conv_weight`` sums in another order than
    ``conv_backward`` for some strides and paddings."""
    return a.dtype in be.float_dtypes and b.dtype in be.float_dtypes


def _conv_pads(padding: Any, k: tuple[int, ...], d: tuple[int, ...], s: tuple[int, ...], op: str) -> Pads:
    sp = len(k)
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * sp
        if padding == "same":
            if any(v != 1 for v in s):
                raise ValueRangeError(f"{op}: padding='same' is not supported for strided convolutions (stride {s})")
            total = [d[i] * (k[i] - 1) for i in range(sp)]
            return tuple((t // 2, t - t // 2) for t in total)
        raise ValueRangeError(f"{op}: padding must be 'same', 'valid' or int(s), got {padding!r}")
    p = _tuple(padding, sp, "padding", op)
    return tuple((v, v) for v in p)


def _exact_integers(op: str, x: Tensor, int64_only: bool) -> bool:
    """Whether ``x`` is convolved in its integer dtype (exact, wrapping as PyTorch's CPU kernels: any integer dtype
    for conv, int64 only for a dilated conv and conv_transpose); those PyTorch has no kernel for (bool) refused."""
    if x.dtype.kind not in "biu":
        return False
    if x.dtype.kind == "b" or (int64_only and x.dtype.name != "int64"):
        raise DTypeError(f"{op}: not implemented for {x.dtype} inputs (PyTorch has no such kernel)")
    return True


def _conv(
    input: Tensor, weight: Tensor, bias: Any, stride: Any, padding: Any, dilation: Any, groups: int, sp: int, op: str
) -> Tensor:
    if AUTOCAST[0]:
        input, weight, bias = autocast_inputs("conv", input, weight, bias)
    if input.ndim != sp + 2:
        if input.ndim == sp + 1:  # unbatched input
            return _conv(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups, sp, op).squeeze(0)
        raise ShapeError(f"{op}: expected a ({sp + 2})-d input (N, C, ...), got shape {tuple(input.shape)}")
    if weight.ndim != sp + 2:
        raise ShapeError(f"{op}: expected a ({sp + 2})-d weight (out, in/groups, ...), got shape {tuple(weight.shape)}")
    xs, ws = input.shape, weight.shape  # (each ``.shape`` makes a new tuple: read once)
    if 0 in xs[2:]:
        raise ShapeError(f"{op}: input of shape {tuple(input.shape)} has an empty spatial dim (only an empty batch "
                         "is allowed)")  # fmt: skip
    if xs[0] == 0:  # an empty batch
        return on_one_sample(lambda x: _conv(x, weight, bias, stride, padding, dilation, groups, sp, op), input)  # type: ignore[no-any-return]
    c = xs[1]
    o, cg = ws[:2]
    if groups < 1 or c % groups or o % groups:
        raise ShapeError(f"{op}: groups={groups} must divide in_channels {c} and out_channels {o}")
    if cg * groups != c:
        raise ShapeError(
            f"{op}: input has {c} channels but weight {tuple(weight.shape)} expects {cg * groups} (groups={groups})"
        )
    k = tuple(ws[2:])
    s = _tuple(stride, sp, "stride", op)
    d = _tuple(dilation, sp, "dilation", op)
    pads = _conv_pads(padding, k, d, s, op)
    for i in range(sp):
        if _out_size(xs[2 + i], k[i], s[i], *pads[i], d[i]) < 1:
            raise ShapeError(f"{op}: kernel {k} (dilation {d}) is larger than the padded input {tuple(input.shape)}")
    if bias is not None and (not isinstance(bias, Tensor) or bias.shape != (o,)):
        got = tuple(bias.shape) if isinstance(bias, Tensor) else repr(bias)
        raise ShapeError(f"{op}: bias must be a tensor of shape ({o},), got {got}")
    same_dtype(op, "input, weight and bias", input, weight, bias)
    x = input if _exact_integers(op, input, any(v != 1 for v in d)) else _float(input)
    w = weight.to(x.dtype) if weight.dtype is not x.dtype else weight
    if bias is not None and bias.dtype is not x.dtype:
        bias = bias.to(x.dtype)
    cfg = (s, pads, d, groups, xs, ws)  # (x, w: ``input``, ``weight`` or their casts, of the same shapes)
    save = STATE.enabled and w.requires_grad  # keep the im2col columns for the weight gradient
    return Conv.apply(x, w, bias, cfg, save)


def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """1-d cross-correlation over (N, C, L) with weight (O, C/groups, K)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """2-d cross-correlation over (N, C, H, W) with weight (O, C/groups, kH, kW); padding may be 'same'/'valid'."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(
    input: Tensor,
    weight: Tensor,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """3-d cross-correlation over (N, C, D, H, W)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def _conv_transpose(
    input: Tensor,
    weight: Tensor,
    bias: Any,
    stride: Any,
    padding: Any,
    output_padding: Any,
    groups: int,
    dilation: Any,
    sp: int,
    op: str,
) -> Tensor:
    if AUTOCAST[0]:
        input, weight, bias = autocast_inputs("conv_transpose", input, weight, bias)
    if input.ndim == sp + 1:
        return _conv_transpose(
            input.unsqueeze(0), weight, bias, stride, padding, output_padding, groups, dilation, sp, op
        ).squeeze(0)
    if input.ndim != sp + 2 or weight.ndim != sp + 2:
        raise ShapeError(
            f"{op}: expected ({sp + 2})-d input and weight, got {tuple(input.shape)} and {tuple(weight.shape)}"
        )
    if 0 in input.shape[2:]:
        raise ShapeError(f"{op}: input of shape {tuple(input.shape)} has an empty spatial dim (only an empty batch "
                         "is allowed)")  # fmt: skip
    if input.shape[0] == 0:  # an empty batch
        return on_one_sample(  # type: ignore[no-any-return]
            lambda x: _conv_transpose(x, weight, bias, stride, padding, output_padding, groups, dilation, sp, op), input
        )
    cin, cg = weight.shape[:2]
    if input.shape[1] != cin or cin % groups:
        raise ShapeError(f"{op}: input has {input.shape[1]} channels, weight {tuple(weight.shape)} expects {cin}")
    k = tuple(weight.shape[2:])
    s = _tuple(stride, sp, "stride", op)
    d = _tuple(dilation, sp, "dilation", op)
    p = _tuple(padding, sp, "padding", op)
    op_ = _tuple(output_padding, sp, "output_padding", op)
    for i in range(sp):
        if op_[i] >= max(s[i], d[i]):
            raise ShapeError(f"{op}: output_padding {op_} must be smaller than stride {s} or dilation {d}")
    size = tuple((input.shape[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op_[i] + 1 for i in range(sp))
    if any(v < 1 for v in size):
        raise ShapeError(f"{op}: the output size {size} would be empty")
    same_dtype(op, "input, weight and bias", input, weight, bias)
    x = input if _exact_integers(op, input, True) else _float(input)
    w = weight.to(x.dtype) if weight.dtype is not x.dtype else weight
    # The adjoint of a convolution from ``size`` back to the input's size. An output_padding of a stride or
    # more (allowed when the dilation is larger) adds whole strides the convolution would read: that
    # convolution's high padding drops by those q positions, and what padding cannot absorb (q > p) is
    # out of the kernel's reach, so zeros appended after.
    q = tuple(s[i] * (op_[i] // s[i]) for i in range(sp))
    tail = tuple(max(q[i] - p[i], 0) for i in range(sp))
    pads = tuple((p[i], max(p[i] - q[i], 0)) for i in range(sp))
    x_shape = (input.shape[0], cg * groups) + tuple(size[i] - tail[i] for i in range(sp))
    cfg = (s, pads, d, groups, x_shape, tuple(w.shape))
    y: Tensor = ConvT.apply(x, w, cfg)
    if any(tail):
        from ...ops._other_shape import pad

        y = pad(y, tuple(v for t in reversed(tail) for v in (0, t)))
    if bias is not None:
        y = y + bias.reshape((cg * groups,) + (1,) * sp)
    return y


def conv_transpose1d(
    input: Tensor,
    weight: Tensor,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    """Transposed 1-d convolution; weight (C_in, C_out/groups, K)."""
    return _conv_transpose(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 1, "conv_transpose1d"
    )


def conv_transpose2d(
    input: Tensor,
    weight: Tensor,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    """Transposed 2-d convolution (the gradient of conv2d in its input); weight (C_in, C_out/groups, kH, kW)."""
    return _conv_transpose(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 2, "conv_transpose2d"
    )


def conv_transpose3d(
    input: Tensor,
    weight: Tensor,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    """Transposed 3-d convolution; weight (C_in, C_out/groups, kD, kH, kW)."""
    return _conv_transpose(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 3, "conv_transpose3d"
    )


# -- im2col ---------------------------------------------------------------------------------------
class Unfold(Op):
    """(N, C, *spatial) -> (N, C * prod(k), L): every window as a column."""

    saves_inputs = False

    def forward(self, x: Any, k: Any, s: Any, pads: Any, d: Any) -> Any:
        self.args = (x.shape, k, s, pads, d)
        return self.backend.unfold(x, k, s, pads, d)

    def backward(self, g: Tensor) -> tuple[Any, ...]:
        shape, k, s, pads, d = self.args
        return Fold.apply(g, shape, k, s, pads, d), None, None, None, None


class Fold(Op):
    """(N, C * prod(k), L) -> (N, C, *spatial): sum the columns back into place (col2im)."""

    saves_inputs = False

    def forward(self, cols: Any, shape: Any, k: Any, s: Any, pads: Any, d: Any) -> Any:
        self.args = (k, s, pads, d)
        return self.backend.fold(cols, tuple(shape), k, s, pads, d)

    def backward(self, g: Tensor) -> tuple[Any, ...]:
        return (Unfold.apply(g, *self.args),) + (None,) * 5


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Tensor:
    """Extract sliding local blocks: (N, C, H, W) -> (N, C * kH * kW, L)."""
    if input.ndim != 4:
        raise ShapeError(f"unfold: expected a 4-d input (N, C, H, W), got shape {tuple(input.shape)}")
    if 0 in input.shape[1:]:
        raise ShapeError(f"unfold: input of shape {tuple(input.shape)} has an empty channel or spatial dim")
    if input.shape[0] == 0:  # an empty batch
        return on_one_sample(lambda x: unfold(x, kernel_size, dilation, padding, stride), input)  # type: ignore[no-any-return]
    k = _tuple(kernel_size, 2, "kernel_size", "unfold")
    d = _tuple(dilation, 2, "dilation", "unfold")
    p = _tuple(padding, 2, "padding", "unfold")
    s = _tuple(stride, 2, "stride", "unfold")
    pads = tuple((v, v) for v in p)
    if any(_out_size(input.shape[2 + i], k[i], s[i], *pads[i], d[i]) < 1 for i in range(2)):
        raise ShapeError(f"unfold: kernel {k} does not fit the padded input {tuple(input.shape)}")
    return Unfold.apply(input, k, s, pads, d)


def fold(
    input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1
) -> Tensor:
    """Combine sliding local blocks (N, C * kH * kW, L) into (N, C, *output_size), summing overlaps."""
    size = _tuple(output_size, 2, "output_size", "fold")
    k = _tuple(kernel_size, 2, "kernel_size", "fold")
    d = _tuple(dilation, 2, "dilation", "fold")
    p = _tuple(padding, 2, "padding", "fold")
    s = _tuple(stride, 2, "stride", "fold")
    pads = tuple((v, v) for v in p)
    out = tuple(_out_size(size[i], k[i], s[i], *pads[i], d[i]) for i in range(2))
    if input.ndim != 3 or input.shape[1] % math.prod(k) or input.shape[2] != math.prod(out):
        raise ShapeError(
            f"fold: input {tuple(input.shape)} must be (N, C * {math.prod(k)}, {math.prod(out)}) for output {size}, "
            f"kernel {k}"
        )
    if input.shape[0] == 0:  # an empty batch
        return on_one_sample(lambda x: fold(x, output_size, kernel_size, dilation, padding, stride), input)  # type: ignore[no-any-return]
    c = input.shape[1] // math.prod(k)
    return Fold.apply(input, (input.shape[0], c) + size, k, s, pads, d)

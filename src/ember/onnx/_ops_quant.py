"""ONNX linear quantization (``QuantizeLinear``, ``DequantizeLinear``, ``QLinear*``, ``*Integer``) as Ember ops.

Quantized values are Ember integer tensors (uint8, int8, int16, int32); arithmetic runs in float64 (exact
for these ranges) and rounds half to even, as ONNX specifies. Types Ember lacks (float8, int4, uint16...)
are refused with the type's name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import _dtype as dt
from .. import ops
from .._tensor import Tensor
from ._dtypes import require_dtype
from ._ops_nn import conv

__all__ = ["OPS"]


def _range(dtype: Any) -> tuple[int, int]:
    bits = 8 * dtype.itemsize
    return (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if dtype.is_signed else (0, 2**bits - 1)


def _along(p: Tensor, x: Tensor, axis: int, block: int) -> Tensor:
    """A scale or zero point broadcast against ``x``: scalar, per ``axis``, or per block along it."""
    if p.ndim == 0 or (p.numel() == 1 and p.ndim <= 1):
        return p.reshape([])
    axis %= x.ndim
    if p.ndim == 1 and not block:
        return p.reshape([-1 if d == axis else 1 for d in range(x.ndim)])
    return ops.repeat_interleave(p, block, dim=axis).narrow(axis, 0, x.shape[axis]) if block else p


def quantize(a: Any, x: Tensor, scale: Tensor, zp: Any = None) -> Tensor:
    if zp is not None:
        out = zp.dtype
    elif a.get("output_dtype"):
        out = require_dtype(a["output_dtype"], f"{a.name}: QuantizeLinear output_dtype")
    else:
        out = dt.uint8
    axis, block = a.get("axis", 1), a.get("block_size", 0)
    s = _along(scale, x, axis, block)
    q = ops.round(x / s.to(x.dtype)).double()  # divided in x's precision, as ONNX's reference does
    if zp is not None:
        q = q + _along(zp, x, axis, block).double()
    lo, hi = _range(out)
    return ops.clamp(q, lo, hi).to(out)


def dequantize(a: Any, x: Tensor, scale: Tensor, zp: Any = None) -> Tensor:
    axis, block = a.get("axis", 1), a.get("block_size", 0)
    v = x.double()
    if zp is not None:
        v = v - _along(zp, x, axis, block).double()
    out = require_dtype(a["output_dtype"], a.name) if a.get("output_dtype") else scale.dtype
    return (v * _along(scale, x, axis, block).double()).to(out)


def _requant(v: Tensor, scale: Tensor, zp: Tensor) -> Tensor:
    lo, hi = _range(zp.dtype)
    return ops.clamp(ops.round(v / scale.double()) + zp.double(), lo, hi).to(zp.dtype)


def qlinear_matmul(a: Any, x: Tensor, xs: Tensor, xz: Tensor, w: Tensor, ws: Tensor, wz: Tensor, ys: Tensor,
                   yz: Tensor) -> Tensor:  # fmt: skip
    xv = (x.double() - _cols(xz, x, rows=True)) * _cols(xs, x, rows=True)
    wv = (w.double() - _cols(wz, w)) * _cols(ws, w)
    return _requant(ops.matmul(xv, wv), ys, yz)


def _cols(p: Tensor, m: Tensor, rows: bool = False) -> Tensor:
    """Per-tensor, or per row (of the left operand) / per column (of the right one)."""
    p = p.double()
    if p.numel() == 1:
        return p.reshape([])
    return p.reshape(-1, 1) if rows else p.reshape(*p.shape[:-1], 1, p.shape[-1]) if p.ndim > 1 else p


def qlinear_conv(a: Any, x: Tensor, xs: Tensor, xz: Tensor, w: Tensor, ws: Tensor, wz: Tensor, ys: Tensor,
                 yz: Tensor, b: Any = None) -> Tensor:  # fmt: skip
    xv = (x.double() - xz.double()) * xs.double()
    shape = [-1] + [1] * (w.ndim - 1)
    wv = (w.double() - (wz.double().reshape(shape) if wz.numel() > 1 else wz.double())) * (
        ws.double().reshape(shape) if ws.numel() > 1 else ws.double())  # fmt: skip
    bias = None if b is None else b.double() * xs.double() * ws.double().reshape(-1)
    return _requant(conv(a, xv, wv, bias), ys, yz)


def matmul_integer(a: Any, x: Tensor, w: Tensor, xz: Any = None, wz: Any = None) -> Tensor:
    xv = x.double() - (_cols(xz, x, rows=True) if xz is not None else 0)
    wv = w.double() - (_cols(wz, w) if wz is not None else 0)
    return ops.matmul(xv, wv).to(dt.int32)


def conv_integer(a: Any, x: Tensor, w: Tensor, xz: Any = None, wz: Any = None) -> Tensor:
    xv = x.double() - (xz.double() if xz is not None else 0)
    shape = [-1] + [1] * (w.ndim - 1)
    wv = w.double() - (wz.double().reshape(shape) if wz is not None and wz.numel() > 1 else
                       wz.double() if wz is not None else 0)  # fmt: skip
    return ops.round(conv(a, xv, wv)).to(dt.int32)  # padding x - zero point with 0 = padding x with its zero point


OPS: dict[str, Callable[..., Any]] = {
    "QuantizeLinear": quantize, "DequantizeLinear": dequantize, "QLinearMatMul": qlinear_matmul,
    "QLinearConv": qlinear_conv, "MatMulInteger": matmul_integer, "ConvInteger": conv_integer,
}  # fmt: skip

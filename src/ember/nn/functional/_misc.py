"""Linear maps, dropout, embeddings, resampling, attention and distances."""

from __future__ import annotations

import math
import warnings
from typing import Any

from ..._creation import rand
from ..._dtype import bool_
from ..._errors import DeviceError, DTypeError, OutOfRangeError, ShapeError, ValueRangeError
from ..._tensor import Tensor
from ...autograd._autocast import ACTIVE as AUTOCAST
from ...autograd._autocast import autocast_inputs, autocast_op
from ...autograd._function import BilinearOp, Op
from ...autograd._grad_mode import no_grad
from ...ops._blas import matmul
from ...ops._indexing import GetItem, IndexBackward, where
from ...ops._indexing_view import _transpose
from ...ops._other_math import einsum
from ...ops._pointwise_complex import cj
from ...ops._util import _float, index_out_of_range, same_dtype, size_of
from ._activation import _src  # (what an in-place form reads: a copy when the input is in a graph)
from ._dropout_ops import dropout_keep_bool, keep_mask
from ._resize_aa import resize_antialiased

__all__ = [
    "alpha_dropout", "bilinear", "dropout", "dropout1d", "dropout2d", "dropout3d", "embedding",
    "feature_alpha_dropout", "interpolate", "linear", "one_hot", "pixel_shuffle", "pixel_unshuffle",
    "upsample", "upsample_bilinear", "upsample_nearest",
]  # fmt: skip


class _Linear(BilinearOp):
    """``x @ w.T + b`` as one node. Its weight gradient is computed as ``g.T @ x``, which comes out
    contiguous in the weight's layout (the optimizer updates it without a copy)."""

    def forward(self, x: Any, w: Any, b: Any) -> Any:
        be = self.backend
        xp = be.xp
        if x.ndim > 2 and x.shape[-1] and size_of(x):  # one GEMM, not one per leading index (NumPy's matmul)
            y = xp.reshape(be.gemm(xp.reshape(x, (-1, x.shape[-1])), w.T), (*x.shape[:-1], w.shape[0]))
        else:
            y = be.gemm(x, w.T)
        if b is not None:
            y += b
        return y

    def backward(self, g: Tensor) -> tuple[Any, Any, Any]:
        x, w, _ = self.inputs  # type: ignore[misc]
        e = self._edges or (None, None, None)
        g2 = g.reshape(-1, g.shape[-1])
        gx = matmul(g, cj(w)) if e[0] is not None else None  # complex: the conjugates
        gw = matmul(_transpose(g2, 0, 1), cj(x.reshape(-1, x.shape[-1]))) if e[1] is not None else None
        return gx, gw, (g2.sum(0) if e[2] is not None else None)

    def backward_arrays(self, g: Any) -> tuple[Any, Any, Any]:
        x, w, _ = self.inputs  # type: ignore[misc]
        e = self._edges or (None, None, None)
        be = self.backend
        xa = x._data
        if g.ndim == 2:  # (the usual case: no reshapes, each a call on torch)
            gx = be.gemm(g, w._data) if e[0] is not None else None
            gw = be.gemm(g.T, xa) if e[1] is not None else None
            return gx, gw, (g.sum(0) if e[2] is not None else None)
        g2 = g.reshape(-1, g.shape[-1])
        gx = be.xp.reshape(be.gemm(g2, w._data), xa.shape) if e[0] is not None else None
        gw = be.gemm(g2.T, xa.reshape(-1, xa.shape[-1])) if e[1] is not None else None
        return gx, gw, (g2.sum(0) if e[2] is not None else None)


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` with weight (out_features, in_features)."""
    if AUTOCAST[0]:
        input, weight, bias = autocast_inputs("linear", input, weight, bias)
    if weight.ndim not in (1, 2) or input.shape[-1:] != weight.shape[-1:]:
        raise ShapeError(
            f"linear: input {tuple(input.shape)} and weight {tuple(weight.shape)} do not match (in_features differ)"
        )
    plain_bias = bias is None or (
        isinstance(bias, Tensor) and bias.shape == weight.shape[:1] and bias.dtype is weight.dtype
    )
    if weight.ndim == 2 and isinstance(input, Tensor) and input.dtype is weight.dtype and plain_bias:
        return _Linear.apply(input, weight, bias)
    same_dtype("linear", "input, weight and bias", input, weight, bias)
    y = matmul(input, _transpose(weight, 0, 1) if weight.ndim == 2 else weight)
    if bias is None:
        return y
    _bias_fits("linear", bias, y)
    return y + bias


def _bias_fits(op: str, bias: Any, y: Tensor) -> None:
    """A bias broadcasts to the output; it never enlarges it (a silently bigger result, where PyTorch refuses)."""
    shape = tuple(getattr(bias, "shape", ()))
    if len(shape) > y.ndim or any(b not in (1, o) for b, o in zip(shape[::-1], y.shape[::-1])):
        raise ShapeError(f"{op}: bias of shape {shape} does not fit the output of shape {tuple(y.shape)}")


@autocast_op("bilinear")
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y_o = x1 W_o x2 + b_o`` with weight (out, in1, in2)."""
    same_dtype("bilinear", "input1, input2, weight and bias", input1, input2, weight, bias)
    y = einsum("...i,oij,...j->...o", input1, weight, input2)
    if bias is None:
        return y
    _bias_fits("bilinear", bias, y)
    return y + bias


def _check_p(p: float, op: str) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueRangeError(f"{op}: p must be in [0, 1], got {p}")


def _keep_mask(x: Tensor, shape: tuple[int, ...], p: float, generator: Any) -> Tensor:
    if x.dtype.is_floating_point:  # the dropout ops' mask (Backend.dropout_mask)
        return keep_mask(x, p, generator, shape).to(x.dtype)
    return (rand(*shape, dtype=x.dtype, device=x.device, generator=generator) >= p).to(x.dtype)


def dropout(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False, generator: Any = None
) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)`` (training only)."""
    _check_p(p, "dropout")
    if not training or p == 0.0:
        return input
    if inplace:
        return _written(input, dropout(_src(input), p, training, False, generator))
    if p == 1.0:
        return input * 0.0
    fused = dropout_keep_bool(input, p, generator)  # one node keeping a bool mask, not the input
    if fused is not None:
        return fused
    return input * (_keep_mask(input, input.shape, p, generator) * (1.0 / (1.0 - p)))


def _written(input: Tensor, out: Tensor) -> Tensor:
    """PyTorch's ``inplace=True``: ``out`` written into ``input``, which is returned."""
    return input if out is input else input.copy_(out)


def _feature_dropout(input: Tensor, p: float, training: bool, sp: int, op: str) -> Tensor:
    _check_p(p, op)
    if not training or p == 0.0:
        return input
    if input.ndim not in (sp + 1, sp + 2):
        raise ShapeError(f"{op}: expected a ({sp + 1})-d or ({sp + 2})-d input, got shape {tuple(input.shape)}")
    lead = input.ndim - sp
    shape = input.shape[:lead] + (1,) * sp
    if p == 1.0:
        return input * 0.0
    return input * (_keep_mask(input, shape, p, None) * (1.0 / (1.0 - p)))


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L)."""
    if inplace and training and p:
        return _written(input, dropout1d(_src(input), p, training))
    return _feature_dropout(input, p, training, 1, "dropout1d")


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W).

    Other ranks behave as in PyTorch 2.x, with its warnings: a 3-D input is taken as (N, C, L) (whole
    rows are zeroed, dropout1d's behaviour); a 2-D input (N, F) loses single elements (plain dropout).
    """
    if inplace and training and p:
        return _written(input, dropout2d(_src(input), p, training))
    _check_p(p, "dropout2d")
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: received a {input.ndim}-D input; dropout2d is meant for (N, C, H, W) or "
                      "(C, H, W) inputs. As in PyTorch, dims 0 and 1 are taken as (N, C): use dropout instead "
                      "to silence this warning", UserWarning, stacklevel=2)  # fmt: skip
    if input.ndim == 3:
        warnings.warn("dropout2d: received a 3-D input; as in PyTorch it is taken as (N, C, L) and whole channels "
                      "of length L are zeroed (dropout1d's behaviour); use dropout1d to say so", UserWarning,
                      stacklevel=2)  # fmt: skip
    if input.ndim < 2:
        raise ShapeError(f"dropout2d: needs at least 2 dims (N, C, ...), got shape {tuple(input.shape)}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    shape = input.shape[:2] + (1,) * (input.ndim - 2)
    return input * (_keep_mask(input, shape, p, None) * (1.0 / (1.0 - p)))


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) with probability ``p`` (training only); scale the rest by 1/(1-p)."""
    if inplace and training and p:
        return _written(input, dropout3d(_src(input), p, training))
    return _feature_dropout(input, p, training, 3, "dropout3d")


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's zero mean and unit variance."""
    if inplace and training and p:
        return _written(input, alpha_dropout(_src(input), p, training))
    return _alpha_dropout(input, p, training, input.shape, "alpha_dropout")


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels: one draw per (N, C), as ``alpha_dropout`` keeps SELU's statistics."""
    if input.ndim < 2 and training and p:  # (when nothing is dropped any shape passes, as in PyTorch)
        raise ShapeError(f"feature_alpha_dropout: expected an input with a channel dim, got shape {tuple(input.shape)}")
    if inplace and training and p:
        return _written(input, feature_alpha_dropout(_src(input), p, training))
    return _alpha_dropout(input, p, training, input.shape[:2] + (1,) * (input.ndim - 2), "feature_alpha_dropout")


def _alpha_dropout(input: Tensor, p: float, training: bool, mask_shape: tuple[int, ...], op: str) -> Tensor:
    _check_p(p, op)
    if not training or p == 0.0:
        return input
    if p == 1.0:  # everything dropped: zeros, as PyTorch (the scale below would divide by zero)
        return input * 0.0
    alpha_p = -1.7580993408473766
    keep = _keep_mask(input, mask_shape, p, None)
    a = ((1 - p) * (1 + p * alpha_p**2)) ** -0.5
    b = -a * alpha_p * p
    return (input * keep + alpha_p * (1 - keep)) * a + b


class Embedding(Op):
    """Rows of ``weight`` at ``indices``; the gradient adds into those rows (``padding_idx`` gets none)."""

    saves_inputs = False

    def forward(self, weight: Any, idx: Any, padding_idx: int | None) -> Any:
        self.idx, self.padding_idx, self.shape = idx, padding_idx, weight.shape
        return weight[idx]

    def backward(self, g: Tensor) -> tuple[Tensor, None, None]:
        idx = self.idx
        if self.padding_idx is not None:
            keep = Tensor._make((idx != self.padding_idx)[..., None], self.backend).to(g.dtype)
            g = g * keep
        return IndexBackward.apply(g, self.shape, (idx,), False), None, None


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Look up rows of ``weight`` (num_embeddings, dim) for the integer ``input``."""
    if input.dtype.is_floating_point or input.dtype is bool_:
        raise DTypeError(f"embedding: indices must be an integer tensor, got {input.dtype}")
    if input._backend is not weight._backend:
        raise DeviceError(
            f"embedding: indices on {input.device} ({input._backend.name} backend), weight on {weight.device} "
            f"({weight._backend.name} backend); move the indices with .to(weight.device)"
        )
    if weight.ndim != 2:
        raise ShapeError(f"embedding: 'weight' must be 2-D, got shape {tuple(weight.shape)}")
    n = weight.shape[0]
    idx = input._data
    bad = index_out_of_range(idx, 0, n, input._backend)
    if bad:
        raise OutOfRangeError(
            f"embedding: index {bad[1] if bad[1] >= n else bad[0]} is out of range for {n} embeddings"
        )
    if padding_idx is not None and padding_idx < 0:
        padding_idx += n
    if max_norm is not None:
        with no_grad():
            rows = weight[input.reshape(-1)]
            norms = rows.norm(norm_type, -1, keepdim=True)
            scale = where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).to(weight.dtype)
            weight._data[idx.reshape(-1)] = (rows * scale)._data
    return Embedding.apply(weight, idx, padding_idx)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """Class indices as int64 one-hot vectors along a new last dim."""
    if tensor.dtype.is_floating_point:
        raise DTypeError(f"one_hot: expected class indices (an integer tensor), got {tensor.dtype}")
    xp = tensor._backend.xp
    idx = tensor._data
    if num_classes < 0 and size_of(idx):  # the classes come from the values: read them (PyTorch does too)
        lo, hi = (int(v) for v in tensor._backend.to_numpy(xp.stack([xp.min(idx), xp.max(idx)])))
        n, bad = hi + 1, (lo, hi) if lo < 0 else None
    else:
        n = max(num_classes, 0)
        bad = index_out_of_range(idx, 0, n, tensor._backend)
    if bad:
        raise ValueRangeError(f"one_hot: class values must be in [0, {n}), got {bad[0]}..{bad[1]}")
    out = xp.astype(idx[..., None] == xp.arange(n), xp.int64)
    return Tensor._make(out, tensor._backend)


def _interp_size(x: Tensor, size: Any, scale_factor: Any, sp: int) -> tuple[tuple[int, ...], tuple[float, ...]]:
    if (size is None) == (scale_factor is None):
        raise ValueRangeError("interpolate: give exactly one of size and scale_factor")
    if size is not None:
        out = (int(size),) * sp if isinstance(size, int) else tuple(int(s) for s in size)
        if len(out) != sp:
            raise ShapeError(f"interpolate: size must have {sp} entries for input {tuple(x.shape)}, got {size}")
        if any(s < 1 for s in out):
            raise ShapeError(f"interpolate: every output size must be >= 1, got size={size}")
        return out, tuple(x.shape[2 + i] / out[i] for i in range(sp))
    sf = (float(scale_factor),) * sp if isinstance(scale_factor, (int, float)) else tuple(map(float, scale_factor))
    if len(sf) != sp:
        raise ValueRangeError(f"interpolate: scale_factor must have {sp} entries for input {tuple(x.shape)}")
    if not all(math.isfinite(f) and f > 0 for f in sf):
        raise ValueRangeError(f"interpolate: scale_factor must be finite and > 0, got {scale_factor}")
    out = tuple(math.floor(x.shape[2 + i] * sf[i]) for i in range(sp))
    return out, tuple(1.0 / f for f in sf)


@autocast_op("interpolate")
def interpolate(
    input: Tensor,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """Resize the spatial dims: ``nearest``, ``nearest-exact``, ``linear``, ``bilinear``, ``bicubic``, ``trilinear``,
    ``area``."""
    sp = input.ndim - 2
    if sp < 1:
        raise ShapeError(f"interpolate: expected (N, C, ...) with spatial dims, got shape {tuple(input.shape)}")
    linear_modes = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
    if mode in linear_modes and linear_modes[mode] != sp:
        raise ShapeError(
            f"interpolate: mode {mode!r} needs a {linear_modes[mode] + 2}-d input, got {tuple(input.shape)}"
        )
    if mode not in ("nearest", "nearest-exact", "area", *linear_modes):
        raise ValueRangeError(f"interpolate: unsupported mode {mode!r}")
    if align_corners is not None and mode not in linear_modes:
        raise ValueRangeError(f"interpolate: align_corners only applies to linear modes, not {mode!r}")
    out, scale = _interp_size(input, size, scale_factor, sp)
    given = scale_factor is not None and not recompute_scale_factor  # the kernel sees 1 / scale_factor
    if not given:
        scale = tuple(input.shape[2 + i] / out[i] for i in range(sp))
    if antialias:
        if mode not in ("bilinear", "bicubic"):
            raise ValueRangeError(f"interpolate: anti-alias option is restricted to bilinear and bicubic modes and "
                                  f"requires a 4-D tensor as input, not mode {mode!r}")  # fmt: skip
        if any(o < 1 for o in out):
            raise ShapeError(f"interpolate: an empty output {out} from {tuple(input.shape)}")
        y = resize_antialiased(_float(input), out, scale, bool(align_corners), mode == "bicubic")
        return (y + 0.5).floor().clamp(0, 255).to(input.dtype) if input.dtype.name == "uint8" else y
    if mode == "area":
        from ._pool import _adaptive

        return _adaptive(input, out, sp, False, False, "interpolate")  # type: ignore[no-any-return]
    if any(o < 1 for o, n in zip(out, input.shape[2:], strict=True) if n):  # as PyTorch, except for 'area'
        raise ShapeError(
            f"interpolate: scale_factor={scale_factor} makes an empty output {out} from {tuple(input.shape)}"
        )
    if any(o and not n for o, n in zip(out, input.shape[2:], strict=True)):  # no source index to take: PyTorch too
        raise ShapeError(
            f"interpolate: an empty spatial dim of input {tuple(input.shape)} cannot make output size {out}"
        )
    xp = input._backend.xp
    x = input if mode.startswith("nearest") else _float(input)
    if mode.startswith("nearest"):
        exact = mode == "nearest-exact"
        arrays = []
        for i in range(sp):  # PyTorch's index arithmetic: in float32, with its shortcuts for sizes n and 2n
            n, o = input.shape[2 + i], out[i]
            d = xp.arange(o, dtype=xp.int64)
            if not exact and (not given or sp == 2) and o in (n, 2 * n):
                arrays.append(d if o == n else d // 2)
                continue
            if given:  # float(1.0 / scale_factor)
                sc = xp.astype(xp.asarray(scale[i]), xp.float32)
            else:  # float(n) / o
                sc = xp.asarray(n, dtype=xp.float32) / xp.asarray(o, dtype=xp.float32)
            pos = xp.astype(d, xp.float32) + (0.5 if exact else 0.0)  # (Python floats stay float32)
            src = xp.astype(xp.floor(pos * sc), xp.int64)
            arrays.append(xp.minimum(src, n - 1))
        return GetItem.apply(x, (slice(None), slice(None)) + tuple(xp.ix_(*arrays)))
    if mode == "bicubic":
        return _bicubic(x, input, out, scale, bool(align_corners))
    for i in range(sp):  # separable: interpolate one dim at a time
        n, o, ax = x.shape[2 + i], out[i], 2 + i
        if n == o:  # PyTorch keeps a dim whose size does not change, whatever the scale_factor
            continue
        d = xp.arange(o, dtype=xp.float64)
        if align_corners:
            src = d * ((n - 1) / (o - 1)) if o > 1 else xp.zeros(o, dtype=xp.float64)
        else:
            src = xp.maximum((d + 0.5) * scale[i] - 0.5, 0.0)
        i0 = xp.minimum(xp.astype(xp.floor(src), xp.int64), n - 1)
        i1 = xp.minimum(i0 + 1, n - 1)
        w = xp.astype(src - i0, x._data.dtype)
        lead = (slice(None),) * ax
        shape = [1] * x.ndim
        shape[ax] = o
        wt = Tensor._make(w.reshape(shape), x._backend)
        x = GetItem.apply(x, lead + (i0,)) * (1 - wt) + GetItem.apply(x, lead + (i1,)) * wt
    if input.dtype.name == "uint8":  # PyTorch keeps uint8, rounding half up
        return (x + 0.5).floor().clamp(0, 255).to(input.dtype)
    return x


def _cubic_weights(t: Any, xp: Any) -> list[Any]:
    """Keys' cubic convolution weights (A = -0.75, PyTorch's) of the 4 taps around a fractional offset ``t``."""
    a = -0.75

    def near(v: Any) -> Any:  # |v| <= 1
        return ((a + 2) * v - (a + 3)) * v * v + 1

    def far(v: Any) -> Any:  # 1 < |v| < 2
        return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _bicubic(x: Tensor, input: Tensor, out: tuple[int, ...], scale: tuple[float, ...], align: bool) -> Tensor:
    """Bicubic resize of (N, C, H, W) as PyTorch's: source index unclamped, taps clamped to the border."""
    xp = x._backend.xp
    if tuple(x.shape[2:]) == out:  # PyTorch copies when no size changes
        return x
    dt = x._data.dtype
    for i in range(2):
        n, o, ax = x.shape[2 + i], out[i], 2 + i
        d = xp.arange(o, dtype=dt)
        if align:
            src = d * xp.asarray((n - 1) / (o - 1) if o > 1 else 0.0, dtype=dt)
        else:
            src = (d + xp.asarray(0.5, dtype=dt)) * xp.asarray(scale[i], dtype=dt) - xp.asarray(0.5, dtype=dt)
        i0 = xp.floor(src)
        ws = _cubic_weights(src - i0, xp)
        base = xp.astype(i0, xp.int64)
        lead = (slice(None),) * ax
        shape = [1] * x.ndim
        shape[ax] = o
        acc = None
        for k in range(4):
            idx = xp.clip(base - 1 + k, 0, n - 1)
            term = GetItem.apply(x, lead + (idx,)) * Tensor._make(xp.reshape(ws[k], shape), x._backend)
            acc = term if acc is None else acc + term
        x = acc  # type: ignore[assignment]
    if input.dtype.name == "uint8":
        return (x + 0.5).floor().clamp(0, 255).to(input.dtype)
    return x


upsample = interpolate


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """``interpolate(mode="nearest")`` (PyTorch's older name, deprecated there with this warning)."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  UserWarning, stacklevel=2)  # fmt: skip
    return interpolate(input, size, scale_factor, "nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """``interpolate(mode="bilinear", align_corners=True)`` (PyTorch's older name, deprecated there)."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  UserWarning, stacklevel=2)  # fmt: skip
    return interpolate(input, size, scale_factor, "bilinear", True)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(N, C * r^2, H, W) -> (N, C, H * r, W * r)."""
    r = int(upscale_factor)
    if input.ndim < 3:
        raise ShapeError(f"pixel_shuffle: expected (*, C, H, W), got shape {tuple(input.shape)}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise ShapeError(f"pixel_shuffle: channels {c} are not divisible by upscale_factor^2 = {r * r}")
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    n = len(lead)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(N, C, H * r, W * r) -> (N, C * r^2, H, W)."""
    r = int(downscale_factor)
    if input.ndim < 3:
        raise ShapeError(f"pixel_unshuffle: expected (*, C, H, W), got shape {tuple(input.shape)}")
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise ShapeError(f"pixel_unshuffle: spatial size {(h, w)} is not divisible by {r}")
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    n = len(lead)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)

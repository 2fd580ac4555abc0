"""The meta backend's kernels that cannot run their references on shapes alone: shape rules.

Convolution (the references gather im2col windows through NumPy's strides), pooling (its backward tests values
to choose a path), the special functions (SciPy's or a host loop), random draws (only the shape is made;
nothing is drawn), and the in-place scatters (nothing to write). The remaining kernels (batch and layer norm,
attention, losses, activations, padding, optimizer steps) run their ``xp`` references on ``MetaArray``s.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._kernels_util import Ints, Pads, out_shape, pool_geometry
from ._meta_array import MetaArray


def _like(shape: Any, *arrays: Any) -> MetaArray:
    return MetaArray(tuple(shape), np.result_type(*(a.dtype for a in arrays if a is not None)))


class MetaKernels:
    """Mixin of ``MetaBackend``: each kernel's result shapes and dtypes."""

    native_dtype: Any

    # -- random numbers: none drawn ------------------------------------------------------------
    def uniform(self, gen: Any, shape: tuple[int, ...], dtype: Any) -> MetaArray:
        return MetaArray(shape, self.native_dtype(dtype))

    normal = uniform

    def trunc_normal(self, gen: Any, shape: tuple[int, ...], dtype: Any, *args: Any, **kwargs: Any) -> MetaArray:
        return MetaArray(shape, self.native_dtype(dtype))

    def randint(self, gen: Any, low: int, high: int, shape: tuple[int, ...], dtype: Any) -> MetaArray:
        return MetaArray(shape, self.native_dtype(dtype))

    def standard_gamma(self, gen: Any, alpha: Any) -> MetaArray:
        return MetaArray(alpha.shape, alpha.dtype)

    def poisson(self, gen: Any, rate: Any) -> MetaArray:
        return MetaArray(rate.shape, rate.dtype)

    def binomial(self, gen: Any, count: Any, prob: Any) -> MetaArray:
        return MetaArray(count.shape, count.dtype)

    def dropout_mask(self, gen: Any, shape: tuple[int, ...], p: float, dtype: Any) -> MetaArray:
        return MetaArray(shape, bool)

    # -- special functions: elementwise, a floating result ------------------------------------------
    def _elementwise(self, *args: Any) -> MetaArray:
        arrays = [a for a in args if isinstance(a, MetaArray)]
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        dt = np.result_type(*(a.dtype for a in arrays))
        return MetaArray(shape, dt if dt.kind in "fc" else np.float32)

    def erf(self, x: Any) -> MetaArray:
        return self._elementwise(x)

    erfinv = lgamma = digamma = erf

    def polygamma(self, n: int, x: Any) -> MetaArray:
        return self._elementwise(x)

    def igamma(self, a: Any, x: Any) -> MetaArray:
        return self._elementwise(a, x)

    igamma_grad_a = igamma

    def standard_gamma_grad(self, x: Any, alpha: Any) -> MetaArray:
        return self._elementwise(x, alpha)

    def special_fn(self, name: str, *args: Any) -> MetaArray:
        return self._elementwise(*args)

    # -- scatters and windows --------------------------------------------------------------------
    def index_add(self, target: Any, index: Any, values: Any) -> None:
        target[index]

    def scatter_reduce_at(self, x: Any, index: Any, values: Any, reduce: str) -> MetaArray:
        return MetaArray(x.shape, x.dtype)

    def spmm(self, indices: Any, values: Any, shape: tuple[int, int], dense: Any) -> MetaArray:
        return _like((shape[0], dense.shape[1]), values, dense)

    def sliding_window(self, array: Any, window: tuple[int, ...], axes: tuple[int, ...]) -> MetaArray:
        shape = list(array.shape)
        for w, a in zip(window, axes, strict=True):
            if not 0 < w <= shape[a]:
                raise ValueError(f"window shape {window} is larger than the input along dim {a}")
            shape[a] -= w - 1
        strides = (*array.strides_el, *(array.strides_el[a] for a in axes))
        return array.view_as((*shape, *window), strides)  # type: ignore[no-any-return]

    # -- convolution ---------------------------------------------------------------------------------
    def conv(
        self, x: Any, w: Any, stride: Ints, pads: Pads, dilation: Ints, groups: int, save: bool = False,
        bias: Any = None,
    ) -> tuple[MetaArray, None]:  # fmt: skip
        out = out_shape(tuple(x.shape[2:]), tuple(w.shape[2:]), stride, pads, dilation)
        if any(o <= 0 for o in out):
            raise ValueError(f"convolution: the output size {out} is too small (input {x.shape}, kernel {w.shape})")
        return _like((x.shape[0], w.shape[0], *out), x, w), None

    def conv_transpose(
        self, y: Any, w: Any, stride: Ints, pads: Pads, dilation: Ints, groups: int, x_shape: Ints
    ) -> MetaArray:
        return _like(x_shape, y, w)

    def conv_weight(
        self, x: Any, g: Any, stride: Ints, pads: Pads, dilation: Ints, groups: int, w_shape: Ints, saved: Any = None
    ) -> MetaArray:
        return _like(w_shape, x, g)

    def conv_backward(
        self, g: Any, x: Any, w: Any, saved: Any, stride: Ints, pads: Pads, dilation: Ints, groups: int,
        input_grad: bool = True, weight_grad: bool = True,
    ) -> tuple[Any, Any]:  # fmt: skip
        gx = _like(x.shape, g, w) if input_grad else None
        gw = _like(w.shape, g, x) if weight_grad else None
        return gx, gw

    def conv_bias_grad(self, g: Any) -> MetaArray:
        return MetaArray((g.shape[1],), g.dtype)

    def unfold(self, x: Any, k: Ints, stride: Ints, pads: Pads, dilation: Ints) -> MetaArray:
        out = out_shape(tuple(x.shape[2:]), k, stride, pads, dilation)
        return MetaArray((x.shape[0], x.shape[1] * math.prod(k), math.prod(out)), x.dtype)

    def fold(self, cols: Any, shape: Ints, k: Ints, stride: Ints, pads: Pads, dilation: Ints) -> MetaArray:
        return MetaArray(tuple(shape), cols.dtype)

    # -- pooling -------------------------------------------------------------------------------------
    def max_pool(
        self, x: Any, k: Ints, s: Ints, p: Ints, d: Ints, ceil_mode: bool, save: bool = False
    ) -> tuple[MetaArray, None]:
        out = pool_geometry(tuple(x.shape[2:]), k, s, p, d, ceil_mode)[1]
        return MetaArray((*x.shape[:2], *out), x.dtype), None

    def max_pool_backward(
        self, g: Any, x: Any, y: Any, saved: Any, k: Ints, s: Ints, p: Ints, d: Ints, ceil_mode: bool
    ) -> MetaArray:
        return MetaArray(x.shape, g.dtype)

    def max_pool_indices(self, x: Any, y: Any, saved: Any, k: Ints, s: Ints, p: Ints, d: Ints, ceil_mode: bool) -> Any:
        return MetaArray(y.shape, np.int64)

    def avg_pool(
        self, x: Any, k: Ints, s: Ints, p: Ints, ceil_mode: bool, count_include_pad: bool, divisor_override: Any
    ) -> MetaArray:
        out = pool_geometry(tuple(x.shape[2:]), k, s, p, (1,) * len(k), ceil_mode)[1]
        return MetaArray((*x.shape[:2], *out), x.dtype)

    def avg_pool_backward(
        self, g: Any, x_shape: Ints, k: Ints, s: Ints, p: Ints, ceil_mode: bool, count_include_pad: bool,
        divisor_override: Any,
    ) -> MetaArray:  # fmt: skip
        return MetaArray(tuple(x_shape), g.dtype)

"""``ember.testing.make_tensor`` and the deprecated ``assert_allclose``: PyTorch's ``torch.testing`` helpers."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

from . import _creation
from ._dtype import as_dtype, to_real
from ._tensor import Tensor
from ._torch_names import finfo, iinfo
from .ops import complex as _complex

__all__ = ["assert_allclose", "make_tensor"]


def _low_high(
    low: float | None, high: float | None, dtype: Any, lowest: float, highest: float, default: tuple[float, float]
) -> tuple[float, float]:
    """``low`` and ``high`` checked and clamped to ``[lowest, highest)`` (PyTorch's rules)."""
    low = default[0] if low is None else low
    high = default[1] if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and (dtype.is_floating_point or dtype.is_complex):
        warnings.warn(
            "Passing `low==high` to `make_tensor` for floating or complex types is deprecated; use "
            "`ember.full(...)` instead.",
            FutureWarning,
            stacklevel=3,
        )
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(
            f"The value interval specified by `low` and `high` is [{low}, {high}), but {dtype} only supports "
            f"[{lowest}, {highest})"
        )
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if not (dtype.is_floating_point or dtype.is_complex):
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(
    *shape: int | Sequence[int],
    dtype: Any,
    device: Any,
    low: float | None = None,
    high: float | None = None,
    requires_grad: bool = False,
    noncontiguous: bool = False,
    exclude_zero: bool = False,
    memory_format: Any = None,
) -> Tensor:
    """A tensor of ``shape`` filled with random values in ``[low, high)`` (PyTorch's defaults: [-9, 9] for
    floating and complex dtypes, each part; [-9, 10) for integers, clamped to the dtype's range; 0/1 for bool).

    ``noncontiguous``: a strided view of a larger tensor; ``exclude_zero``: zeros become 1 (integers) or the
    dtype's smallest normal number; ``requires_grad`` only for floating and complex dtypes.
    """
    d = as_dtype(dtype)
    shape_t: tuple[int, ...] = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], Sequence) else shape  # type: ignore[assignment]
    if noncontiguous and memory_format is not None:
        raise ValueError(
            "The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
            f"noncontiguous={noncontiguous} and memory_format={memory_format}"
        )
    floating = d.is_floating_point or d.is_complex
    if requires_grad and not floating:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got dtype={d}")
    noncontiguous = noncontiguous and math.prod(shape_t) > 1
    if noncontiguous:
        shape_t = (*shape_t[:-1], 2 * shape_t[-1])
    if d.name == "bool":
        lo, hi = _low_high(low, high, d, 0, 2, (0, 2))
        result = _creation.randint(int(lo), int(hi), shape_t, dtype=d, device=device)
    elif not floating:
        info = iinfo(d)
        lo, hi = _low_high(low, high, d, info.min, info.max + (1 if d.name != "int64" else 0), (-9, 10))
        result = _creation.randint(int(lo), int(hi), shape_t, dtype=d, device=device)
    else:
        fi = finfo(d)
        lo, hi = _low_high(low, high, d, fi.min, fi.max, (-9, 9))
        real = to_real(d) if d.is_complex else d
        parts = [_uniform(shape_t, real, device, lo, hi) for _ in range(2 if d.is_complex else 1)]
        result = parts[0] if len(parts) == 1 else _complex(parts[0], parts[1])
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if not floating else finfo(d).tiny
    if floating:
        result.requires_grad = requires_grad
    return result


def _uniform(shape: tuple[int, ...], dtype: Any, device: Any, low: float, high: float) -> Tensor:
    t = _creation.empty(shape, dtype=dtype, device=device)
    if high - low >= finfo(dtype).max:  # the range's width overflows: draw half of it, then double
        return t.uniform_(low / 2, high / 2).mul_(2)
    return t.uniform_(low, high)


def assert_allclose(
    actual: Any,
    expected: Any,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = True,
    msg: str = "",
) -> None:
    """Deprecated (as in PyTorch; use ``assert_close``): values equal within the dtype's tolerance
    (float16 1e-3/1e-3, float32 1e-4/1e-5, float64 1e-5/1e-8 when neither is given); shapes must match."""
    warnings.warn(
        "`ember.testing.assert_allclose()` is deprecated, as `torch.testing.assert_allclose()` is since 1.12; "
        "use `ember.testing.assert_close()` instead.",
        FutureWarning,
        stacklevel=2,
    )
    import numpy as np

    from .testing import _np

    a = _np(actual)
    e = _np(expected) if isinstance(expected, Tensor) or hasattr(expected, "detach") else np.asarray(expected, a.dtype)
    if rtol is None and atol is None:
        tol = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}
        rtol, atol = max((tol.get(x.dtype.name, (0.0, 0.0)) for x in (a, e)), key=lambda p: p[0])
    if rtol is None or atol is None:
        raise ValueError("assert_allclose: give both rtol and atol, or neither")
    if a.shape != e.shape:
        raise AssertionError(f"{msg or 'assert_allclose'}: shape {tuple(a.shape)} != expected {tuple(e.shape)}")
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan, err_msg=msg)

"""``torch.fft`` (torch docs, "torch.fft"): the n-dimensional transforms, the sample frequencies and the shifts.

Each transform is ``ops/_fft.py``'s primitives chained as PyTorch's ``SpectralOps.cpp`` chains them, so values and
gradients agree with PyTorch's (tested against it in ``tests/ops/test_fft.py`` and by its op_db samples).
"""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ._fft import FftC2C, FftC2R, FftR2C, c2c, check_size, norm_mode, promote, real_input, resize, shape_and_dims
from ._other_shape import roll
from ._pointwise_complex import conj
from ._util import norm_dim

__all__: list[str] = []
METHODS: list[str] = []

_LAST2 = (-2, -1)


def fftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """The n-dimensional discrete Fourier transform over ``dim`` (default: all dims, or the last ``len(s)``)."""
    sizes, dims = shape_and_dims("fftn", input, s, dim)
    return c2c("fftn", input, sizes, dims, norm, True)


def ifftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """The n-dimensional inverse discrete Fourier transform."""
    sizes, dims = shape_and_dims("ifftn", input, s, dim)
    return c2c("ifftn", input, sizes, dims, norm, False)


def fft2(input: Tensor, s: Any = None, dim: Any = _LAST2, norm: str | None = None) -> Tensor:
    """The two-dimensional discrete Fourier transform (over the last two dims by default)."""
    return fftn(input, s, dim, norm)


def ifft2(input: Tensor, s: Any = None, dim: Any = _LAST2, norm: str | None = None) -> Tensor:
    """The two-dimensional inverse discrete Fourier transform."""
    return ifftn(input, s, dim, norm)


def _at_least_one(op: str, dims: tuple[int, ...]) -> None:
    if not dims:
        from .._errors import ShapeError

        raise ShapeError(f"fft.{op} must transform at least one axis")


def rfftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """The n-dimensional DFT of real input, one-sided in the last transformed dim."""
    x = real_input("rfftn", input)
    sizes, dims = shape_and_dims("rfftn", x, s, dim)
    _at_least_one("rfftn", dims)
    return FftR2C.apply(resize(x, dims, sizes), dims, norm_mode(norm, True), True)  # type: ignore[no-any-return]


def _c2r_shape(op: str, x: Tensor, s: Any, dim: Any) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """PyTorch's ``canonicalize_fft_c2r_shape_and_dim_args``: (input sizes, dims, the real last dim's size)."""
    sizes, dims = shape_and_dims(op, x, s, dim)
    _at_least_one(op, dims)
    s_last = None if s is None else ([s] if isinstance(s, int) else list(s))[-1]
    last = 2 * (x.shape[dims[-1]] - 1) if s_last is None or s_last == -1 else sizes[-1]
    check_size(last)
    return sizes[:-1] + (last // 2 + 1,), dims, last


def irfftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """The inverse of ``rfftn``: real output, ``s[-1]`` (default ``2 * (size - 1)``) long in the last dim."""
    x = promote("irfftn", input, True)
    sizes, dims, last = _c2r_shape("irfftn", x, s, dim)
    return FftC2R.apply(resize(x, dims, sizes), dims, norm_mode(norm, False), last)  # type: ignore[no-any-return]


def hfftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """The n-dimensional DFT of a signal Hermitian-symmetric in the last dim, given by its one-sided half."""
    x = promote("hfftn", input, True)
    sizes, dims, last = _c2r_shape("hfftn", x, s, dim)
    x = resize(x, dims, sizes)
    mode = norm_mode(norm, True)
    if len(dims) > 1:
        x = FftC2C.apply(x, dims[:-1], mode, True)
    return FftC2R.apply(conj(x), dims[-1:], mode, last)  # type: ignore[no-any-return]


def ihfftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """The inverse of ``hfftn``: the one-sided n-dimensional inverse DFT of real input."""
    x = real_input("ihfftn", input)
    sizes, dims = shape_and_dims("ihfftn", x, s, dim)
    _at_least_one("ihfftn", dims)
    mode = norm_mode(norm, False)
    out = conj(FftR2C.apply(resize(x, dims, sizes), dims[-1:], mode, True))
    if len(dims) > 1:
        out = FftC2C.apply(out, dims[:-1], mode, False)
    return out


def rfft2(input: Tensor, s: Any = None, dim: Any = _LAST2, norm: str | None = None) -> Tensor:
    """The two-dimensional DFT of real input."""
    return rfftn(input, s, dim, norm)


def irfft2(input: Tensor, s: Any = None, dim: Any = _LAST2, norm: str | None = None) -> Tensor:
    """The inverse of ``rfft2``."""
    return irfftn(input, s, dim, norm)


def hfft2(input: Tensor, s: Any = None, dim: Any = _LAST2, norm: str | None = None) -> Tensor:
    """The two-dimensional ``hfftn``."""
    return hfftn(input, s, dim, norm)


def ihfft2(input: Tensor, s: Any = None, dim: Any = _LAST2, norm: str | None = None) -> Tensor:
    """The two-dimensional ``ihfftn``."""
    return ihfftn(input, s, dim, norm)


# -- sample frequencies and shifts ------------------------------------------------------------------------------
def fftfreq(
    n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None, requires_grad: bool = False, **_: Any
) -> Tensor:
    """The sample frequencies of an ``n``-point DFT with sample spacing ``d``: ``[0, 1, ..., -2, -1] / (d * n)``."""
    from .. import _creation
    from ._indexing_join import cat

    n = int(n)
    if n < 0:
        from .._errors import ValueRangeError

        raise ValueRangeError(f"fft.fftfreq: n must be non-negative, got {n}")
    k = cat([_creation.arange((n + 1) // 2, dtype=dtype, device=device),
             _creation.arange(-(n // 2), 0, dtype=dtype, device=device)])  # fmt: skip
    out = _freq(k, n, d, dtype)
    return out.requires_grad_(True) if requires_grad else out


def rfftfreq(
    n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None, requires_grad: bool = False, **_: Any
) -> Tensor:
    """The non-negative sample frequencies of an ``n``-point ``rfft``: ``[0, 1, ..., n // 2] / (d * n)``."""
    from .. import _creation

    n = int(n)
    if n < 0:
        from .._errors import ValueRangeError

        raise ValueRangeError(f"fft.rfftfreq: n must be non-negative, got {n}")
    out = _freq(_creation.arange(n // 2 + 1, dtype=dtype, device=device), n, d, dtype)
    return out.requires_grad_(True) if requires_grad else out


def _freq(k: Tensor, n: int, d: float, dtype: Any) -> Tensor:
    from .._dtype import get_default_dtype

    k = k.to(dtype or get_default_dtype())
    return k * (1.0 / (n * d) if n * d else float("inf"))  # PyTorch multiplies: n = 0 gives NaN


def _shift(op: str, input: Tensor, dim: Any, inverse: bool) -> Tensor:
    if dim is None:
        dims = tuple(range(input.ndim))
    else:
        dims = tuple(norm_dim(int(d), input.ndim, f"fft.{op}") for d in ([dim] if isinstance(dim, int) else dim))
    if not dims:
        return input.clone() if input.ndim == 0 else input
    shifts = tuple((input.shape[d] + 1) // 2 if inverse else input.shape[d] // 2 for d in dims)
    return roll(input, shifts, dims)


def fftshift(input: Tensor, dim: Any = None) -> Tensor:
    """Move the zero frequency to the middle of ``dim`` (all dims by default): a roll by ``size // 2``."""
    return _shift("fftshift", input, dim, False)


def ifftshift(input: Tensor, dim: Any = None) -> Tensor:
    """The inverse of ``fftshift``: a roll by ``(size + 1) // 2``."""
    return _shift("ifftshift", input, dim, True)

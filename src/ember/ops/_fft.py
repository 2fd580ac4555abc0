"""``torch.fft`` (torch docs, "torch.fft"): the three transform operators and the one-dimensional functions.

As in PyTorch, every ``ember.fft`` function is one of three primitives — complex-to-complex (``FftC2C``),
real-to-complex (``FftR2C``, optionally one-sided) and one-sided complex-to-real (``FftC2R``) — after resizing the
input (``resize``: crop or zero-pad, a differentiable ``Pad``) and conjugating. The arrays come from backend kernels
(``Backend.fft_c2c/fft_r2c/fft_c2r``); the gradients are PyTorch's (``derivatives.yaml``): c2c's is c2c the other way
with the same scaling, r2c's is the real part of an inverse c2c of the zero-padded gradient, c2r's is a one-sided
r2c of the gradient with the frequencies that stand for two (all but zero and Nyquist) doubled.
"""

from __future__ import annotations

from typing import Any

from .._dtype import complex64, complex128, float16, float64
from .._errors import DTypeError, OutOfRangeError, ShapeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._function import Op
from ._other_shape import Pad
from ._pointwise_complex import conj, real
from ._util import _float, norm_dim

__all__: list[str] = []
METHODS: list[str] = []

#: PyTorch's normalisation enum: 0 none, 1 by sqrt(n), 2 by n
_NORMS = {"backward": (0, 2), "forward": (2, 0), "ortho": (1, 1)}


def norm_mode(norm: str | None, forward: bool) -> int:
    """PyTorch's ``norm_from_string``: the scaling of a transform in the given direction."""
    if norm is None:
        norm = "backward"
    if norm not in _NORMS:
        raise ValueRangeError(f"Invalid normalization mode: {norm!r} (expected 'backward', 'forward' or 'ortho')")
    return _NORMS[norm][0 if forward else 1]


def _as_complex(g: Tensor) -> Tensor:
    return g if g.dtype.is_complex else g.to(complex128 if g.dtype == float64 else complex64)


class FftC2C(Op):
    """The complex DFT over ``dims``; its adjoint (the gradient) is the DFT the other way, scaled the same."""

    saves_inputs = False

    def forward(self, x: Any, dims: tuple[int, ...], norm: int, forward: bool) -> Any:
        self.dims, self.norm, self.fwd = dims, norm, forward
        return self.backend.fft_c2c(x, dims, norm, forward)

    def backward(self, g: Tensor) -> tuple[Tensor, None, None, None]:
        return FftC2C.apply(_as_complex(g), self.dims, self.norm, not self.fwd), None, None, None


class FftR2C(Op):
    """The forward DFT of a real tensor over ``dims`` (``onesided``: the last dim's first ``n // 2 + 1`` entries)."""

    saves_inputs = False

    def forward(self, x: Any, dims: tuple[int, ...], norm: int, onesided: bool) -> Any:
        self.dims, self.norm, self.onesided, self.last = dims, norm, onesided, x.shape[dims[-1]]
        return self.backend.fft_r2c(x, dims, norm, onesided)

    def backward(self, g: Tensor) -> tuple[Tensor, None, None, None]:
        g = _as_complex(g)
        d = self.dims[-1]
        if self.onesided and g.shape[d] < self.last:  # the dropped half gets zeros (PyTorch's fft_r2c_backward)
            widths = tuple((0, self.last - g.shape[d]) if i == d else (0, 0) for i in range(g.ndim))
            g = Pad.apply(g, widths, "constant", 0)
        return real(FftC2C.apply(g, self.dims, self.norm, False)), None, None, None


class FftC2R(Op):
    """The real inverse DFT of a one-sided spectrum over ``dims``, ``last_dim_size`` outputs on the last dim."""

    saves_inputs = False

    def forward(self, x: Any, dims: tuple[int, ...], norm: int, last_dim_size: int) -> Any:
        self.dims, self.norm = dims, norm
        return self.backend.fft_c2r(x, dims, norm, last_dim_size)

    def backward(self, g: Tensor) -> tuple[Tensor, None, None, None]:
        gi: Tensor = FftR2C.apply(g, self.dims, self.norm, True)
        d = self.dims[-1]
        half = gi.shape[d]
        double = g.shape[d] - half  # frequencies 1 .. double stand for themselves and their mirror images
        if double > 0:
            xp = self.backend.xp
            scale = xp.ones((half,) + (1,) * (g.ndim - 1 - d), dtype=g._data.dtype)
            scale[1 : 1 + double] = 2
            gi = gi * Tensor._make(scale, self.backend)
        return gi, None, None, None


# -- argument handling, as PyTorch's SpectralOps.cpp ------------------------------------------------------------
def promote(op: str, x: Any, require_complex: bool = False) -> Tensor:
    """``x`` in a dtype the transforms take: integers and bools as the default float, complex if required."""
    if not isinstance(x, Tensor):
        raise TypeError(f"fft.{op}: expected a Tensor, got {type(x).__name__}")
    if x.dtype == float16 or x.dtype.name == "bfloat16":
        raise DTypeError(f"fft.{op}: Unsupported dtype {x.dtype} (use float32 or float64, as PyTorch on the CPU)")
    x = _float(x)
    if require_complex and not x.dtype.is_complex:
        x = x.to(complex128 if x.dtype == float64 else complex64)
    return x


def real_input(op: str, x: Any) -> Tensor:
    """``x`` promoted, refusing complex input (``rfft``, ``ihfft`` ...) as PyTorch does."""
    x = promote(op, x)
    if x.dtype.is_complex:
        raise DTypeError(f"fft.{op} expects a real input tensor, but got {x.dtype}")
    return x


def resize(x: Tensor, dims: tuple[int, ...], sizes: tuple[int, ...]) -> Tensor:
    """``x`` cropped or zero-padded at the end of each of ``dims`` to ``sizes`` (PyTorch's ``resize_fft_input``)."""
    widths = [(0, 0)] * x.ndim
    for d, n in zip(dims, sizes, strict=True):
        widths[d] = (0, n - x.shape[d])
    if not any(hi for _, hi in widths):
        return x
    return Pad.apply(x, tuple(widths), "constant", 0)  # type: ignore[no-any-return]


def check_size(n: int) -> int:
    if n < 1:
        raise ValueRangeError(f"Invalid number of data points ({n}) specified")
    return n


def one_dim(op: str, x: Tensor, dim: int) -> int:
    if x.ndim == 0:
        raise OutOfRangeError(f"fft.{op}: dimension specified as {dim} but tensor has no dimensions")
    return norm_dim(dim, x.ndim, f"fft.{op}")


def shape_and_dims(op: str, x: Tensor, s: Any, dim: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """PyTorch's ``canonicalize_fft_shape_and_dim_args``: the sizes and (non-negative) dims to transform."""
    nd = x.ndim
    if s is not None:
        s = [int(v) for v in ([s] if isinstance(s, int) else s)]
    if dim is not None:
        dims = [norm_dim(int(d), nd, f"fft.{op}") for d in ([dim] if isinstance(dim, int) else dim)]
        if len(set(dims)) != len(dims):
            raise ShapeError(f"fft.{op}: FFT dims must be unique, got dim={tuple(dim)}")
        if s is not None and len(s) != len(dims):
            raise ShapeError(f"fft.{op}: When given, dim and shape arguments must have the same length "
                             f"(s={tuple(s)}, dim={tuple(dim)})")  # fmt: skip
    elif s is not None:
        if len(s) > nd:
            raise ShapeError(f"fft.{op}: Got shape with {len(s)} values but input tensor only has {nd} dimensions.")
        dims = list(range(nd - len(s), nd))
    else:
        dims = list(range(nd))
    sizes = [x.shape[d] for d in dims] if s is None else [x.shape[d] if v == -1 else v for d, v in zip(dims, s)]
    for n in sizes:
        check_size(n)
    return tuple(sizes), tuple(dims)


# -- the one-dimensional transforms ----------------------------------------------------------------------------
def c2c(op: str, x: Tensor, sizes: tuple[int, ...] | None, dims: tuple[int, ...], norm: Any, forward: bool) -> Tensor:
    """A complex transform of ``x`` (real input goes through a two-sided r2c, conjugated for the inverse)."""
    x = promote(op, x)
    if sizes is not None:
        x = resize(x, dims, sizes)
    mode = norm_mode(norm, forward)
    if not dims:
        return x if x.dtype.is_complex else promote(op, x, True)
    if x.dtype.is_complex:
        return FftC2C.apply(x, dims, mode, forward)  # type: ignore[no-any-return]
    out: Tensor = FftR2C.apply(x, dims, mode, False)
    return out if forward else conj(out)


def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The one-dimensional discrete Fourier transform of ``input`` along ``dim`` (``n``: crop or zero-pad first)."""
    d = one_dim("fft", input, dim)
    return c2c("fft", input, None if n is None else (check_size(n),), (d,), norm, True)


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The one-dimensional inverse discrete Fourier transform of ``input`` along ``dim``."""
    d = one_dim("ifft", input, dim)
    return c2c("ifft", input, None if n is None else (check_size(n),), (d,), norm, False)


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The DFT of real ``input`` along ``dim``: the ``n // 2 + 1`` non-negative frequencies."""
    x = real_input("rfft", input)
    d = one_dim("rfft", x, dim)
    if n is not None:
        x = resize(x, (d,), (check_size(n),))
    return FftR2C.apply(x, (d,), norm_mode(norm, True), True)  # type: ignore[no-any-return]


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of ``rfft``: ``n`` (default ``2 * (size - 1)``) real outputs from a one-sided spectrum."""
    x = promote("irfft", input, True)
    d = one_dim("irfft", x, dim)
    last = check_size(2 * (x.shape[d] - 1) if n is None else n)
    if n is not None:
        x = resize(x, (d,), (last // 2 + 1,))
    return FftC2R.apply(x, (d,), norm_mode(norm, False), last)  # type: ignore[no-any-return]


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The DFT of a Hermitian-symmetric signal given by its one-sided half: ``n`` real outputs."""
    x = promote("hfft", input, True)
    d = one_dim("hfft", x, dim)
    last = check_size(2 * (x.shape[d] - 1) if n is None else n)
    if n is not None:
        x = resize(x, (d,), (last // 2 + 1,))
    return FftC2R.apply(conj(x), (d,), norm_mode(norm, True), last)  # type: ignore[no-any-return]


def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of ``hfft``: the one-sided inverse DFT of real ``input``."""
    x = real_input("ihfft", input)
    d = one_dim("ihfft", x, dim)
    if n is not None:
        x = resize(x, (d,), (check_size(n),))
    return conj(FftR2C.apply(x, (d,), norm_mode(norm, False), True))

"""Torch's native kernels for the array kernels of ``_kernels_special.py`` ... (a mixin of the torch backend).

Like ``kernels.py``: plain torch tensors in and out with torch's grad mode off, results equal to the
reference kernels' (tested against them in tests/backends/test_array_kernels.py).
"""

from __future__ import annotations

import math
from typing import Any

from .._kernels_pad import Widths
from .kernels import _no_grad, _torch


def _padded_dims(x: Any, widths: Widths) -> tuple[int, list[int]]:
    """(the first padded dim, torch's flat padding list for the dims from there on, last dim first)."""
    lead = next((d for d, w in enumerate(widths) if w[0] or w[1]), len(widths))
    return lead, [v for lo_hi in reversed(widths[lead:]) for v in lo_hi]


def _as_channels(x: Any, lead: int) -> Any:
    """``x`` as torch's unbatched (C, *spatial) layout: the unpadded leading dims folded into C."""
    return x.reshape((-1,) + tuple(x.shape[lead:])) if lead else x.reshape((1,) + tuple(x.shape))


class TorchArrayKernels:
    """Native torch overrides of the reference array kernels. Mix in before ``Backend``."""

    # -- special functions -----------------------------------------------------------------------
    def erf(self, x: Any) -> Any:
        return _torch().erf(x)

    def erfinv(self, y: Any) -> Any:
        return _torch().erfinv(y)

    def lgamma(self, x: Any) -> Any:
        return _torch().lgamma(x)

    def digamma(self, x: Any) -> Any:
        return _torch().digamma(x)

    def polygamma(self, n: int, x: Any) -> Any:
        return _torch().polygamma(n, x)

    def igamma(self, a: Any, x: Any) -> Any:
        return _torch().igamma(a, x)

    @_no_grad
    def special_fn(self, name: str, *args: Any) -> Any:
        return getattr(_torch().special, name)(*args)

    # -- complex numbers ----------------------------------------------------------------------------
    def make_complex(self, re: Any, im: Any) -> Any:
        return _torch().complex(re, im)

    def view_as_real(self, a: Any) -> Any:
        return _torch().view_as_real(a)

    def view_as_complex(self, a: Any) -> Any:
        return _torch().view_as_complex(a)

    # -- discrete Fourier transforms: aten's own primitives (pocketfft/MKL on the CPU, cuFFT on CUDA) ------------
    # (MKL refuses empty batches — "Inconsistent configuration parameters" — so an empty input gives zeros)
    @_no_grad
    def fft_c2c(self, x: Any, dims: tuple[int, ...], norm: int, forward: bool) -> Any:
        if not x.numel():
            return x.clone()
        return _torch().ops.aten._fft_c2c(x, list(dims), norm, forward)

    @_no_grad
    def fft_r2c(self, x: Any, dims: tuple[int, ...], norm: int, onesided: bool) -> Any:
        torch = _torch()
        if not x.numel():
            shape = list(x.shape)
            shape[dims[-1]] = shape[dims[-1]] // 2 + 1 if onesided else shape[dims[-1]]
            return torch.zeros(shape, dtype=torch.complex128 if x.dtype == torch.float64 else torch.complex64,
                               device=x.device)  # fmt: skip
        return torch.ops.aten._fft_r2c(x, list(dims), norm, onesided)

    @_no_grad
    def fft_c2r(self, x: Any, dims: tuple[int, ...], norm: int, last_dim_size: int) -> Any:
        torch = _torch()
        if not x.numel():
            shape = list(x.shape)
            shape[dims[-1]] = last_dim_size
            return torch.zeros(shape, dtype=x.real.dtype, device=x.device)
        return torch.ops.aten._fft_c2r(x, list(dims), norm, last_dim_size)

    # -- linear algebra: torch.linalg's LAPACK/MAGMA kernels ------------------------------------------------
    @_no_grad
    def lu_factor(self, a: Any) -> tuple[Any, Any]:
        lu, piv, _ = _torch().linalg.lu_factor_ex(a)
        return lu, piv

    @_no_grad
    def lu_permutation(self, pivots: Any, m: int) -> Any:
        torch = _torch()
        k = pivots.shape[-1]
        if m == 0:  # (no rows: an empty order; argmax over them is refused)
            return torch.zeros((*pivots.shape[:-1], 0), dtype=torch.int64, device=pivots.device)
        lu = torch.zeros((*pivots.shape[:-1], m, k), device=pivots.device)
        P = torch.lu_unpack(lu, pivots.to(torch.int32), unpack_data=False).P
        return P.argmax(-2)  # P[perm[i], i] = 1

    @_no_grad
    def geqrf(self, a: Any) -> tuple[Any, Any]:
        return tuple(_torch().geqrf(a))

    @_no_grad
    def matrix_exp(self, a: Any) -> Any:
        return _torch().linalg.matrix_exp(a)

    @_no_grad
    def eig(self, a: Any) -> tuple[Any, Any]:
        w, v = _torch().linalg.eig(a)
        return w, v

    @_no_grad
    def ldl_factor(self, a: Any, hermitian: bool) -> tuple[Any, Any]:
        ld, piv = _torch().linalg.ldl_factor(a, hermitian=hermitian)
        return ld, piv

    @_no_grad
    def ldl_solve(self, ld: Any, pivots: Any, b: Any, hermitian: bool) -> Any:
        torch = _torch()
        if hermitian and ld.is_complex() and ld.device.type != "cpu":  # torch's CUDA solve refuses it: on the host
            x = torch.linalg.ldl_solve(ld.cpu(), pivots.cpu(), b.cpu(), hermitian=True)
            return x.to(b.device)
        return torch.linalg.ldl_solve(ld, pivots, b, hermitian=hermitian)

    # -- padding: aten's reflection/replication pads for 1-3 trailing dims, else the reference ------------
    @_no_grad
    def pad(self, x: Any, widths: Widths, mode: str, value: Any = 0) -> Any:
        torch = _torch()
        lead, flat = _padded_dims(x, widths)
        if mode == "constant":  # (aten's constant_pad_nd: F.pad refuses a complex value)
            return torch.constant_pad_nd(x, flat, value).contiguous()
        k = x.ndim - lead
        if not 1 <= k <= 3 or x.dtype == torch.bool:
            return super().pad(x, widths, mode, value)  # type: ignore[misc]
        y = torch.nn.functional.pad(_as_channels(x, lead), flat, mode=mode)
        return y.reshape(tuple(x.shape[:lead]) + tuple(y.shape[1:])).contiguous()

    @_no_grad
    def pad_backward(self, g: Any, widths: Widths, mode: str) -> Any:
        torch = _torch()
        lead, flat = _padded_dims(g, widths)
        k = g.ndim - lead
        if mode not in ("reflect", "replicate") or not 1 <= k <= 3 or not g.is_floating_point():
            return super().pad_backward(g, widths, mode)  # type: ignore[misc]
        shape = tuple(n - lo - hi for n, (lo, hi) in zip(g.shape, widths, strict=True))
        fn = getattr(torch.ops.aten, f"{'reflection' if mode == 'reflect' else 'replication'}_pad{k}d_backward")
        x = torch.empty((math.prod(shape[:lead]),) + shape[lead:], dtype=g.dtype, device=g.device)  # its shape only
        gx = fn(_as_channels(g, lead).contiguous(), x, flat)
        return gx.reshape(shape).contiguous()

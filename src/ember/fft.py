"""``ember.fft``: ``torch.fft``'s discrete Fourier transforms with PyTorch's names, arguments and gradients.

The transforms are Ember operators (``ops/_fft.py``, ``ops/_fft_nd.py``) over three backend kernels (``scipy.fft``
on NumPy, ``torch.ops.aten._fft_*`` on torch); ``norm`` is ``"backward"`` (default), ``"ortho"`` or ``"forward"``.
"""

from __future__ import annotations

from .ops._fft import fft, hfft, ifft, ihfft, irfft, rfft
from .ops._fft_nd import (
    fft2,
    fftfreq,
    fftn,
    fftshift,
    hfft2,
    hfftn,
    ifft2,
    ifftn,
    ifftshift,
    ihfft2,
    ihfftn,
    irfft2,
    irfftn,
    rfft2,
    rfftfreq,
    rfftn,
)

__all__ = [
    "fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "hfft2", "hfftn", "ifft", "ifft2", "ifftn", "ifftshift",
    "ihfft", "ihfft2", "ihfftn", "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn",
]  # fmt: skip

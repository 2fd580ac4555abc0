"""Discrete Fourier transforms as three backend kernels, PyTorch's own primitives (``aten._fft_c2c``, ``_fft_r2c``,
``_fft_c2r``): every ``ember.fft`` function is one of them after resizing, conjugating or chaining.

``norm`` is PyTorch's normalisation enum: 0 none, 1 divide by sqrt(n), 2 divide by n (n: the product of the
transformed sizes — for c2r, of the output's). The reference serves NumPy and CuPy through a SciPy-style ``fft``
module (``scipy.fft`` on NumPy when SciPy is installed: 2-4x faster than ``numpy.fft`` here, see docs/architecture.md;
otherwise ``xp.fft``); torch overrides the three with ``torch.ops.aten``'s.
"""

from __future__ import annotations

import math
import os
from typing import Any

#: (norm, forward direction) -> the ``norm=`` string of NumPy's/SciPy's functions for that direction
_LIB_NORM = {
    (0, True): "backward", (1, True): "ortho", (2, True): "forward",
    (0, False): "forward", (1, False): "ortho", (2, False): "backward",
}  # fmt: skip

#: SciPy starts its worker threads per call: below this many elements one thread was faster here
_THREADED = 1 << 20


def _workers() -> int:
    """Ember's thread setting (``set_num_threads``, else ``OMP_NUM_THREADS``, else the CPU count)."""
    from .. import _threads

    env = os.environ.get("OMP_NUM_THREADS", "")
    return _threads._num_threads or (int(env) if env.isdigit() and int(env) > 0 else os.cpu_count() or 1)


class FFTKernels:
    """Mixin of ``Backend`` (``xp`` comes from it; ``fft_module_name`` names a SciPy-style fft module to prefer)."""

    xp: Any
    #: a module with SciPy's ``fft`` API to use instead of ``xp.fft`` when importable ("" for none)
    fft_module_name: str = ""
    _fft_lib: Any = None

    def _fft(self, x: Any) -> tuple[Any, dict[str, Any]]:
        """The fft module and the extra keywords its calls on ``x`` take (SciPy's ``workers``)."""
        lib = self._fft_lib
        if lib is None:
            lib = self.xp.fft
            if self.fft_module_name:
                try:
                    import importlib

                    lib = importlib.import_module(self.fft_module_name)
                except ImportError:  # pragma: no cover - SciPy is optional
                    pass
            self._fft_lib = lib
        if getattr(lib, "__name__", "") == "scipy.fft" and math.prod(x.shape) >= _THREADED:
            return lib, {"workers": _workers()}
        return lib, {}

    def _empty_batch(self, x: Any, dims: tuple[int, ...], shape: list[int], complex_out: bool) -> Any:
        """Zeros of ``shape`` when ``x`` has no elements but its transformed dims are not empty (CuPy refuses
        such an empty batch; NumPy and PyTorch give an empty result), else None."""
        if math.prod(x.shape) or not all(x.shape[d] for d in dims):
            return None
        xp = self.xp
        dtype = xp.result_type(x.dtype, xp.complex64) if complex_out else xp.real(xp.zeros((), x.dtype)).dtype
        return xp.zeros(tuple(shape), dtype=dtype)

    def fft_c2c(self, x: Any, dims: tuple[int, ...], norm: int, forward: bool) -> Any:
        """The complex DFT of ``x`` over ``dims`` (``forward``: exponent -1, else +1), normalised by ``norm``."""
        empty = self._empty_batch(x, dims, list(x.shape), True)
        if empty is not None:
            return empty
        lib, kw = self._fft(x)
        fn = lib.fftn if forward else lib.ifftn
        return fn(x, axes=dims, norm=_LIB_NORM[norm, forward], **kw)

    def fft_r2c(self, x: Any, dims: tuple[int, ...], norm: int, onesided: bool) -> Any:
        """The forward DFT of real ``x`` over ``dims``; ``onesided`` keeps ``n // 2 + 1`` entries of the last dim."""
        shape = list(x.shape)
        if onesided:
            shape[dims[-1]] = shape[dims[-1]] // 2 + 1
        empty = self._empty_batch(x, dims, shape, True)
        if empty is not None:
            return empty
        lib, kw = self._fft(x)
        fn = lib.rfftn if onesided else lib.fftn
        return fn(x, axes=dims, norm=_LIB_NORM[norm, True], **kw)

    def fft_c2r(self, x: Any, dims: tuple[int, ...], norm: int, last_dim_size: int) -> Any:
        """The real inverse DFT of the one-sided spectrum ``x`` over ``dims`` (output size ``last_dim_size`` on the
        last of ``dims``; the imaginary parts of its zero and Nyquist frequencies are ignored, as by PyTorch)."""
        shape = list(x.shape)
        shape[dims[-1]] = last_dim_size
        empty = self._empty_batch(x, dims, shape, False) if last_dim_size else None
        if empty is not None:
            return empty
        lib, kw = self._fft(x)
        s = [x.shape[d] for d in dims[:-1]] + [last_dim_size]
        return lib.irfftn(x, s=s, axes=dims, norm=_LIB_NORM[norm, False], **kw)

"""Complex numbers as backend kernels: building a complex array from its parts, and the real/complex views.

The reference serves NumPy and CuPy (their arrays expose ``.real``/``.imag`` as writable views and
reinterpret bytes with ``.view(dtype)``); torch overrides them with ``torch.complex`` and
``torch.view_as_real``/``view_as_complex`` (``torch/array_kernels.py``).
"""

from __future__ import annotations

from typing import Any

_COMPLEX_OF = {"float32": "complex64", "float64": "complex128", "float16": "complex64"}


class ComplexKernels:
    """Mixin of ``Backend``."""

    xp: Any

    def make_complex(self, re: Any, im: Any) -> Any:
        """``re + 1j * im`` (same-shaped real arrays of one dtype) as a new complex array."""
        xp = self.xp
        out = xp.empty(re.shape, dtype=_COMPLEX_OF[str(re.dtype)])
        out.real[...] = re
        out.imag[...] = im
        return out

    def view_as_real(self, a: Any) -> Any:
        """A complex array's memory as a real array with a last dim of 2 (real, imaginary): a view."""
        real = a.real  # a view with the complex strides; one more axis steps to the imaginary part
        return self.xp.lib.stride_tricks.as_strided(real, a.shape + (2,), a.strides + (real.itemsize,))

    def view_as_complex(self, a: Any) -> Any:
        """A real array whose last dim is 2 (with unit stride) read as complex numbers: a view."""
        out = a.view(_COMPLEX_OF[str(a.dtype)])
        return out.reshape(out.shape[:-1])

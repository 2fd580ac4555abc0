"""CuPy on a CUDA device. CuPy mirrors NumPy's API, so ``xp`` is ``cupy`` itself and the kernels are
NumPy's reference ones. Imported only when a CUDA device is asked for (``import ember`` never needs CuPy).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._device import device
from .._dtype import ALL_DTYPES, DType, bfloat16
from .._errors import DeviceError, DTypeError
from ._base import Backend


def _cupy() -> Any:
    try:
        import cupy
    except ImportError:
        raise DeviceError("cupy is not installed (pip install cupy-cuda12x, or ember[cuda])") from None
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # no driver, no device
        raise DeviceError(f"cupy is installed but sees no CUDA device ({type(e).__name__}: {e})") from None
    if n == 0:
        raise DeviceError("cupy is installed but sees no CUDA device")
    return cupy


def unavailable_reason() -> str | None:
    """Why CuPy cannot serve CUDA here, or None when it can."""
    try:
        _cupy()
    except DeviceError as e:
        return str(e)
    return None


class CupyBackend(Backend):
    """CuPy arrays on ``cuda:N``. bfloat16 is not available (CuPy follows NumPy's types)."""

    name = "cupy"
    device_types = ("cuda",)

    def __init__(self, dev: Any = "cuda") -> None:
        cp = _cupy()
        d = device(dev)
        if d.type != "cuda":
            raise DeviceError(f"cupy backend serves cuda devices only, not {d}")
        if (d.index or 0) >= cp.cuda.runtime.getDeviceCount():
            raise DeviceError(f"cupy sees {cp.cuda.runtime.getDeviceCount()} CUDA device(s), no {d}")
        self.device = d.served_by("cupy")
        self._cp = cp
        self._dev = cp.cuda.Device(d.index or 0)
        self.xp = cp
        self.array_type = cp.ndarray
        self._to = {t: np.dtype(t.name) for t in ALL_DTYPES if t is not bfloat16}
        self._from = {v: k for k, v in self._to.items()}
        self.float_dtypes = frozenset(v for k, v in self._to.items() if k.is_floating_point)
        self.complex_dtypes = frozenset(v for k, v in self._to.items() if k.is_complex)
        self.grad_dtypes = self.float_dtypes | self.complex_dtypes
        from cupyx.scipy import special

        self.special = special

    def asarray(self, data: Any, dtype: DType | None = None) -> Any:
        with self._dev:
            return self._cp.asarray(data, dtype=None if dtype is None else self.native_dtype(dtype))

    def from_numpy(self, array: np.ndarray) -> Any:
        with self._dev:
            return self._cp.asarray(array)

    def to_numpy(self, array: Any) -> np.ndarray:
        return self._cp.asnumpy(array) if isinstance(array, self._cp.ndarray) else np.asarray(array)

    def dtype_of(self, array: Any) -> DType:
        try:
            return self._from[array.dtype]
        except KeyError:
            raise DTypeError(f"CuPy dtype {array.dtype} has no Ember counterpart") from None

    def native_dtype(self, dtype: DType) -> Any:
        try:
            return self._to[dtype]
        except KeyError:
            raise DTypeError(
                f"dtype {dtype} is not available on the cupy backend; the torch backend has it "
                "(ember.backends.use('torch'))"
            ) from None

    def astype(self, array: Any, dtype: DType) -> Any:
        return array.astype(self.native_dtype(dtype), copy=False)

    def is_view_of(self, array: Any, base: Any) -> bool:
        return isinstance(array, self._cp.ndarray) and bool(self._cp.shares_memory(array, base))

    def is_plain(self, array: Any) -> bool:
        return bool(array.flags.c_contiguous)

    def synchronize(self) -> None:
        self._dev.synchronize()

    def index_add(self, target: Any, index: Any, values: Any) -> None:
        import cupyx

        from .._determinism import are_deterministic_algorithms_enabled

        if are_deterministic_algorithms_enabled() and target.dtype.kind in "fc":
            # float atomics add in thread order: under the deterministic switch, add on the host in index order
            cp = _cupy()
            host = cp.asnumpy(target)
            idx = index if isinstance(index, tuple) else (index,)
            host_idx = tuple(cp.asnumpy(i) if isinstance(i, cp.ndarray) else i for i in idx)
            np.add.at(host, host_idx if isinstance(index, tuple) else host_idx[0], cp.asnumpy(values))
            target[...] = cp.asarray(host)
            return
        cupyx.scatter_add(target, index, values)

    def sliding_window(self, array: Any, window: tuple[int, ...], axes: tuple[int, ...]) -> Any:
        return self._cp.lib.stride_tricks.sliding_window_view(array, window, axis=axes)

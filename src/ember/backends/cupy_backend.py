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

#: the dtypes ``cupy.add.at`` accepts (others take another path in ``index_add``)
_ADD_AT = frozenset({"int32", "int64", "float16", "float32", "float64", "uint32", "uint64"})


#: [CuPy has called into CUDA in this process, this process was forked after its parent's CuPy had]
_CUDA_STATE = [False, False]
_FORKED_MESSAGE = (
    "CUDA was initialised (by CuPy) in the parent of this process before it was forked, and a forked child "
    "cannot use CUDA (its calls fail with CUDA's initialization error): start the process with the 'spawn' "
    "start method (multiprocessing.get_context('spawn')), or keep its work on the CPU"
)


def forked_after_cuda() -> bool:
    """Called in a child just forked: whether its parent's CuPy had initialised CUDA (then it is unusable here)."""
    _CUDA_STATE[1] = _CUDA_STATE[1] or _CUDA_STATE[0]
    _CUDA_STATE[0] = False
    return _CUDA_STATE[1]


def _cupy() -> Any:
    if _CUDA_STATE[1]:
        raise DeviceError(_FORKED_MESSAGE)
    try:
        import cupy
    except ImportError:
        raise DeviceError("cupy is not installed (pip install cupy-cuda12x, or ember[cuda])") from None
    _CUDA_STATE[0] = True  # getDeviceCount initialises CUDA's driver: a child forked from here on cannot use it
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
    #: CuPy's indexing kernels wrap an out-of-range index around silently: Ember checks indices itself
    kernels_check_indices = False

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
        # bounds only, on the host (as NumPy's backend): ``cupy.shares_memory`` runs a kernel and fails on 0-d
        # complex arrays
        return isinstance(array, self._cp.ndarray) and bool(self._cp.may_share_memory(array, base))

    def address(self, array: Any) -> int:
        return int(array.data.ptr)

    def storage_offset(self, array: Any) -> int:
        return (int(array.data.ptr) - int(array.data.mem.ptr)) // array.dtype.itemsize

    def storage_nbytes(self, array: Any) -> int:
        """From the start of the memory ``array`` views to the end of its root array's: the pool's block may be
        larger (512 bytes for a 40-byte tensor, whose storage PyTorch reports as 40 bytes)."""
        root = array
        while isinstance(root.base, type(array)):
            root = root.base
        return int(root.data.ptr) - int(root.data.mem.ptr) + int(root.nbytes)

    def is_plain(self, array: Any) -> bool:
        return bool(array.flags.c_contiguous)

    def synchronize(self) -> None:
        self._dev.synchronize()

    def _host_index(self, index: Any) -> Any:
        """``index`` (an array or a tuple of arrays and slices) with its device arrays copied to the host."""
        cp = self._cp
        if isinstance(index, tuple):
            return tuple(cp.asnumpy(i) if isinstance(i, cp.ndarray) else i for i in index)
        return cp.asnumpy(index) if isinstance(index, cp.ndarray) else index

    def index_add(self, target: Any, index: Any, values: Any) -> None:
        from .._determinism import are_deterministic_algorithms_enabled

        cp = self._cp
        kind = target.dtype.kind
        self.check_index(target.shape, index)
        if are_deterministic_algorithms_enabled() and kind in "fc":
            # float atomics add in thread order: under the deterministic switch, add on the host in index order
            host = cp.asnumpy(target)
            np.add.at(host, self._host_index(index), self.to_numpy(values))
            target[...] = cp.asarray(host)
            return
        v = cp.asarray(values)
        if target.dtype.name in _ADD_AT:
            cp.add.at(target, index, v.astype(target.dtype, copy=False))
        elif kind == "c":  # cupy.add.at has no complex types: the real and imaginary parts apart
            part = target.real.dtype
            re, im = cp.zeros(target.shape, part), cp.zeros(target.shape, part)
            cp.add.at(re, index, v.real.astype(part, copy=False))
            if v.dtype.kind == "c":
                cp.add.at(im, index, v.imag.astype(part, copy=False))
            target += re + 1j * im
        else:  # bool and the small integers: sum in int64, then wrap (or, for bool, any) as NumPy's add.at does
            acc = cp.zeros(target.shape, cp.int64)
            cp.add.at(acc, index, v.astype(cp.int64))
            if kind == "b":
                target |= acc != 0
            else:
                target += acc.astype(target.dtype)

    def scatter_reduce_at(self, x: Any, index: Any, values: Any, reduce: str) -> Any:
        # CuPy has no ``multiply.at``; its ``maximum.at``/``minimum.at`` cover only some dtypes: combine on the
        # host with NumPy's ``ufunc.at`` (the reference's answer, repeated indices included)
        self.check_index(x.shape, index)
        host = np.array(self.to_numpy(x), copy=True)
        ufunc = {"prod": np.multiply, "amax": np.maximum, "amin": np.minimum}[reduce]
        ufunc.at(host, self._host_index(index), self.to_numpy(values))
        return self.from_numpy(host)

    def sliding_window(self, array: Any, window: tuple[int, ...], axes: tuple[int, ...]) -> Any:
        return self._cp.lib.stride_tricks.sliding_window_view(array, window, axis=axes)

"""The default backend: NumPy on the CPU."""

from __future__ import annotations

import functools
import math
import sys
import warnings
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .._device import CPU
from .._dtype import ALL_DTYPES, FLOAT8_DTYPES, WIDE_UINT_DTYPES, DType, bfloat16
from .._errors import DTypeError
from . import _blas_threads, _float8
from ._base import REFUSED_DTYPES, WIDEN_BFLOAT16, Backend
from ._kernels_threads import _split

# PyTorch's kernels give inf/NaN silently (log(0), 0/0, overflow); NumPy's warn on each. Its floating-point
# warnings raised inside Ember's own code are not shown (a user's NumPy code keeps them).
warnings.filterwarnings(
    "ignore", r"(divide by zero|invalid value|overflow|underflow) encountered", RuntimeWarning, r"ember\."
)

_TO_NATIVE: dict[DType, Any] = {d: np.dtype(d.name) for d in ALL_DTYPES if d is not bfloat16}
_FROM_NATIVE: dict[Any, DType] = {v: k for k, v in _TO_NATIVE.items()}
_FLOATS = frozenset(v for k, v in _TO_NATIVE.items() if k.is_floating_point)
#: ml_dtypes' bfloat16 NumPy dtype once loaded (on first use: the import costs ~50 ms), else None
_BF16: list[Any] = [None]
_INSTANCES: list[Any] = []  # the NumpyBackends made (their dtype sets gain bfloat16 when it loads)
_COMPLEX = frozenset(v for k, v in _TO_NATIVE.items() if k.is_complex)
_SCIPY_LINALG_MIN = 32  # the smallest matrix side sent to SciPy's single-precision LAPACK
_NUMBERS: dict[tuple[Any, Any], np.ndarray] = {}  # (dtype, number): an int and a float of equal value share one
_MAX_NUMBERS = 1024  # numbers that change every call (a decaying rate) must not pile up
_NDARRAY = np.ndarray
_PY_NUMBERS = (float, int)


def _cpu_has(feature: str) -> bool:
    """Whether NumPy found ``feature`` on this CPU (its dispatch table; False where it has none)."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:  # (a private module)
        return False
    return bool(__cpu_features__.get(feature))


#: NumPy's ``tanh`` has SIMD loops for float64 on AVX-512 (SkylakeX on): 5.8 us for 97 x 51 float64 against 10.7
#: for the recurrent kernels' ``2 sigmoid(2a) - 1`` (Sapphire Rapids, 2026-11-26); on AVX2 it costs 4-5 times ``exp``
_TANH_SIMD = _cpu_has("AVX512_SKX")


def keep_number(x: Any, v: Any) -> Any:
    """``v`` (a Python int or float) beside the array ``x`` as a read-only 0-d array of ``x``'s floating dtype,
    made once; else ``v`` itself.

    NumPy converts a Python number meeting an array on every call (NEP 50: to the array's dtype, then the
    kernel): ``x + 1.0`` on a (8,) float32 array takes ~0.65 µs against ~0.35 µs with a 0-d float32 operand.
    The 0-d array holds that same conversion, so the results are the same bits (float16/32/64, both operand
    orders, add/subtract/multiply/true_divide, ints and floats up to 2**70, infinities, subnormals:
    ``tests/backends/test_numpy_numbers.py``). Left to NumPy: zero (±0.0 would share a key), NaN (never found
    again), a number that overflows the dtype (NumPy warns on every call), traced arrays (``ember.compile``
    records the number as it was), non-floating arrays.
    """
    if x.__class__ is not _NDARRAY or v.__class__ not in _PY_NUMBERS:  # (not bool either)
        return v
    dt = x.dtype
    z = _NUMBERS.get((dt, v))
    if z is not None:
        return z
    if dt not in _FLOATS or not v or v != v:
        return v
    try:
        with np.errstate(all="ignore"):
            z = np.array(v, dtype=dt)
        if math.isinf(z) and not math.isinf(v):
            return v
    except (OverflowError, ValueError, TypeError):  # an int beyond any float: NumPy's own error, from the call
        return v
    z.flags.writeable = False
    if len(_NUMBERS) >= _MAX_NUMBERS:
        _NUMBERS.clear()
    _NUMBERS[(dt, v)] = z
    return z


def _each_matrix(a: np.ndarray, fn: Any, n_out: int) -> Any:
    """``fn`` on every matrix of the batch ``a``: its ``n_out`` outputs stacked back to ``a``'s batch shape."""
    if a.ndim == 2:
        return tuple(fn(a))
    flat = a.reshape(-1, *a.shape[-2:])
    outs = [fn(m) for m in flat]
    return tuple(np.stack([o[i] for o in outs]).reshape(*a.shape[:-2], *outs[0][i].shape) for i in range(n_out))


_SPLIT_MIN = 1 << 14  # elements of a batch of small matrices worth splitting over threads


def _split_batch(a: np.ndarray, fn: Any, n_out: int) -> Any:
    """``fn`` (a batched NumPy linalg call) on ``a``, the batch split over Ember's threads.

    NumPy's batched decompositions loop over the matrices in C on one thread (with the GIL released);
    PyTorch's CPU kernels use its intra-op threads. Large matrices use LAPACK's own threads instead.
    """
    from .._threads import get_num_threads

    batch = math.prod(a.shape[:-2])
    n = min(get_num_threads(), batch)
    if n < 2 or a.size < _SPLIT_MIN:
        return fn(a)
    flat = a.reshape(batch, *a.shape[-2:])
    found: dict[int, Any] = {}

    def part(lo: int, hi: int) -> None:
        found[lo] = fn(flat[lo:hi])

    _split(n, batch, n, part)  # on the kernels' threads (made again in a forked child), n ranges
    parts = [found[lo] for lo in sorted(found)]
    return tuple(np.concatenate([p[i] for p in parts]).reshape(*a.shape[:-2], *parts[0][i].shape[1:])
                 for i in range(n_out))  # fmt: skip


def _load_bfloat16() -> Any:
    """ml_dtypes' bfloat16 NumPy dtype, registered as Ember's ``bfloat16`` (imported on first use); its
    operators compute in float32 and round once (``autograd/_bf16.py``)."""
    if _BF16[0] is None:
        try:
            import ml_dtypes
        except ImportError:  # pragma: no cover - a core dependency; only a broken install lacks it
            raise DTypeError(
                "bfloat16 on the numpy backend needs the ml_dtypes package (a dependency of ember): "
                "pip install ml_dtypes"
            ) from None
        bf = np.dtype(ml_dtypes.bfloat16)
        _TO_NATIVE[bfloat16] = bf
        _FROM_NATIVE[bf] = bfloat16
        _BF16[0] = bf
        for b in _INSTANCES:
            b._add_float(bf)
        WIDEN_BFLOAT16[0] = bf
    return _BF16[0]


class NumpyBackend(Backend):
    """NumPy arrays on the CPU. bfloat16 is ml_dtypes' NumPy dtype (loaded on first use)."""

    name = "numpy"
    fft_module_name = "scipy.fft"  # faster than numpy.fft (benchmarks/fft.py); numpy.fft without SciPy

    def __init__(self) -> None:
        self.device = CPU.served_by("numpy")
        self.xp = np
        self.array_type = np.ndarray
        self.float_dtypes = _FLOATS
        self.complex_dtypes = _COMPLEX
        self.grad_dtypes = _FLOATS | _COMPLEX
        _INSTANCES.append(self)
        if _BF16[0] is not None:
            self._add_float(_BF16[0])
        self.keep_number = keep_number
        _blas_threads.shorten_spin()  # OpenBLAS's idle threads leave the cores to the kernels' threads sooner
        self._small_gemm = _blas_threads.small_gemm_mnk()

    def _exp_(self, a: Any) -> Any:
        """``a`` becomes ``exp(a)`` in place, ``inf`` past overflow without a warning (the recurrent kernels'
        activations; ``RNNKernels._exp_``): a context of ~1 us where the reference's cap is a pass over ``a``."""
        with np.errstate(over="ignore"):
            return np.exp(a, out=a)

    if _TANH_SIMD:

        def _tanh_to(self, a: Any, out: Any) -> Any:
            """``out`` becomes ``tanh(a)`` by NumPy's own ``tanh`` (SIMD on this CPU: ``_TANH_SIMD``; its error is
            relative, where the reference's ``exp`` formula's is absolute)."""
            return np.tanh(a, out=out)

    def gemm(self, a: Any, b: Any, out: Any = None) -> Any:
        """``np.matmul``: a product OpenBLAS would split, but under ``SMALL_PRODUCT`` multiply-adds, on one OpenBLAS
        thread; a batch of matrices split over Ember's kernel threads instead (``_blas_threads.matmul``)."""
        return _blas_threads.matmul(a, b, out)

    @functools.cached_property
    def special(self) -> Any:  # type: ignore[override]
        """``scipy.special``, imported on first use (SciPy is optional: the special kernels have host code)."""
        try:
            from scipy import special
        except ImportError:  # pragma: no cover - depends on the environment
            return None
        return special

    def asarray(self, data: Any, dtype: DType | None = None) -> np.ndarray:
        if dtype is None:
            return np.asarray(data)
        if dtype in FLOAT8_DTYPES:  # PyTorch's rounding (``_float8.py``)
            self.native_dtype(dtype)
            src = np.asarray(data)
            return src if src.dtype in _float8.NATIVES else self.astype(src, dtype)
        return np.asarray(data, dtype=self.native_dtype(dtype))

    def from_numpy(self, array: np.ndarray) -> np.ndarray:
        return array

    def to_numpy(self, array: np.ndarray) -> np.ndarray:
        if array.dtype is _BF16[0]:  # as on torch: the values exactly, as float32
            return array.astype(np.float32)
        if array.dtype in _float8.NATIVES:
            return _float8.from_float8(array, np.float32)
        return array

    @property
    def supports_bfloat16(self) -> bool:  # type: ignore[override]
        """True where ml_dtypes is installed (a dependency of ember)."""
        try:
            self.native_dtype(bfloat16)
        except DTypeError:  # pragma: no cover - a broken install
            return False
        return True

    def dtype_of(self, array: np.ndarray) -> DType:
        try:
            return _FROM_NATIVE[array.dtype]
        except KeyError:
            if array.dtype.name == "bfloat16" and _BF16[0] is None:  # ml_dtypes' array made outside Ember
                self.native_dtype(bfloat16)
                return _FROM_NATIVE[array.dtype]
            limited = _float8.from_native(array.dtype) or next(
                (d for d in WIDE_UINT_DTYPES if d.name == array.dtype.name), None
            )
            if limited is not None:  # made outside Ember: registered as Ember's own are, so operators refuse it
                self.native_dtype(limited)  # whatever this process did before (it computed until one was made)
                return limited
            raise TypeError(f"NumPy dtype {array.dtype} has no Ember counterpart") from None

    def native_dtype(self, dtype: DType) -> Any:
        try:
            return _TO_NATIVE[dtype]
        except KeyError:
            if dtype in WIDE_UINT_DTYPES:  # NumPy's own; operators refuse them, as most of PyTorch's CPU kernels
                _load_bfloat16()  # (Function.apply then looks at each input's dtype)
                dt = np.dtype(dtype.name)
                _TO_NATIVE[dtype], _FROM_NATIVE[dt] = dt, dtype
                REFUSED_DTYPES.add(dt)
                return dt
            if dtype in FLOAT8_DTYPES:
                _load_bfloat16()  # (Function.apply then looks at each input's dtype: float8 ones are refused)
                dt = _float8.native(dtype)
                _TO_NATIVE[dtype], _FROM_NATIVE[dt] = dt, dtype
                REFUSED_DTYPES.add(dt)
                for b in _INSTANCES:
                    b._add_float(dt)
                return dt
            if dtype is not bfloat16:
                raise
        return _load_bfloat16()

    def _add_float(self, dt: Any) -> None:
        """Count ``dt`` among this backend's floating (and gradient) dtypes."""
        if dt not in self.float_dtypes:
            self.float_dtypes = self.float_dtypes | {dt}
            self.grad_dtypes = self.grad_dtypes | {dt}

    def bfloat16_bits(self, array: Any) -> np.ndarray:
        return np.ascontiguousarray(array).view(np.uint16)

    def bfloat16_from_bits(self, bits: np.ndarray) -> Any:
        return np.ascontiguousarray(bits, dtype=np.uint16).view(self.native_dtype(bfloat16))

    def finfo(self, dtype: Any) -> Any:
        if dtype == _BF16[0]:
            import ml_dtypes

            return ml_dtypes.finfo(dtype)
        return np.finfo(dtype)

    def astype(self, array: np.ndarray, dtype: DType) -> np.ndarray:
        target = self.native_dtype(dtype)
        f8 = _float8.NATIVES
        if f8 and (target in f8 or getattr(array, "dtype", None) in f8):
            if array.dtype == target:
                return array
            if target in f8:  # (PyTorch's rounding: ``_float8.py``)
                src = _float8.from_float8(array, np.float32) if array.dtype in f8 else array
                return _float8.to_float8(src, dtype)
            return _float8.from_float8(array, target)
        return array.astype(target, copy=False)

    def pin_memory(self, array: Any) -> Any:
        """A copy of ``array`` in page-locked memory from CuPy, when CuPy serves a GPU in this process (it is then
        imported); unchanged otherwise (PyTorch pins only where CUDA is available)."""
        from .cupy_backend import unavailable_reason

        if "cupy" not in sys.modules or unavailable_reason() is not None or self.is_pinned(array):
            return array
        import cupyx

        out = cupyx.empty_pinned(array.shape, array.dtype)
        out[...] = array
        return out

    def is_pinned(self, array: Any) -> bool:
        cupy = sys.modules.get("cupy")
        if cupy is None:
            return False
        owner = array
        while isinstance(owner, np.ndarray):  # a view's base chain ends at the buffer's owner
            owner = owner.base
        if isinstance(owner, memoryview):
            owner = owner.obj
        return isinstance(owner, cupy.cuda.PinnedMemoryPointer)

    def is_view_of(self, array: Any, base: Any) -> bool:
        return isinstance(array, np.ndarray) and np.may_share_memory(array, base)

    def is_plain(self, array: Any) -> bool:
        flags = array.flags
        return bool(flags.writeable and flags.c_contiguous)

    def index_add(self, target: np.ndarray, index: Any, values: Any) -> None:
        rows = index[0] if isinstance(index, tuple) and len(index) == 1 else index
        if (
            isinstance(rows, np.ndarray)
            and rows.dtype.kind in "iu"
            and target.ndim > 1
            and target.flags.c_contiguous
            and isinstance(values, np.ndarray)
            and values.shape == rows.shape + target.shape[1:]
            and rows.size
            and -target.shape[0] <= rows.min()
            and rows.max() < target.shape[0]
        ):
            # whole rows (an embedding's gradient): add.at over rows costs ~20 ns an element; over the flat
            # elements, one key each, it takes its 1-d fast path (~6x faster) and adds in the same order (the same
            # bits). Rows out of range take add.at's own path and error.
            inner = target.size // target.shape[0] if target.shape[0] else 0
            keys = rows.reshape(-1, 1).astype(np.intp) * inner + np.arange(inner, dtype=np.intp)
            np.add.at(target.reshape(-1), keys.reshape(-1), values.reshape(-1))
            return
        np.add.at(target, index, values)

    def spmm(self, indices: Any, values: Any, shape: tuple[int, int], dense: Any) -> Any:
        # SciPy's CSR product when SciPy is installed (it is optional), else the reference scatter-add
        try:
            from scipy import sparse as sp
        except ImportError:  # pragma: no cover - depends on the environment
            sp = None
        if sp is None or values.dtype == np.float16 or dense.dtype == np.float16:
            return super().spmm(indices, values, shape, dense)
        m = sp.csr_matrix((values, (indices[0], indices[1])), shape=shape)
        return np.asarray(m @ dense, dtype=np.result_type(values, dense))

    # NumPy's linalg computes float32/complex64 in double precision (2x the time of a 512² QR, SVD or eigh in
    # single precision, benchmarks/workloads/linalg_*); SciPy calls LAPACK's single-precision routines, as PyTorch
    # does. Small matrices stay with NumPy, whose batched loop runs in C.
    def _single_precision_linalg(self, a: Any) -> Any:
        if a.dtype not in (np.float32, np.complex64) or min(a.shape[-2:]) < _SCIPY_LINALG_MIN or a.size == 0:
            return None
        try:
            from scipy import linalg
        except ImportError:  # pragma: no cover - SciPy is optional
            return None
        return linalg

    def svd(self, a: Any, full_matrices: bool) -> tuple[Any, Any, Any]:
        sl = self._single_precision_linalg(a)
        if sl is None:
            base = super().svd
            return _split_batch(a, lambda m: base(m, full_matrices), 3)
        return _each_matrix(a, lambda m: sl.svd(m, full_matrices=full_matrices), 3)

    def qr(self, a: Any, complete: bool) -> tuple[Any, Any]:
        sl = self._single_precision_linalg(a)
        if sl is None:
            base = super().qr
            return _split_batch(a, lambda m: base(m, complete), 2)
        return _each_matrix(a, lambda m: sl.qr(m, mode="full" if complete else "economic"), 2)

    def eigh(self, a: Any, upper: bool) -> tuple[Any, Any]:
        sl = self._single_precision_linalg(a)
        if sl is None:
            base = super().eigh
            return _split_batch(a, lambda m: base(m, upper), 2)
        return _each_matrix(a, lambda m: sl.eigh(m, lower=not upper, driver="evd"), 2)

    def sliding_window(self, array: np.ndarray, window: tuple[int, ...], axes: tuple[int, ...]) -> np.ndarray:
        return sliding_window_view(array, window, axis=axes)

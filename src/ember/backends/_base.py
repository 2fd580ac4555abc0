"""The backend interface (the spec's Mat): everything a tensor asks of its array library."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._device import device
from .._dtype import DType, bfloat16, float64
from .._errors import OutOfRangeError
from ._kernels_activation import ActivationKernels
from ._kernels_attention import AttentionKernels
from ._kernels_complex import ComplexKernels
from ._kernels_conv import ConvKernels
from ._kernels_dropout import DropoutKernels
from ._kernels_fft import FFTKernels
from ._kernels_linalg import LinalgKernels
from ._kernels_loss import LossKernels
from ._kernels_norm import NormKernels
from ._kernels_optim import OptimKernels
from ._kernels_pad import PadKernels
from ._kernels_pool import PoolKernels
from ._kernels_random import RandomKernels
from ._kernels_rnn import RNNKernels
from ._kernels_special import SpecialKernels
from ._kernels_special_fns import SpecialFnKernels

#: The ``xp`` names operator code may use: NumPy's names (and signatures), the contract every backend's ``xp``
#: namespace meets (``numpy`` itself, ``cupy``, ``torch/xp.py``). Code above ``backends/`` calls nothing else on
#: ``xp``, and no NumPy function directly (``tests/backends/test_xp_contract.py`` checks both, and that each
#: backend's namespace has every name). Names reached through ``getattr`` (the comparison, bitwise and
#: no-gradient factories of ``ops/``) are listed too. A new name: add it here and to ``torch/xp.py``.
XP_NAMES = frozenset({
    "abs", "add", "all", "angle", "any", "arange", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2",
    "arctanh", "argmax", "argmin", "argsort", "array", "asarray", "ascontiguousarray", "astype", "bitwise_and",
    "bitwise_or", "bitwise_xor", "bool_", "broadcast_arrays", "broadcast_to", "ceil", "clip", "concatenate", "conj",
    "copy", "copysign", "cos", "cosh", "count_nonzero", "cumprod", "cumsum", "diagonal", "einsum", "empty", "equal",
    "exp", "exp2", "expand_dims", "expm1", "eye", "finfo", "flip", "float32", "float64", "floor", "floor_divide",
    "fmax", "fmin", "fmod", "frexp", "from_dlpack", "full", "full_like", "gcd", "greater", "greater_equal",
    "heaviside", "hypot",
    "iinfo", "imag", "inf", "int32", "int64", "int8", "invert", "isclose", "isfinite", "isin", "isinf", "isnan",
    "isneginf", "isposinf", "ix_", "lcm", "left_shift", "less", "less_equal", "linalg", "linspace", "log", "log10",
    "log1p", "log2", "logaddexp", "logaddexp2", "logical_and", "logical_not", "logical_or", "logical_xor", "matmul",
    "max", "maximum", "mean", "min", "minimum", "moveaxis", "multiply", "negative", "nextafter", "nonzero",
    "not_equal", "ones", "power", "put_along_axis", "real", "reciprocal", "remainder", "repeat", "reshape",
    "result_type", "right_shift", "roll", "round", "searchsorted", "sign", "signbit", "sin", "sinh", "size", "sqrt",
    "square", "squeeze", "stack", "subtract", "sum", "swapaxes", "take", "take_along_axis", "tan", "tanh",
    "transpose", "tril", "triu", "true_divide", "trunc", "unique", "unravel_index", "where", "zeros", "zeros_like",
})  # fmt: skip
#: the ``xp.linalg`` names operator code may use
XP_LINALG_NAMES = frozenset({"cholesky", "det", "eigh", "inv", "norm", "qr", "slogdet", "solve", "svd"})


#: ``[dtype]`` once a backend whose bfloat16 operators must compute in float32 (NumPy: ml_dtypes' ufuncs round
#: each call) made its bfloat16 array dtype
#: (one object: arrays' ``dtype is`` it), else ``[None]``: from then on ``Function.apply`` looks for such inputs
#: (``autograd/_bf16.py``)
WIDEN_BFLOAT16: list[Any] = [None]
#: the array dtypes of PyTorch's limited-support dtypes (float8, uint16/32/64) a backend made whose operators would
#: compute in them (NumPy's); an operator other than a view, cast or copy refuses them (``autograd/_bf16.py``)
REFUSED_DTYPES: set[Any] = set()


class Backend(
    ConvKernels,
    PoolKernels,
    NormKernels,
    ActivationKernels,
    LossKernels,
    AttentionKernels,
    OptimKernels,
    SpecialKernels,
    PadKernels,
    LinalgKernels,
    RandomKernels,
    DropoutKernels,
    SpecialFnKernels,
    ComplexKernels,
    FFTKernels,
    RNNKernels,
):
    """One array library on one device.

    Operators compute through ``backend.xp`` — a namespace with NumPy's function names (``exp``,
    ``matmul``, ``sum(axis=, keepdims=)``, ``where`` ...) — plus the few kernels below that NumPy
    spells differently from other libraries. A new backend implements this class in one file and
    registers itself in ``ember.backends``. The array kernels (convolution, pooling ...) have one
    reference implementation written against ``xp`` (``_kernels_*.py``), which NumPy and CuPy share;
    a backend with faster native kernels overrides them (torch: ``torch/kernels.TorchKernels``).
    """

    name: str = "base"
    device: device
    xp: Any
    array_type: type
    supports_bfloat16: bool = False
    #: the device types this library can serve ("cpu", "cuda")
    device_types: tuple[str, ...] = ("cpu",)
    #: the library's floating dtypes (``array.dtype in backend.float_dtypes`` is the hot-path test)
    float_dtypes: frozenset[Any] = frozenset()
    #: the library's complex dtypes
    complex_dtypes: frozenset[Any] = frozenset()
    #: the dtypes a gradient flows through (floating and complex): ``Function.apply``'s hot-path test
    grad_dtypes: frozenset[Any] = frozenset()
    #: ``keep_number(x, v)``: the Python number ``v`` as the operand the library computes ``x (op) v`` fastest
    #: with, to the same bits (NumPy: a 0-d array of ``x``'s dtype made once); None where the library takes
    #: Python numbers as they are (the arithmetic operators then pass them unchanged)
    keep_number: Any = None
    #: ``kernel_region()``: a context the engine holds while it runs first-order array rules (no user code
    #: inside), for a library that can then skip bookkeeping of its own (torch: its autograd dispatch layer,
    #: ~0.08 µs a kernel); None where there is none
    kernel_region: Any = None

    # -- arrays and dtypes -------------------------------------------------------------------
    def asarray(self, data: Any, dtype: DType | None = None) -> Any:
        raise NotImplementedError

    def from_numpy(self, array: np.ndarray) -> Any:
        raise NotImplementedError

    def to_numpy(self, array: Any) -> np.ndarray:
        raise NotImplementedError

    def dtype_of(self, array: Any) -> DType:
        raise NotImplementedError

    def native_dtype(self, dtype: DType) -> Any:
        raise NotImplementedError

    def astype(self, array: Any, dtype: DType) -> Any:
        raise NotImplementedError

    def gemm(self, a: Any, b: Any, out: Any = None) -> Any:
        """``xp.matmul(a, b)`` (into ``out``): the product of the convolution kernels, ``linear`` and ``matmul``
        (NumPy's runs a small one on one OpenBLAS thread, and splits a batch over Ember's threads:
        ``_blas_threads.matmul``)."""
        return self.xp.matmul(a, b) if out is None else self.xp.matmul(a, b, out=out)

    def device_name(self) -> str:
        """A human-readable name of this backend's device (``ember.cuda.get_device_name``)."""
        return f"{self.name} {self.device}"

    def is_view_of(self, array: Any, base: Any) -> bool:
        """True when ``array`` shares memory with ``base`` (used to keep version counters shared)."""
        raise NotImplementedError

    def is_plain(self, array: Any) -> bool:
        """True when ``array`` is writable and contiguous (not a broadcast or strided view)."""
        return True

    def strides(self, array: Any) -> tuple[int, ...]:
        """Steps in elements between neighbours along each dim."""
        item = array.dtype.itemsize
        return tuple(s // item for s in array.strides)

    def address(self, array: Any) -> int:
        """The address of ``array``'s first element."""
        return int(array.__array_interface__["data"][0])

    def storage_nbytes(self, array: Any) -> int:
        """The size in bytes of the memory ``array`` views (its root array's)."""
        root = array
        while isinstance(root.base, type(array)):
            root = root.base
        return int(root.nbytes)

    def storage_offset(self, array: Any) -> int:
        """How many elements ``array``'s first element lies past the start of the memory it views."""
        root = array
        while isinstance(root.base, type(array)):
            root = root.base
        return (self.address(array) - self.address(root)) // array.dtype.itemsize

    def diagonal(self, array: Any, offset: int, dim1: int, dim2: int) -> Any:
        """A writable view of the diagonal of dims ``dim1`` < ``dim2`` as a new last dim (NumPy's own is read-only:
        PyTorch's ``x.diagonal().fill_(0)`` writes into ``x``)."""
        n_dims = array.ndim
        start = [slice(None)] * n_dims
        start[dim2 if offset >= 0 else dim1] = slice(abs(offset), None)
        corner = array[tuple(start)]  # the diagonal's first element is this view's
        n = max(0, min(corner.shape[dim1], corner.shape[dim2]))
        st = self.strides(corner)
        keep = [d for d in range(n_dims) if d not in (dim1, dim2)]
        shape = tuple(corner.shape[d] for d in keep) + (n,)
        return self.as_strided(corner, shape, tuple(st[d] for d in keep) + (st[dim1] + st[dim2],))

    def as_strided(self, array: Any, shape: tuple[int, ...], strides: tuple[int, ...]) -> Any:
        """A view of ``array``'s memory (from its first element) with ``shape`` and ``strides`` in elements."""
        item = array.dtype.itemsize
        return self.xp.lib.stride_tricks.as_strided(array, shape, tuple(s * item for s in strides))

    def is_contiguous(self, array: Any) -> bool:
        """True when ``array`` is laid out in C order without gaps."""
        return bool(array.flags.c_contiguous)

    def transfer(self, array: Any, target: Backend, non_blocking: bool = False) -> Any:
        """A copy of ``array`` on ``target`` (another device or backend), through host memory.

        Backends that can copy directly between their devices override this.
        """
        target.native_dtype(self.dtype_of(array))  # a dtype the target lacks: a clear DTypeError
        if self.dtype_of(array) is bfloat16:  # (no common host type: the bits)
            return target.bfloat16_from_bits(np.array(self.bfloat16_bits(array), copy=True))
        host = self.to_numpy(array)
        if target.device.type == "cpu" and self.device.type == "cpu":
            host = np.array(host, copy=True)  # a move never shares memory across backends
        return target.astype(target.from_numpy(host), self.dtype_of(array))

    def finfo(self, dtype: Any) -> Any:
        """``xp.finfo`` of the library's floating ``dtype`` (bfloat16 on NumPy: ml_dtypes')."""
        return self.xp.finfo(dtype)

    def bfloat16_bits(self, array: Any) -> np.ndarray:
        """A bfloat16 array's bits as a host uint16 array (records store them exactly)."""
        raise self._no_bfloat16()

    def bfloat16_from_bits(self, bits: np.ndarray) -> Any:
        """The bfloat16 array whose bits are the host uint16 array ``bits``."""
        raise self._no_bfloat16()

    def _no_bfloat16(self) -> Exception:
        try:
            self.native_dtype(bfloat16)
        except Exception as e:  # the backend's own DTypeError, naming one that has bfloat16
            return e
        return NotImplementedError(f"{self.name} backend: bfloat16 bits")

    def pin_memory(self, array: Any) -> Any:
        """``array`` in page-locked host memory (unchanged where the backend has no accelerator)."""
        return array

    def is_pinned(self, array: Any) -> bool:
        return False

    def synchronize(self) -> None:
        """Wait until all work queued on this backend's device has finished (no-op on the host)."""

    # -- random numbers (the generator is a numpy Generator so runs reproduce across backends) --
    def uniform(self, gen: np.random.Generator, shape: tuple[int, ...], dtype: DType) -> Any:
        u = gen.random(shape, dtype=np.float64)
        if dtype is bfloat16:  # multiples of 2**-8 (bfloat16's 8 bits), as PyTorch draws them: never 1.0
            u = np.floor(u * 256.0) / 256.0
        return self.astype(self.from_numpy(u), dtype)

    def normal(self, gen: np.random.Generator, shape: tuple[int, ...], dtype: DType) -> Any:
        return self.astype(self.from_numpy(gen.standard_normal(shape, dtype=np.float64)), dtype)

    def trunc_normal(
        self,
        gen: np.random.Generator,
        shape: tuple[int, ...],
        dtype: DType,
        mean: float,
        std: float,
        a: float,
        b: float,
    ) -> Any:
        """N(mean, std²) samples conditioned on [a, b], by the inverse CDF of uniform ones (no redraw loop, so no
        host sync and no hang far in a tail: there values collapse onto the nearer bound, as in PyTorch)."""
        scale = std * math.sqrt(2.0)
        lo, hi = math.erf((a - mean) / scale), math.erf((b - mean) / scale)
        u = self.uniform(gen, shape, float64)
        x = mean + scale * self.erfinv(lo + (hi - lo) * u)
        return self.astype(self.xp.clip(x, a, b), dtype)

    def randint(self, gen: np.random.Generator, low: int, high: int, shape: tuple[int, ...], dtype: DType) -> Any:
        return self.astype(self.from_numpy(gen.integers(low, high, size=shape, dtype=np.int64)), dtype)

    def standard_gamma(self, gen: np.random.Generator, alpha: Any) -> Any:
        """Gamma(alpha, 1) samples of ``alpha``'s shape and dtype."""
        a = self.to_numpy(alpha).astype(np.float64)
        return self.astype(self.from_numpy(gen.standard_gamma(a)), self.dtype_of(alpha))

    # -- kernels that array libraries spell differently -------------------------------------
    def index_add(self, target: Any, index: Any, values: Any) -> None:
        """``target[index] += values`` with repeated indices accumulated (NumPy's ``add.at``)."""
        raise NotImplementedError

    def check_index(self, shape: tuple[int, ...], index: Any) -> None:
        """Raise ``OutOfRangeError`` when an integer index array of ``index`` (as for ``array[index]``) is out of
        range for ``shape``: one read-back of a flag. For backends whose kernels do not check themselves
        (``kernels_check_indices`` False: CuPy wraps such an index around, NumPy raises)."""
        xp = self.xp
        bad, sizes = None, []
        for dim, n, it in index_arrays(shape, index):
            flag = xp.any((it < -n) | (it >= n))
            bad = flag if bad is None else bad | flag
            sizes.append(f"dim {dim} of size {n}")
        if bad is not None and bool(bad):
            raise OutOfRangeError(f"index out of range for {' or '.join(sizes)} (tensor of shape {tuple(shape)})")

    def check_known_index(self, shape: tuple[int, ...], index: Any, op: str = "") -> None:
        """Raise ``OutOfRangeError`` when an index array of ``index`` (as for ``array[index]``) whose values the
        host knows without a device sync (``known_range``) is out of range for ``shape``: on an accelerator the
        kernel would otherwise fail on the device (a device-side assert leaves the process's CUDA context
        unusable). An index computed on such a device is not read back: the kernel reports it."""
        for d, n, it in index_arrays(shape, index):
            r = self.known_range(it) if it.ndim else None
            if r is not None and (r[0] < -n or r[1] >= n):
                raise OutOfRangeError(
                    f"{op + ': ' if op else ''}index {r[1] if r[1] >= n else r[0]} is out of range for dim {d} of "
                    f"size {n} (tensor of shape {tuple(shape)})"
                )

    def scatter_reduce_at(self, x: Any, index: Any, values: Any, reduce: str) -> Any:
        """A copy of ``x`` with ``values`` combined in at ``index`` by ``reduce`` (prod, amax, amin);
        repeated indices combine (NumPy's ``ufunc.at``)."""
        out = self.xp.copy(x)
        ufunc = {"prod": self.xp.multiply, "amax": self.xp.maximum, "amin": self.xp.minimum}[reduce]
        ufunc.at(out, index, values)
        return out

    def spmm(self, indices: Any, values: Any, shape: tuple[int, int], dense: Any) -> Any:
        """``S @ dense`` for the COO matrix S = (``indices`` (2, nnz), ``values`` (nnz,), ``shape``); duplicates add.

        This reference scatter-add runs on any backend; backends with a sparse library override it.
        """
        xp = self.xp
        out = xp.zeros((shape[0], dense.shape[1]), dtype=xp.result_type(values, dense))
        self.index_add(out, indices[0], values[:, None] * dense[indices[1]])
        return out

    def sliding_window(self, array: Any, window: tuple[int, ...], axes: tuple[int, ...]) -> Any:
        """A read-only view of every window of ``array`` along ``axes`` (windows appended as last dims)."""
        raise NotImplementedError

    @property
    def cheap_sync(self) -> bool:
        """True when reading a value back (``item()``, a range check) does not wait for a device.

        Code above the backend layer runs optional checks and host-side branches only when this holds;
        on an accelerator it takes the branch-free path instead (tests force it off on the CPU to run it).
        """
        return self._cheap_sync if self._cheap_sync is not None else self.device.type == "cpu"

    _cheap_sync: bool | None = None

    #: whether the library's indexing kernels report an out-of-range index themselves (NumPy raises, PyTorch's
    #: CUDA kernels stop with a device-side assert); CuPy's wrap it around silently
    kernels_check_indices: bool = True
    #: whether ``nll_loss``'s kernel raises ``IndexError`` itself for a target outside ``[0, C)`` (not the ignore
    #: index) where ``host_checks`` holds: Ember then checks the targets only after that error, to word it (torch
    #: on the CPU; no read back and no guard in a compiled step)
    nll_kernel_checks_targets: bool = False

    @property
    def host_checks(self) -> bool:
        """True when Ember checks indices and values on the host before a kernel (an error, never a wrong answer).

        Where reading a value back is cheap; and on a device whose kernels would not report a bad index or
        value themselves (CuPy), at the cost of a wait for the device. Elsewhere (PyTorch on CUDA) the kernel
        reports it.
        """
        return self.cheap_sync or not self.kernels_check_indices

    def known_range(self, array: Any) -> tuple[int, int] | None:
        """The smallest and largest value of a non-empty integer ``array`` when the host knows them without
        waiting for a device, else None.

        Computed where ``host_checks`` holds; an accelerator backend whose kernels report a bad index
        themselves may remember them from the host data it uploaded the array from (torch does), so that
        index checks there cost no device sync.
        """
        if not self.host_checks:
            return None
        return int(self.xp.min(array)), int(self.xp.max(array))

    def __repr__(self) -> str:
        return f"<{self.name} backend on {self.device}>"


def _is_bool(it: Any) -> bool:
    return str(getattr(it, "dtype", "")) in ("bool", "torch.bool")


def index_arrays(shape: tuple[int, ...], index: Any) -> list[tuple[int, int, Any]]:
    """``(dim, size, array)`` for each non-empty integer index array of ``index`` (as for ``array[index]``):
    the dim of ``shape`` it indexes (``None`` adds none, ``...`` the dims the rest leaves, a bool mask its own)."""
    items = index if isinstance(index, tuple) else (index,)
    dims = [it.ndim if _is_bool(it) else 0 if it is None or it is Ellipsis else 1 for it in items]
    out, d = [], 0
    for it, k in zip(items, dims, strict=True):
        if it is Ellipsis:
            d += len(shape) - sum(dims)
            continue
        if hasattr(it, "shape") and not _is_bool(it) and d < len(shape) and math.prod(it.shape):
            out.append((d, shape[d], it))
        d += k
    return out

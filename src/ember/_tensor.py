"""``Tensor``: an array on a backend, plus what autograd needs (grad, creator, version counter)."""

from __future__ import annotations

import functools
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ._device import device as _device_cls
from ._dtype import DType, as_dtype, get_default_dtype
from ._errors import DeviceError, DTypeError, ShapeError

__all__ = ["Tensor"]

_bool = bool


class Tensor:
    """A multi-dimensional array with reverse-mode autodiff.

    Value semantics (spec §2.2): assignment shares the tensor, operations return new tensors, methods
    ending in ``_`` modify in place, and views (reshape of a contiguous tensor, transpose, basic
    slicing) share storage. A version counter, shared by a tensor and its views, turns an in-place
    change to a value saved for backward into an error instead of a wrong gradient.
    """

    __slots__ = (
        "__weakref__",
        "_backend",
        "_creator",
        "_data",
        "_grad",
        "_hooks",
        "_out_idx",
        "_requires_grad",
        "_retain",
        "_vcl",
        "_view",
    )
    __array_priority__ = 1000  # numpy defers ``ndarray + Tensor`` to Tensor.__radd__
    #: set once any non-leaf tensor is detached in place: backward then checks saved inputs for it
    _detached_nonleaf: _bool = False

    def __init__(
        self, data: Any = (), *sizes: int, dtype: Any = None, device: Any = None, requires_grad: _bool = False
    ) -> None:
        from ._creation import _to_array
        from ._legacy import tensor_init_args

        data, dtype = tensor_init_args(data, sizes, dtype)
        self._data, self._backend = _to_array(data, dtype, device)
        self._requires_grad = False
        self._grad: Tensor | None = None
        self._creator: Any = None
        self._out_idx = 0
        self._vcl: list[int] | None = None
        self._view: Any = None
        self._retain = False
        self._hooks: list[Callable[[Tensor], Any]] | None = None
        if requires_grad:
            self.requires_grad_(True)

    @classmethod
    def _make(cls, data: Any, backend: Any) -> Tensor:
        t = object.__new__(cls)
        t._data = data
        t._backend = backend
        t._requires_grad = False
        t._grad = None
        t._creator = None
        t._out_idx = 0
        t._vcl = None
        t._view = None
        t._retain = False
        t._hooks = None
        return t

    # -- properties -------------------------------------------------------------------------------
    @property
    def _vc(self) -> list[int]:
        """The version counter ``[version]``, shared with views and detached aliases.

        Made on first use: most tensors are never written in place, shared or saved, and one list
        fewer per result is one allocation fewer for the cyclic GC. Hot paths read ``_vcl`` (None:
        version 0, not shared yet).
        """
        vc = self._vcl
        if vc is None:
            vc = self._vcl = [0]
        return vc

    @_vc.setter
    def _vc(self, vc: list[int]) -> None:
        self._vcl = vc

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._data.shape)

    def size(self, dim: int | None = None) -> Any:
        """The shape, or the length of dimension ``dim``."""
        return self.shape if dim is None else self.shape[dim]

    @property
    def dtype(self) -> DType:
        return self._backend.dtype_of(self._data)

    @property
    def device(self) -> _device_cls:
        return self._backend.device

    @property
    def ndim(self) -> int:
        return len(self._data.shape)

    def dim(self) -> int:
        return len(self._data.shape)

    def numel(self) -> int:
        n = 1
        for s in self._data.shape:
            n *= s
        return n

    def nelement(self) -> int:
        """``numel()`` (PyTorch's older name)."""
        return self.numel()

    @property
    def nbytes(self) -> int:
        return self.numel() * self.dtype.itemsize

    def element_size(self) -> int:
        return self.dtype.itemsize

    #: dense (strided) layout; sparse COO tensors are ``ember.sparse.SparseTensor``
    is_sparse = False

    @property
    def is_leaf(self) -> _bool:
        if self._view is not None:
            _refresh_view(self)
        return self._creator is None

    @property
    def grad_fn(self) -> Any:
        if self._view is not None:
            _refresh_view(self)
        return self._creator

    def is_floating_point(self) -> _bool:
        return self._data.dtype in self._backend.float_dtypes

    def is_complex(self) -> _bool:
        return self._data.dtype in self._backend.complex_dtypes

    @property
    def real(self) -> Tensor:
        """The real part: a writable view of a complex tensor; a real tensor itself."""
        return _ops.real(self)

    @real.setter
    def real(self, value: Any) -> None:
        _ops.real(self).copy_(value)

    @property
    def imag(self) -> Tensor:
        """The imaginary part of a complex tensor (a writable view)."""
        return _ops.imag(self)

    @imag.setter
    def imag(self, value: Any) -> None:
        _ops.imag(self).copy_(value)

    @property
    def T(self) -> Tensor:  # noqa: N802 - PyTorch's name
        return _permute(self, tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self) -> Tensor:  # noqa: N802 - PyTorch's name
        return _transpose(self, -2, -1)

    @property
    def mH(self) -> Tensor:  # noqa: N802 - PyTorch's name
        """The conjugate transpose of the last two dims."""
        return _ops.adjoint(self)

    @property
    def H(self) -> Tensor:  # noqa: N802 - PyTorch's name
        """The conjugate transpose of a matrix (of a 0-d tensor: its conjugate, as PyTorch, which deprecates it)."""
        if self.ndim == 0:
            return self.conj()
        if self.ndim != 2:
            raise ShapeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor.")
        return _ops.adjoint(self)

    @property
    def data(self) -> Tensor:
        """This tensor's values, detached from the graph (shares storage)."""
        return self.detach()

    def __len__(self) -> int:
        if not self._data.shape:
            raise TypeError("len() of a 0-d tensor")
        return int(self._data.shape[0])

    def __iter__(self) -> Iterator[Tensor]:
        for i in range(len(self)):
            yield self[i]

    def __hash__(self) -> int:
        return id(self)

    def __bool__(self) -> _bool:
        if self.numel() != 1:
            raise RuntimeError(
                f"the truth value of a tensor with {self.numel()} elements (shape {self.shape}) is "
                "ambiguous; use .any() or .all()"
            )
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __index__(self) -> int:
        if self.dtype.kind in "fc" or self.numel() != 1:
            raise TypeError(f"only integer tensors of a single element can be an index, got {self.dtype}{self.shape}")
        return int(self.item())

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    # -- conversion ------------------------------------------------------------------------------
    def item(self) -> Any:
        """The value of a one-element tensor as a Python number."""
        if self.numel() != 1:
            raise ShapeError(f"item(): only a one-element tensor converts to a Python number, got shape {self.shape}")
        return self._backend.to_numpy(self._data).reshape(()).item()

    def tolist(self) -> Any:
        return self._backend.to_numpy(self._data).tolist()

    def numpy(self) -> np.ndarray:
        """The values as a NumPy array (shares memory on the CPU backend; refuses a tensor needing grad)."""
        if self._requires_grad:
            raise RuntimeError("numpy(): call .detach().numpy() on a tensor that requires grad")
        return np.asarray(self._backend.to_numpy(self._data))

    def to(
        self, *args: Any, dtype: Any = None, device: Any = None, non_blocking: _bool = False, copy: _bool = False,
        memory_format: Any = None,
    ) -> Tensor:  # fmt: skip
        """Convert dtype and/or device: ``t.to(ember.float64)``, ``t.to("cuda")``, ``t.to(other)``.

        A device string is served by the selected backend (``ember.backends.use``); another tensor's
        ``.device`` (or a Backend) moves this tensor to that tensor's backend. ``non_blocking=True``
        lets a host-to-accelerator copy from pinned memory overlap with computation. ``memory_format`` is
        accepted (Ember's arrays are row-major; ``channels_last`` is a layout hint it does not need).
        """
        for a in args:
            if isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif _is_device(a):
                device = a
            else:
                dtype = a
        out = self
        if device is not None:
            out = _to_device(out, device, non_blocking)
        if dtype is not None:
            d = as_dtype(dtype)
            if d is not out.dtype:
                out = _cast(out, d)
        if copy and out is self:
            out = self.clone()
        return out

    def cpu(self) -> Tensor:
        """This tensor on the CPU (the selected CPU backend when it is elsewhere now)."""
        return self if self._backend.device.type == "cpu" else self.to(device="cpu")

    def cuda(self, device: Any = None, non_blocking: _bool = False) -> Tensor:
        """This tensor on a CUDA device (``device``: an index, ``"cuda:N"`` or a device)."""
        if device is None:
            device = "cuda"
        elif isinstance(device, int) and not isinstance(device, _bool):
            device = f"cuda:{device}"
        return self.to(device=device, non_blocking=non_blocking)

    @property
    def is_cuda(self) -> _bool:
        return self._backend.device.type == "cuda"

    @property
    def is_cpu(self) -> _bool:
        return self._backend.device.type == "cpu"

    def get_device(self) -> int:
        """The CUDA device index, or -1 on the CPU (PyTorch's convention)."""
        d = self._backend.device
        return -1 if d.type == "cpu" else int(d.index or 0)

    def pin_memory(self) -> Tensor:
        """This tensor in page-locked host memory, for fast ``non_blocking`` copies to CUDA."""
        return _pin(self)

    def is_pinned(self) -> _bool:
        return self._backend.is_pinned(self._data)

    def type(self, dtype: Any = None) -> Any:
        """``"ember.FloatTensor"`` (the legacy type name), or a copy converted to ``dtype``."""
        from ._legacy import legacy_type_name

        if dtype is None:
            return legacy_type_name(self)
        return self.to(getattr(dtype, "dtype", dtype))

    def float(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="float32")

    def double(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="float64")

    def half(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="float16")

    def bfloat16(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="bfloat16")

    def cfloat(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="complex64")

    def cdouble(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="complex128")

    def long(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="int64")

    def int(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="int32")

    def bool(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="bool")

    def byte(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="uint8")

    def char(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="int8")

    def short(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="int16")

    def clone(self, memory_format: Any = None) -> Tensor:
        return _clone(self)

    def contiguous(self, memory_format: Any = None) -> Tensor:
        return _contiguous(self)

    def is_contiguous(self) -> _bool:
        return self._backend.is_contiguous(self._data)

    def detach(self) -> Tensor:
        """A tensor sharing this one's storage and version counter, cut from the graph."""
        t = Tensor._make(self._data, self._backend)
        t._vc = self._vc
        return t

    def detach_(self) -> Tensor:
        """Cut this tensor from the graph in place (not a view: use ``detach()`` for those).

        Nodes already recorded keep their edge through it; one that saved its value for the gradient
        refuses to run backward (PyTorch's rule), and a detached leaf no longer collects a gradient.
        """
        if self._view is not None:
            raise RuntimeError("detach_(): can't detach views in place; use detach() instead")
        if self._creator is not None:
            Tensor._detached_nonleaf = True  # backward checks the saved inputs from now on
        self._creator = None
        self._requires_grad = False
        return self

    # -- autograd ----------------------------------------------------------------------------------
    @property
    def requires_grad(self) -> _bool:
        """Whether gradients flow to this tensor; settable on leaves only (floating dtypes), as in PyTorch."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: _bool) -> None:
        if self._creator is not None:
            raise RuntimeError(
                f"requires_grad = {value}: you can only change requires_grad of leaf tensors; this one was computed "
                "(its grad_fn is set): use .detach() for a tensor that does not require grad"
            )
        if value and self._data.dtype not in self._backend.grad_dtypes:
            raise DTypeError(
                f"only Tensors of floating point and complex dtype can require gradients, got {self.dtype}"
            )
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: _bool = True) -> Tensor:
        """Mark a leaf tensor to collect gradients (floating and complex dtypes only); True on a computed tensor
        is a no-op, False on one is refused (as in PyTorch)."""
        if not (requires_grad and self._creator is not None):
            self.requires_grad = requires_grad
        return self

    @property
    def grad(self) -> Tensor | None:
        """The gradient accumulated by ``backward`` (leaves, and tensors that ``retain_grad()``).

        Reading it on a non-leaf tensor that does not retain its gradient warns, as PyTorch does (it is
        always None there); assigning one checks it is a Tensor of this tensor's shape, dtype and device.
        """
        g = self._grad
        if g is None and self._creator is not None and not self._retain:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed: it is not filled by "
                "backward(). Call .retain_grad() on it to keep its gradient, or use the leaf tensor it was "
                "computed from.",
                UserWarning,
                stacklevel=2,
            )
        return g

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            kind = type(self).__name__
            noun = "parameter" if kind == "Param" else "tensor"
            if not isinstance(value, Tensor):
                raise TypeError(f"{kind}.grad: expected a Tensor or None, got {type(value).__name__}")
            if value.shape != self.shape:
                raise ShapeError(f"{kind}.grad: assigned a gradient of shape {tuple(value.shape)} to a {noun} of "
                                 f"shape {tuple(self.shape)}")  # fmt: skip
            if value.dtype != self.dtype:
                raise DTypeError(f"{kind}.grad: assigned a gradient of dtype {value.dtype} to a {noun} of dtype "
                                 f"{self.dtype}")  # fmt: skip
            if value._backend is not self._backend:
                raise DeviceError(f"{kind}.grad: assigned a gradient on {value.device} ({value._backend.name} "
                                  f"backend) to a {noun} on {self.device} ({self._backend.name} backend)")  # fmt: skip
        self._grad = value

    def retain_grad(self) -> None:
        """Keep this non-leaf tensor's gradient in ``.grad`` after backward."""
        if self._view is not None:
            _refresh_view(self)
        if not self.requires_grad:
            raise RuntimeError("retain_grad() on a tensor that does not require grad")
        if self._creator is not None:
            self._retain = True
            self._creator._ref_output(self)

    @property
    def retains_grad(self) -> _bool:
        return self._retain

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> Any:
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned tensor replaces it."""
        if self._view is not None:
            _refresh_view(self)
        if not self.requires_grad:
            raise RuntimeError("register_hook() on a tensor that does not require grad")
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(hook)
        if self._creator is not None:
            self._creator._ref_output(self)
        from .autograd._engine import RemovableHandle

        return RemovableHandle(self._hooks, hook)

    def backward(
        self, gradient: Tensor | None = None, retain_graph: _bool | None = None, create_graph: _bool = False
    ) -> Any:
        """Accumulate d(self)/d(leaf) into each leaf's ``.grad``; returns the Gradients as a value."""
        from .autograd._engine import backward

        return backward([self], [gradient], retain_graph=retain_graph, create_graph=create_graph)

    def zero_(self) -> Tensor:
        return self.fill_(0)

    def fill_(self, value: Any) -> Tensor:
        _write_inplace(self, None, value)
        return self

    def copy_(self, src: Any) -> Tensor:
        _write_inplace(self, None, src)
        return self

    # -- printing ----------------------------------------------------------------------------------
    def __repr__(self) -> str:
        from ._printing import format_tensor

        return format_tensor(self)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        """A 0-d tensor formats as its value (``f"{loss:.4f}"``); others only with an empty spec (PyTorch)."""
        if self.ndim == 0 and type(self) is Tensor:
            return format(self.item(), spec)
        return object.__format__(self, spec)

    # -- copying and pickling (ember/_copy.py) -----------------------------------------------------
    def __deepcopy__(self, memo: Any) -> Tensor:
        from ._copy import deepcopy_tensor

        return deepcopy_tensor(self, memo)

    def __reduce_ex__(self, protocol: Any) -> Any:
        from ._copy import reduce_tensor

        return reduce_tensor(self)

    # -- operators ---------------------------------------------------------------------------------
    # (a sparse operand makes these return NotImplemented, so Python asks the sparse tensor's __radd__ & co.)
    def __add__(self, other: Any) -> Tensor:
        try:
            return _binary(_Add, self, other)
        except TypeError:
            if getattr(other, "is_sparse", False):
                return NotImplemented
            raise

    def __radd__(self, other: Any) -> Tensor:
        return _binary(_Add, other, self)

    def __sub__(self, other: Any) -> Tensor:
        try:
            return _ops.sub(self, other)
        except TypeError:
            if getattr(other, "is_sparse", False):
                return NotImplemented
            raise

    def __rsub__(self, other: Any) -> Tensor:
        return _ops.sub(other, self)

    def __mul__(self, other: Any) -> Tensor:
        try:
            return _binary(_Mul, self, other)
        except TypeError:
            if getattr(other, "is_sparse", False):
                return NotImplemented
            raise

    def __rmul__(self, other: Any) -> Tensor:
        return _binary(_Mul, other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return _ops.div(self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return _ops.div(other, self)

    def __floordiv__(self, other: Any) -> Tensor:
        return _ops.floor_divide(self, other)

    def __rfloordiv__(self, other: Any) -> Tensor:
        return _ops.floor_divide(other, self)

    def __mod__(self, other: Any) -> Tensor:
        return _ops.remainder(self, other)

    def __rmod__(self, other: Any) -> Tensor:
        return _ops.remainder(other, self)

    def __pow__(self, other: Any) -> Tensor:
        return _ops.pow(self, other)

    def __rpow__(self, other: Any) -> Tensor:
        return _ops.pow(other, self)

    def __matmul__(self, other: Any) -> Tensor:
        return _ops.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        return _ops.matmul(other, self)

    def __neg__(self) -> Tensor:
        return _ops.neg(self)

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return _ops.abs(self)

    def __invert__(self) -> Tensor:
        return _ops.logical_not(self) if self.dtype.name == "bool" else _ops.bitwise_not(self)

    # bitwise on integers, logical on bools (PyTorch)
    def __and__(self, other: Any) -> Tensor:
        return _ops.bitwise_and(self, other)

    def __rand__(self, other: Any) -> Tensor:
        return _ops.bitwise_and(other, self)

    def __or__(self, other: Any) -> Tensor:
        return _ops.bitwise_or(self, other)

    def __ror__(self, other: Any) -> Tensor:
        return _ops.bitwise_or(other, self)

    def __xor__(self, other: Any) -> Tensor:
        return _ops.bitwise_xor(self, other)

    def __rxor__(self, other: Any) -> Tensor:
        return _ops.bitwise_xor(other, self)

    def __lshift__(self, other: Any) -> Tensor:
        return _ops.bitwise_left_shift(self, other)

    def __rlshift__(self, other: Any) -> Tensor:
        return _ops.bitwise_left_shift(other, self)

    def __rshift__(self, other: Any) -> Tensor:
        return _ops.bitwise_right_shift(self, other)

    def __rrshift__(self, other: Any) -> Tensor:
        return _ops.bitwise_right_shift(other, self)

    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        return _ops.eq(self, other)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        return _ops.ne(self, other)

    def __lt__(self, other: Any) -> Tensor:
        return _ops.lt(self, other)

    def __le__(self, other: Any) -> Tensor:
        return _ops.le(self, other)

    def __gt__(self, other: Any) -> Tensor:
        return _ops.gt(self, other)

    def __ge__(self, other: Any) -> Tensor:
        return _ops.ge(self, other)

    # in place: ``a += b`` computes out of place, writes into a's storage and moves a's history.
    def __iadd__(self, other: Any) -> Tensor:
        return _inplace(self, _ops.add, other)

    def __isub__(self, other: Any) -> Tensor:
        return _inplace(self, _ops.sub, other)

    def __imul__(self, other: Any) -> Tensor:
        return _inplace(self, _ops.mul, other)

    def __itruediv__(self, other: Any) -> Tensor:
        return _inplace(self, _ops.div, other)

    def __ipow__(self, other: Any) -> Tensor:
        return _inplace(self, _ops.pow, other)

    def __getitem__(self, index: Any) -> Tensor:
        return _ops.getitem(self, index)

    def __setitem__(self, index: Any, value: Any) -> None:
        _write_inplace(self, index, value)

    def __getattr__(self, name: str) -> Any:
        # Operators are methods too: ``t.exp()``, ``t.sum(dim=1)``; they live in ember.ops and are bound
        # onto the class (``bind_method``); this finds any that could not be.
        fn = _ops.METHODS.get(name)
        if fn is None:
            base = name[:-1]
            if name[-1:] == "_" and base in _ops.INPLACE and base in _ops.METHODS:
                return functools.partial(inplace_method, self, _ops.METHODS[base])
            raise AttributeError(f"'Tensor' object has no attribute '{name}'")
        return fn.__get__(self)


def _is_device(a: Any) -> _bool:
    """A device given to ``to()``: a device, a device string, a Backend, or a torch.device."""
    if isinstance(a, _device_cls):
        return True
    if isinstance(a, str):  # a dtype's name, else a device (an unknown one is then refused as a device)
        try:
            as_dtype(a)
        except (TypeError, ValueError):
            return True
        return False
    from .backends import Backend

    return isinstance(a, Backend) or (a.__class__.__name__ == "device" and hasattr(a, "type"))


# Bound at import end: the operator layer imports Tensor, Tensor methods call operators.
from . import ops as _ops  # noqa: E402
from .autograd._views import _refresh_view  # noqa: E402
from .ops._indexing_view import _contiguous, _permute, _transpose  # noqa: E402
from .ops._inplace import _inplace, _write_inplace, inplace_method  # noqa: E402
from .ops._other_convert import _cast, _clone, _pin, _to_device  # noqa: E402
from .ops._pointwise_binary import Add as _Add  # noqa: E402
from .ops._pointwise_binary import Mul as _Mul  # noqa: E402
from .ops._util import _binary  # noqa: E402

_ = get_default_dtype

_BOUND: set[str] = set()


def bind_method(name: str, fn: Callable[..., Any]) -> None:
    """Make operator ``fn`` the method ``Tensor.<name>`` (class attribute: no ``__getattr__`` per call).

    Methods written in the class body win; a name bound before is rebound.
    """
    if (name in Tensor.__dict__ and name not in _BOUND) or not isinstance(fn, types.FunctionType):
        return
    setattr(Tensor, name, fn)
    _BOUND.add(name)
    if name in _ops.INPLACE:
        bind_inplace(name, fn)


def bind_inplace(base: str, fn: Callable[..., Any]) -> None:
    name = base + "_"
    if name in Tensor.__dict__ and name not in _BOUND:
        return

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return inplace_method(self, fn, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place ``{base}``: the result is written into this tensor."
    setattr(Tensor, name, method)
    _BOUND.add(name)


for _name, _fn in list(_ops.METHODS.items()):
    bind_method(_name, _fn)

"""``Tensor``: an array on a backend, plus what autograd needs (grad, creator, version counter)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ._convert import UNCOMPARED, array_of, leaves, sequence_dtype, tensor_init_args, tensors_as_lists
from ._device import device as _device_cls
from ._dtype import DType, as_dtype
from ._hooks import RemovableHandle
from ._printing import format_tensor
from ._size import Size as _Size
from ._tensor_convert import TensorConversions, _is_device
from ._tensor_grad import TensorGradFields
from .backends import get_backend

__all__ = ["Tensor"]

_bool = bool
_new_size = tuple.__new__


class Tensor(TensorGradFields, TensorConversions):
    """A multi-dimensional array with reverse-mode autodiff.

    Value semantics (spec §2.2): assignment shares the tensor, operations return new tensors, methods
    ending in ``_`` modify in place, and views (reshape of a contiguous tensor, transpose, basic
    slicing) share storage. A version counter, shared by a tensor and its views, turns an in-place
    change to a value saved for backward into an error instead of a wrong gradient.
    """

    __slots__ = (
        "__dict__",  # a program's own attributes (``p.no_decay = True``), as PyTorch's take; made on first use
        "__weakref__",
        "_backend",
        "_creator",
        "_data",
        "_hooks",
        "_out_idx",
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
        data, dtype = tensor_init_args(data, sizes, dtype)
        self._init(*_to_array(data, dtype, device))
        if requires_grad:
            self.requires_grad_(True)

    def _init(self, data: Any, backend: Any) -> None:
        """Set every field of a new tensor: the one list of them (``_make`` and ``Op.apply`` inline it)."""
        self._data = data
        self._backend = backend
        self._requires_grad = False
        self._grad: Tensor | None = None
        self._creator: Any = None  # the Op that made this tensor (None: a leaf)
        self._out_idx = 0  # which output of ``_creator``
        self._vcl: list[int] | None = None  # the version counter, made on first use (``_vc``)
        self._view: Any = None  # a view's base and how to recompute it after an in-place change
        self._retain = False
        self._hooks: list[Callable[[Tensor], Any]] | None = None

    @classmethod
    def _make(cls, data: Any, backend: Any) -> Tensor:
        """A tensor around ``data`` (an array of ``backend``), with no copy and no checks.

        ``_init`` inlined (this runs several times per op in backward; tests/test_tensor_fields.py keeps the
        copies in step)."""
        t = object.__new__(cls)
        t._data = data
        t._backend = backend
        t._requires_grad = False
        t._grad = t._creator = t._hooks = t._view = t._vcl = None
        t._out_idx = 0
        t._retain = False
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
    def shape(self) -> _Size:
        return _new_size(_Size, self._data.shape)

    def size(self, dim: int | None = None) -> Any:
        """The shape as an ``ember.Size`` (a tuple with ``numel()``), or the length of dimension ``dim``."""
        return _new_size(_Size, self._data.shape) if dim is None else self._data.shape[dim]

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
        return math.prod(self._data.shape)

    nelement = numel  # PyTorch's older name

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

    @property
    def T(self) -> Tensor:  # noqa: N802 - PyTorch's name
        return _permute(self, tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self) -> Tensor:  # noqa: N802 - PyTorch's name
        return _transpose(self, -2, -1)

    def __len__(self) -> int:
        if not self._data.shape:
            raise TypeError("len() of a 0-d tensor")
        return int(self._data.shape[0])

    def __iter__(self) -> Iterator[Tensor]:
        n = len(self)  # (a 0-d tensor raises TypeError at iter(), as PyTorch's: `try: iter(x)` tells scalars)
        return (self[i] for i in range(n))

    def __hash__(self) -> int:
        return id(self)

    # -- conversion (more in _tensor_convert.TensorConversions) ----------------------------------
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
        flags = []
        for a in args:
            if isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, _bool):  # PyTorch's positional non_blocking, then copy
                flags.append(a)
            elif _is_device(a):
                device = a
            else:
                dtype = a
        if len(flags) > 2:
            raise TypeError(f"to(): at most two positional flags (non_blocking, copy), got {len(flags)}")
        non_blocking, copy = [*flags, *[non_blocking, copy][len(flags) :]]
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

    def pin_memory(self) -> Tensor:
        """This tensor in page-locked host memory, for fast ``non_blocking`` copies to CUDA."""
        return _pin(self)

    def clone(self, memory_format: Any = None) -> Tensor:
        return _clone(self)

    def contiguous(self, memory_format: Any = None) -> Tensor:
        return _contiguous(self)

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
        return RemovableHandle(self._hooks, hook)

    def backward(
        self, gradient: Tensor | None = None, retain_graph: _bool | None = None, create_graph: _bool = False,
        inputs: Any = None,
    ) -> Any:  # fmt: skip
        """Accumulate d(self)/d(leaf) into each leaf's ``.grad`` (``inputs``: into theirs only); returns the
        Gradients as a value."""
        return _backward([self], [gradient], retain_graph=retain_graph, create_graph=create_graph, inputs=inputs)

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
        return format_tensor(self)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        """A 0-d tensor formats as its value (``f"{loss:.4f}"``); others only with an empty spec (PyTorch)."""
        if self.ndim == 0 and type(self) is Tensor and not self.is_meta:
            return format(self.item(), spec)
        return object.__format__(self, spec)

    # -- copying and pickling (ember/_copy.py) -----------------------------------------------------
    def __deepcopy__(self, memo: Any) -> Tensor:
        return deepcopy_tensor(self, memo)

    def __reduce_ex__(self, protocol: Any) -> Any:
        return reduce_tensor(self)

    # -- operators ---------------------------------------------------------------------------------
    # (a sparse operand makes these return NotImplemented, so Python asks the sparse tensor's __radd__ & co.)
    # a float tensor and a Python int/float (not bool): ``_binary``'s fast path (nothing to promote or broadcast)
    def __add__(self, other: Any) -> Tensor:
        if other.__class__ in (float, int) and self._data.dtype in self._backend.float_dtypes:
            return _apply_number(_Add, self, other, False)
        try:
            return _binary(_Add, self, other)
        except TypeError:  # a sparse operand: Python then asks its __radd__
            if getattr(other, "is_sparse", False):
                return NotImplemented
            raise

    def __radd__(self, other: Any) -> Tensor:
        if other.__class__ in (float, int) and self._data.dtype in self._backend.float_dtypes:
            return _apply_number(_Add, self, other, True)
        return _binary(_Add, other, self)

    def __sub__(self, other: Any) -> Tensor:
        try:
            return _ops.sub(self, other)
        except TypeError:  # a sparse operand: Python then asks its __rsub__
            if getattr(other, "is_sparse", False):
                return NotImplemented
            raise

    def __rsub__(self, other: Any) -> Tensor:
        return _ops.sub(other, self)

    def __mul__(self, other: Any) -> Tensor:
        if other.__class__ in (float, int) and self._data.dtype in self._backend.float_dtypes:
            return _apply_number(_Mul, self, other, False)
        try:
            return _binary(_Mul, self, other)
        except TypeError:  # a sparse operand: Python then asks its __rmul__
            if getattr(other, "is_sparse", False):
                return NotImplemented
            raise

    def __rmul__(self, other: Any) -> Tensor:
        if other.__class__ in (float, int) and self._data.dtype in self._backend.float_dtypes:
            return _apply_number(_Mul, self, other, True)
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
        return NotImplemented if isinstance(other, UNCOMPARED) else _ops.eq(self, other)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        return NotImplemented if isinstance(other, UNCOMPARED) else _ops.ne(self, other)

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

    # No ``__getattr__`` at run time: operator methods (``t.exp()``) are bound at import (``ops.bind_method``); the
    # hook would stop CPython 3.11 specialising every attribute read on a Tensor (``t._data`` ...): ~9% of a small op.
    if TYPE_CHECKING:  # for type checkers only: the methods bound at import

        def __getattr__(self, name: str) -> Any: ...


def _to_array(data: Any, dtype: Any, device: Any) -> tuple[Any, Any]:
    """``(array, backend)`` holding a copy of ``data``: a tensor (converted to ``dtype``/``device``), or what
    ``_convert.array_of`` reads (numbers, nested sequences, which may hold tensors, NumPy arrays)."""
    if isinstance(data, Tensor):
        be = get_backend(device if device is not None else data._backend)
        dt = as_dtype(dtype or data.dtype)
        if data._backend is be:
            return be.astype(be.xp.copy(data._data), dt), be
        return be.astype(data._backend.transfer(data._data, be), dt), be
    if isinstance(data, (list, tuple)) and (found := leaves(data))[1]:
        # NumPy scalars or arrays, tensors: their dtypes promote with the Python numbers' (PyTorch's rule)
        dtype = dtype if dtype is not None else sequence_dtype(*found)
        data = tensors_as_lists(data, Tensor)
    return array_of(data, dtype, device)


# Bound at import end: the operator layer imports Tensor, Tensor methods call operators.
from . import ops as _ops  # noqa: E402
from ._copy import deepcopy_tensor, reduce_tensor  # noqa: E402
from .autograd._apply_number import apply_number as _apply_number  # noqa: E402
from .autograd._engine import backward as _backward  # noqa: E402
from .autograd._views import _refresh_view  # noqa: E402
from .ops._indexing_view import _contiguous, _permute, _transpose  # noqa: E402
from .ops._inplace import _inplace, _write_inplace  # noqa: E402
from .ops._other_convert import _cast, _clone, _pin, _to_device  # noqa: E402
from .ops._pointwise_binary import Add as _Add  # noqa: E402
from .ops._pointwise_binary import Mul as _Mul  # noqa: E402
from .ops._util import _binary  # noqa: E402

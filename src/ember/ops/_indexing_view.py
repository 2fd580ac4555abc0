"""Views and reshapes (torch docs, "Indexing, Slicing, Joining, Mutating Ops", and the Tensor-only methods
``view``, ``expand``, ``contiguous``, ``repeat``, ``unfold``).
"""

from __future__ import annotations

import math
from typing import Any

from .._dtype import DType, as_dtype
from .._errors import ShapeError
from .._tensor import Tensor
from ..autograd._autocast import ACTIVE as _AUTOCAST
from ..autograd._capture import CAPTURE
from ..autograd._function import TRACE, Op
from ..autograd._grad_mode import STATE
from ..autograd._views import _refresh_view, make_view
from ._util import as_shape, norm_dim, sum_to_array

__all__ = [
    "broadcast_to",
    "expand",
    "expand_as",
    "moveaxis",
    "movedim",
    "permute",
    "repeat",
    "reshape",
    "squeeze",
    "swapaxes",
    "swapdims",
    "t",
    "tile",
    "transpose",
    "unsqueeze",
    "view",
]
METHODS = list(__all__) + ["data_ptr", "reshape_as", "storage_offset", "stride", "view_as"]


class ViewOp(Op):
    """An op whose result may share storage with its input: the result shares its version counter."""

    saves_inputs = False
    bf16_native = True

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        x = args[0]
        if _AUTOCAST[0] or TRACE[0] is not None or CAPTURE.tracer is not None or (x._requires_grad and STATE.enabled):
            out = super().apply(*args, **kwargs)
        else:  # nothing recorded (inference, a data pipeline): the view without an operator node (~3 us less)
            if x._view is not None:
                _refresh_view(x)
            op = cls.__new__(cls)
            op.backend = x._backend
            out = Tensor._make(op.forward(x._data, *args[1:], **kwargs), x._backend)
        if x._backend.is_view_of(out._data, x._data):
            backend, rest = x._backend, args[1:]

            def replay(a: Any) -> Any:
                op = cls.__new__(cls)
                op.backend = backend
                return op.forward(a, *rest, **kwargs)

            make_view(out, x, replay)
        return out


def _infer(shape: tuple[int, ...], numel: int, op: str, src: tuple[int, ...]) -> tuple[int, ...]:
    if -1 not in shape and math.prod(shape) == numel and (not shape or min(shape) >= 0):
        return shape  # (the usual case, checked in three C calls)
    if shape.count(-1) > 1:
        raise ShapeError(f"{op}: only one dimension can be -1, got {shape}")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise ShapeError(f"{op}: invalid size {s} in shape {shape}")
            known *= s
    if -1 in shape:
        if known == 0 or numel % known:
            raise ShapeError(f"{op}: shape {shape} is invalid for input of shape {tuple(src)} ({numel} elements)")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise ShapeError(f"{op}: shape {shape} is invalid for input of shape {tuple(src)} ({numel} elements)")
    return shape


class Reshape(ViewOp):
    def forward(self, x: Any, shape: tuple[int, ...]) -> Any:
        self.in_shape = x.shape
        return x.reshape(shape)

    def backward(self, g: Tensor) -> tuple[Tensor, None]:
        return reshape(g, self.in_shape), None

    def backward_arrays(self, g: Any) -> tuple[Any, None]:
        return g.reshape(self.in_shape), None


def reshape(input: Tensor, *shape: Any) -> Tensor:
    """The same elements in a new shape (one dim may be -1); a view when the input is contiguous."""
    s = as_shape(shape)
    if s == input._data.shape:
        return input
    s = _infer(s, input.numel(), "reshape", input._data.shape)
    return Reshape.apply(input, s)


def _view_dtype(input: Tensor, dtype: DType) -> Tensor:
    """The same bytes read as ``dtype`` (no gradient); a size change rescales the last dim."""
    old, new = input.dtype.itemsize, dtype.itemsize
    if old != new and (input.ndim == 0 or not input.is_contiguous() or (input.shape[-1] * old) % new):
        raise ShapeError(
            f"view: cannot view a {input.dtype} tensor of shape {tuple(input.shape)} as {dtype}: the last dim must be "
            f"contiguous and its size in bytes ({input.shape[-1] * old if input.ndim else old}) a multiple of {new}"
        )
    out = Tensor._make(input._data.view(input._backend.native_dtype(dtype)), input._backend)
    out._vc = input._vc  # a view: writes through either are seen by both
    return out


def view_strides(old: tuple[int, ...], strides: tuple[int, ...], new: tuple[int, ...]) -> tuple[int, ...] | None:
    """The strides (in elements) of a ``new``-shaped view of memory laid out as ``old``/``strides``, or None
    when no view exists (PyTorch's rule: each run of new dims must fit inside one contiguous chunk of old dims)."""
    if math.prod(old) == 0:  # no elements: any shape is a view
        out, step = [0] * len(new), 1
        for d in range(len(new) - 1, -1, -1):
            out[d] = step
            step *= max(new[d], 1)
        return tuple(out)
    out = [0] * len(new)
    view_d = len(new) - 1
    chunk_stride = strides[-1] if strides else 1
    tensor_numel = view_numel = 1
    for tensor_d in range(len(old) - 1, -1, -1):
        tensor_numel *= old[tensor_d]
        # a chunk ends where the next-outer dim is not laid out right after this one
        if tensor_d == 0 or (old[tensor_d - 1] != 1 and strides[tensor_d - 1] != tensor_numel * chunk_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new[view_d] == 1):
                out[view_d] = view_numel * chunk_stride
                view_numel *= new[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_stride, tensor_numel, view_numel = strides[tensor_d - 1], 1, 1
    if view_d != -1:
        return None
    return tuple(out)


class StridedView(ViewOp):
    """A view of a non-contiguous input in a new shape (``view_strides``); backward reshapes the gradient."""

    def forward(self, x: Any, shape: tuple[int, ...]) -> Any:
        self.in_shape = x.shape
        st = view_strides(tuple(x.shape), self.backend.strides(x), shape)
        if st is None:  # replayed on a copy laid out differently: the same elements, reshaped
            return self.backend.xp.reshape(x, shape)
        return self.backend.as_strided(x, shape, st)

    def backward(self, g: Tensor) -> tuple[Tensor, None]:
        return reshape(g, self.in_shape), None

    def backward_arrays(self, g: Any) -> tuple[Any, None]:
        return g.reshape(self.in_shape), None


def view(input: Tensor, *shape: Any) -> Tensor:
    """The same memory in a new shape, as PyTorch's ``view``: a non-contiguous input is viewed when the new
    shape fits its strides (``qkv.split(n, 2)[0].view(B, T, nh, hs)``), and refused when it does not.

    ``view(dtype)`` reinterprets the bytes as another dtype (``torch.Tensor.view(dtype)``).
    """
    if len(shape) == 1 and isinstance(shape[0], (DType, str)):
        return _view_dtype(input, as_dtype(shape[0]))
    if input.is_contiguous():
        s = as_shape(shape)
        if s == input._data.shape:  # a new view of the same shape, not ``input`` itself (PyTorch's ``x.view_as(x)``
            return Reshape.apply(input, s)  # makes a distinct output of a custom Function, as gradient reversal does)
        return reshape(input, *shape)
    s = _infer(as_shape(shape), input.numel(), "view", input._data.shape)
    if view_strides(input.shape, stride(input), s) is None:
        raise ShapeError(
            f"view size is not compatible with input tensor's size and stride (at least one dimension spans "
            f"across two contiguous subspaces): shape {tuple(input.shape)} with strides {stride(input)} cannot be "
            "viewed "
            f"as {s}. Use .reshape(...) instead."
        )
    return StridedView.apply(input, s)  # type: ignore[no-any-return]


def view_as(input: Tensor, other: Tensor) -> Tensor:
    """``input.view(other.shape)``."""
    return view(input, *other.shape)


def stride(input: Tensor, dim: int | None = None) -> Any:
    """Steps in elements between neighbours along each dim (a tuple), or along ``dim``."""
    st = input._backend.strides(input._data)
    return st if dim is None else st[norm_dim(dim, input.ndim, "stride")]


def storage_offset(input: Tensor) -> int:
    """How many elements ``input``'s first element lies past the start of the memory it views."""
    return input._backend.storage_offset(input._data)


def data_ptr(input: Tensor) -> int:
    """The address of ``input``'s first element (equal for views that start at the same element)."""
    return input._backend.address(input._data)


class Permute(ViewOp):
    def forward(self, x: Any, dims: tuple[int, ...]) -> Any:
        self.dims = dims
        return self.backend.xp.transpose(x, dims)

    def backward(self, g: Tensor) -> tuple[Tensor, None]:
        inv = [0] * len(self.dims)
        for i, d in enumerate(self.dims):
            inv[d] = i
        return _permute(g, tuple(inv)), None

    def backward_arrays(self, g: Any) -> tuple[Any, None]:
        inv = [0] * len(self.dims)
        for i, d in enumerate(self.dims):
            inv[d] = i
        return self.backend.xp.transpose(g, inv), None


def _permute(x: Tensor, dims: tuple[int, ...]) -> Tensor:
    if dims == tuple(range(len(dims))):
        return x
    return Permute.apply(x, dims)


def permute(input: Tensor, *dims: Any) -> Tensor:
    """A view with the dimensions reordered as ``dims``."""
    d = as_shape(dims)
    if len(d) != input.ndim:
        raise ShapeError(f"permute: got {len(d)} dims {d} for a tensor of rank {input.ndim}")
    nd = tuple(norm_dim(i, input.ndim, "permute") for i in d)
    if sorted(nd) != list(range(input.ndim)):
        raise ShapeError(f"permute: dims {d} are not a permutation of 0..{input.ndim - 1}")
    return _permute(input, nd)


def _transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    n = x.ndim
    if n < 2 and dim0 in (0, -1) and dim1 in (0, -1):
        return x
    a, b = norm_dim(dim0, n, "transpose"), norm_dim(dim1, n, "transpose")
    order = list(range(n))
    order[a], order[b] = order[b], order[a]
    return _permute(x, tuple(order))


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap dimensions ``dim0`` and ``dim1``; a view. Also ``swapaxes`` and ``swapdims``."""
    return _transpose(input, dim0, dim1)


swapaxes = swapdims = transpose


def t(input: Tensor) -> Tensor:
    """The transpose of a tensor of at most 2 dimensions; a view."""
    if input.ndim > 2:
        raise ShapeError(f"t: expects a tensor of rank <= 2, got shape {tuple(input.shape)}; use transpose()")
    return _transpose(input, 0, -1) if input.ndim == 2 else input


class Expand(ViewOp):
    def forward(self, x: Any, shape: tuple[int, ...]) -> Any:
        self.in_shape = x.shape
        xp = self.backend.xp
        if math.prod(shape) == math.prod(x.shape):  # only size-1 dims added: no element repeats, a writable view
            return xp.reshape(x, shape)
        return xp.broadcast_to(x, shape)

    def backward(self, g: Tensor) -> tuple[Tensor, None]:
        return sum_to(g, self.in_shape), None

    def backward_arrays(self, g: Any) -> tuple[Any, None]:
        return sum_to_array(g, self.in_shape), None


def expand(input: Tensor, *sizes: Any) -> Tensor:
    """Broadcast to ``sizes`` without copying (-1 keeps a dim); read-only where an element repeats."""
    s = as_shape(sizes)
    src = input._data.shape
    if len(s) < len(src):
        raise ShapeError(f"expand: cannot expand shape {src} to fewer dims {s}")
    lead = len(s) - len(src)
    s = tuple(src[i - lead] if (d == -1 and i >= lead) else d for i, d in enumerate(s))
    for i, d in enumerate(src):
        if d != 1 and d != s[i + lead]:
            raise ShapeError(f"expand: dim {i} of size {d} cannot expand to {s[i + lead]} (shape {src} -> {s})")
    if s == src:
        return input
    return Expand.apply(input, s)


def broadcast_to(input: Tensor, shape: Any) -> Tensor:
    """A broadcast view of ``input`` with ``shape``."""
    return expand(input, tuple(shape))


class SumTo(Op):
    """Sum down to ``shape``, undoing broadcasting (gradients of broadcast operands); the adjoint of ``expand``."""

    saves_inputs = False

    def forward(self, g: Any, shape: tuple[int, ...]) -> Any:
        self.in_shape = g.shape
        return sum_to_array(g, shape)

    def backward(self, g: Tensor) -> tuple[Tensor, None]:
        return expand(g, *self.in_shape), None


def sum_to(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum ``g`` down to ``shape``: undo broadcasting in a gradient (the one place that does it)."""
    if g._data.shape == shape:
        return g
    return SumTo.apply(g, shape)


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    """``input.expand(other.shape)``: a broadcast view, no copy."""
    return expand(input, other.shape)


def squeeze(input: Tensor, dim: Any = None) -> Tensor:
    """Remove size-1 dimensions (all of them, or those in ``dim``); a view."""
    shape = input.shape
    if dim is None:
        new = tuple(s for s in shape if s != 1)
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        ds = {norm_dim(d, input.ndim, "squeeze") for d in dims}
        new = tuple(s for i, s in enumerate(shape) if not (i in ds and s == 1))
    return reshape(input, new)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dimension at ``dim``; a view."""
    d = norm_dim(dim, input.ndim + 1, "unsqueeze")
    shape = input.shape
    new = shape[:d] + (1,) + shape[d:]
    if not input.is_contiguous():  # PyTorch's strides for the new dim (CuPy's reshape picks others for size-1 dims)
        return StridedView.apply(input, new)  # type: ignore[no-any-return]
    return reshape(input, new)


class Contiguous(Op):
    saves_inputs = False

    def forward(self, x: Any) -> Any:
        return self.backend.xp.ascontiguousarray(x)

    def backward(self, g: Tensor) -> Tensor:
        return g


def _contiguous(x: Tensor) -> Tensor:
    return x if x.is_contiguous() else Contiguous.apply(x)


def movedim(input: Tensor, source: Any, destination: Any) -> Tensor:
    """Move dims ``source`` to positions ``destination`` (a view)."""
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise ShapeError(f"movedim: source {src} and destination {dst} differ in length")
    n = input.ndim
    src = tuple(norm_dim(d, n, "movedim") for d in src)
    dst = tuple(norm_dim(d, n, "movedim") for d in dst)
    for name, dims, given in (("source", src, source), ("destination", dst, destination)):
        if len(set(dims)) != len(dims):
            raise ShapeError(f"movedim: repeated dim in `{name}` ({given})")
    order = [d for d in range(n) if d not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return _permute(input, tuple(order)) if order != list(range(n)) else input


moveaxis = movedim


def repeat(input: Tensor, *sizes: Any) -> Tensor:
    """Tile the tensor ``sizes`` times along each dim (PyTorch's ``Tensor.repeat``): a new contiguous tensor."""
    reps = as_shape(sizes)
    if len(reps) < input.ndim:
        raise ShapeError(f"repeat: got {len(reps)} repeats for a tensor of rank {input.ndim}; need at least that many")
    if any(r < 0 for r in reps):
        raise ShapeError(f"repeat: repeat counts must be >= 0, got {tuple(reps)}")
    x = reshape(input, (1,) * (len(reps) - input.ndim) + input.shape)
    # expand a new axis before each dim, then merge: differentiable through expand's sum
    shape = x.shape
    inter = []
    for r, s in zip(reps, shape, strict=True):
        inter += [r, s]
    y = x.reshape(tuple(v for s in shape for v in (1, s))).expand(*inter)
    out = y.reshape(tuple(r * s for r, s in zip(reps, shape, strict=True)))
    # new memory, as PyTorch's: the reshape may be a view of the input (or of the expand, with stride-0 dims)
    if not out.is_contiguous():
        return Contiguous.apply(out)  # type: ignore[no-any-return]
    return out.clone() if out is input or out._view is not None else out


def tile(input: Tensor, dims: Any) -> Tensor:
    """Like ``repeat``, but fewer ``dims`` than the rank are padded with ones on the left."""
    if isinstance(dims, int):
        dims = (dims,)
    if not isinstance(dims, (list, tuple)) or not all(isinstance(d, int) for d in dims):
        raise TypeError(f"tile: dims must be a sequence of ints, got {dims!r}")
    reps = tuple(dims)
    reps = (1,) * (input.ndim - len(reps)) + reps
    return repeat(input, reps)


def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    """``input.reshape(other.shape)``."""
    return reshape(input, other.shape)

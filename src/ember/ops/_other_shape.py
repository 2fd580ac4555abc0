"""Shape operators (torch docs, "Other Operations"): flattening, broadcasting, flips and rolls, repeats,
grids, padding.
"""

from __future__ import annotations

from typing import Any

from .._errors import DeviceError, DTypeError, ShapeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._function import Op, _device_error
from ._indexing import GetItem
from ._indexing_view import _transpose, expand, reshape
from ._util import broadcast_shapes, norm_dim, norm_dims

__all__ = [
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "broadcast_tensors",
    "cartesian_prod",
    "flatten",
    "flip",
    "fliplr",
    "flipud",
    "meshgrid",
    "pad",
    "ravel",
    "repeat_interleave",
    "roll",
    "rot90",
    "unflatten",
]
METHODS = [
    n
    for n in __all__
    if n not in {"atleast_1d", "atleast_2d", "atleast_3d", "broadcast_tensors", "cartesian_prod", "meshgrid", "pad"}
]


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Dimensions ``start_dim`` to ``end_dim`` merged into one."""
    if input.ndim == 0:
        return reshape(input, 1)
    s = norm_dim(start_dim, input.ndim, "flatten")
    e = norm_dim(end_dim, input.ndim, "flatten")
    if s > e:
        raise ShapeError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    shape = input.shape
    return reshape(input, shape[:s] + (-1,) + shape[e + 1 :]) if shape[s : e + 1] else input


def ravel(input: Tensor) -> Tensor:
    """``input`` as a 1-d tensor (a view when it is contiguous)."""
    return reshape(input, -1)


# -- shapes and joins ---------------------------------------------------------------------------------
def _atleast(n: int, tensors: tuple[Any, ...]) -> Any:
    ts = tuple(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
    out = []
    for t in ts:
        shape = tuple(t.shape)
        if t.ndim < n:  # 1-d x becomes (1, n) and (1, n, 1); 2-d becomes (r, c, 1), as NumPy
            shape = {0: (1,) * n, 1: (1,) + shape + (1,) * (n - 2), 2: shape + (1,)}[t.ndim]
        out.append(reshape(t, shape) if shape != tuple(t.shape) else t)
    return out[0] if len(out) == 1 else tuple(out)


def atleast_1d(*tensors: Any) -> Any:
    """Each tensor viewed with at least 1 dimension (one tensor, or a tuple for several)."""
    return _atleast(1, tensors)


def atleast_2d(*tensors: Any) -> Any:
    """Each tensor viewed with at least 2 dimensions (one tensor, or a tuple for several)."""
    return _atleast(2, tensors)


def atleast_3d(*tensors: Any) -> Any:
    """Each tensor viewed with at least 3 dimensions (one tensor, or a tuple for several)."""
    return _atleast(3, tensors)


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """The tensors expanded to their common shape."""
    shape = broadcast_shapes(*(tuple(t.shape) for t in tensors), op="broadcast_tensors")
    return tuple(expand(t, *shape) for t in tensors)


def unflatten(input: Tensor, dim: int, sizes: Any) -> Tensor:
    """Split dim ``dim`` into ``sizes`` (one entry may be -1)."""
    d = norm_dim(dim, input.ndim, "unflatten")
    sizes = tuple(int(s) for s in sizes)
    shape = input.shape
    known = 1
    for s in sizes:
        known *= s if s != -1 else 1
    inferred = -1 in sizes
    if sizes.count(-1) > 1 or (not inferred and known != shape[d]) or (inferred and (known == 0 or shape[d] % known)):
        raise ShapeError(f"unflatten: sizes {sizes} do not multiply to dim {dim} of size {shape[d]}")
    sizes = tuple(shape[d] // known if s == -1 else s for s in sizes)
    return reshape(input, shape[:d] + sizes + shape[d + 1 :])


class Flip(Op):
    saves_inputs = False

    def forward(self, x: Any, dims: tuple[int, ...]) -> Any:
        self.dims = dims
        return self.backend.xp.flip(x, axis=dims) if dims else self.backend.xp.copy(x)

    def backward(self, g: Tensor) -> tuple[Tensor, None]:
        return Flip.apply(g, self.dims), None


def flip(input: Tensor, dims: Any) -> Tensor:
    """Reverse the order of elements along ``dims`` (a copy, as in PyTorch)."""
    return Flip.apply(input, norm_dims(dims, input.ndim, "flip"))


def fliplr(input: Tensor) -> Tensor:
    """``input`` reversed along its second dimension (left-right)."""
    if input.ndim < 2:
        raise ShapeError(f"fliplr: input must be at least 2-d, got shape {tuple(input.shape)}")
    return flip(input, (1,))


def flipud(input: Tensor) -> Tensor:
    """``input`` reversed along its first dimension (up-down)."""
    if input.ndim < 1:
        raise ShapeError("flipud: input must be at least 1-d, got a 0-d tensor")
    return flip(input, (0,))


class Roll(Op):
    saves_inputs = False

    def forward(self, x: Any, shifts: Any, dims: Any) -> Any:
        self.shifts, self.dims = shifts, dims
        return self.backend.xp.roll(x, shifts, axis=dims)

    def backward(self, g: Tensor) -> tuple[Tensor, None, None]:
        neg = tuple(-s for s in self.shifts) if isinstance(self.shifts, tuple) else -self.shifts
        return Roll.apply(g, neg, self.dims), None, None


def roll(input: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    """Shift elements cyclically along ``dims`` (the flattened tensor when None)."""
    sh = (int(shifts),) if isinstance(shifts, int) else tuple(int(s) for s in shifts)
    if dims is None:
        if len(sh) != 1:
            raise ShapeError(f"roll: {len(sh)} shifts need as many dims, got dims=None (only one shift rolls flat)")
        return Roll.apply(input, sh[0], None)
    ds = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(sh) != len(ds):
        raise ShapeError(f"roll: {len(sh)} shifts for {len(ds)} dims; shifts and dims must align")
    return Roll.apply(input, sh, tuple(norm_dim(d, input.ndim, "roll") for d in ds))


def _grow_shrink(widths: tuple[tuple[int, int], ...]) -> tuple[Any, Any]:
    """Per dim the widths to add (the positive ones) and to remove (the negative ones)."""
    return tuple((max(lo, 0), max(hi, 0)) for lo, hi in widths), tuple((max(-lo, 0), max(-hi, 0)) for lo, hi in widths)


def _cut(a: Any, shrink: Any) -> Any:
    return a[tuple(slice(lo, n - hi) for n, (lo, hi) in zip(a.shape, shrink, strict=True))]


class Pad(Op):
    """``pad`` in every mode: the backend's ``pad`` kernel adds the positive widths, negative ones crop. As in
    PyTorch, reflect and replicate pad the whole input first and then crop (the mirror or edge is the input's),
    constant and circular crop first; the gradient is the kernel's adjoint ``pad_backward``, zero where cropped."""

    saves_inputs = False

    def forward(self, x: Any, widths: tuple[tuple[int, int], ...], mode: str, value: Any) -> Any:
        self.widths, self.mode = widths, mode
        self.x_shape = tuple(x.shape)
        if any(n == 0 and lo == hi == 0 for n, (lo, hi) in zip(x.shape, widths, strict=True)):
            # an empty dim left as it is: the result is empty too (some kernels refuse empty inputs)
            out = tuple(n + lo + hi for n, (lo, hi) in zip(x.shape, widths, strict=True))
            return self.backend.xp.zeros(out, dtype=x.dtype)
        grow, shrink = _grow_shrink(widths)
        if mode in ("reflect", "replicate"):
            return _cut(self.backend.pad(x, grow, mode, value), shrink)
        return self.backend.pad(_cut(x, shrink), grow, mode, value)

    def backward(self, g: Tensor) -> tuple[Tensor, None, None, None]:
        if 0 in g.shape:
            return g.new_zeros(self.x_shape), None, None, None
        return PadBackward.apply(g, self.widths, self.mode), None, None, None


class PadBackward(Op):
    """The adjoint of ``Pad`` (linear in ``g``: its own gradient is ``Pad`` with zeros)."""

    saves_inputs = False

    def forward(self, g: Any, widths: tuple[tuple[int, int], ...], mode: str) -> Any:
        self.widths, self.mode = widths, mode
        grow, shrink = _grow_shrink(widths)
        be, cropped = self.backend, any(map(any, shrink))
        if mode in ("reflect", "replicate"):  # zeros where the crop removed, then the padding's adjoint
            return be.pad_backward(be.pad(g, shrink, "constant", 0) if cropped else g, grow, mode)
        gx = be.pad_backward(g, grow, mode)
        return be.pad(gx, shrink, "constant", 0) if cropped else gx

    def backward(self, gg: Tensor) -> tuple[Tensor, None, None]:
        return Pad.apply(gg, self.widths, self.mode, 0), None, None


_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input: Tensor, pad: Any, mode: str = "constant", value: Any = None) -> Tensor:
    """Pad the last ``len(pad) // 2`` dims: ``pad = (left, right, top, bottom, ...)`` from the last dim backwards.

    Modes: ``constant`` (``value``, default 0), ``reflect``, ``replicate``, ``circular``; negative widths crop.
    """
    widths = [int(p) for p in pad]
    if len(widths) % 2 or len(widths) // 2 > input.ndim:
        raise ValueRangeError(f"pad: expected an even number of widths for at most {input.ndim} dims, got {tuple(pad)}")
    if mode not in _PAD_MODES:
        raise ValueRangeError(f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got {mode!r}")
    k = len(widths) // 2
    per_dim = [(0, 0)] * (input.ndim - k) + [(widths[2 * i], widths[2 * i + 1]) for i in reversed(range(k))]
    if mode != "constant" and (k > max(input.ndim - 1, 1) or (k == input.ndim and input.ndim > 1)):
        raise ValueRangeError(f"pad: {mode} padding of {k} dims needs a batched input, got shape {tuple(input.shape)}")
    for d in range(input.ndim - k, input.ndim):
        n, (lo, hi) = input.shape[d], per_dim[d]
        kept = n - max(-lo, 0) - max(-hi, 0)  # what the crop leaves of the input
        if mode == "constant":
            if kept < 0:
                raise ShapeError(f"pad: widths {tuple(pad)} crop more than dim {d} of size {n}")
            continue
        if mode == "circular":
            if kept < 1:
                raise ShapeError(f"pad: widths {tuple(pad)} crop dim {d} of size {n} to nothing")
            if max(lo, hi) > kept:
                raise ShapeError(f"pad: circular padding {(max(lo, 0), max(hi, 0))} must be at most dim {d} of "
                                 f"size {kept} (after cropping)")  # fmt: skip
            continue
        if n + lo + hi < (1 if k == 1 else 0):  # (PyTorch's 2-d and 3-d kernels allow an empty result)
            raise ShapeError(f"pad: widths {tuple(pad)} leave nothing of dim {d} of size {n}")
        if mode == "reflect" and max(lo, hi) >= n:
            raise ShapeError(
                f"pad: reflect padding {(max(lo, 0), max(hi, 0))} must be smaller than dim {d} of size {n}"
            )
    return Pad.apply(input, tuple(per_dim), mode, 0 if value is None else value)


def repeat_interleave(
    input: Any, repeats: Any = None, dim: int | None = None, *, output_size: int | None = None
) -> Any:
    """Repeat each element (each slice along ``dim``; the flattened tensor when None) ``repeats`` times.

    ``repeats`` is an int or a 1-d integer tensor (one count per element). ``repeat_interleave(counts)``
    alone gives ``[0]*counts[0] + [1]*counts[1] + ...``.
    """
    if repeats is None:  # torch.repeat_interleave(repeats)
        counts = input
        xp = counts._backend.xp
        ar = Tensor._make(xp.arange(counts.shape[0], dtype=xp.int64), counts._backend)
        return repeat_interleave(ar, counts, 0)
    x = reshape(input, -1) if dim is None else input
    d = 0 if dim is None else norm_dim(dim, input.ndim, "repeat_interleave")
    n = x.shape[d] if x.ndim else 1
    xp = x._backend.xp
    if isinstance(repeats, Tensor):
        if repeats.dtype.kind not in "iu":
            raise DTypeError(f"repeat_interleave: repeats must be an integer tensor, got {repeats.dtype}")
        if repeats._backend is not x._backend:
            raise DeviceError(
                f"repeat_interleave: repeats on {repeats.device} ({repeats._backend.name} backend), input on "
                f"{x.device} ({x._backend.name} backend); move repeats with .to(input.device)"
            )
        reps = repeats._data.reshape(-1)
        if reps.shape[0] == 1:
            reps = xp.broadcast_to(reps, (n,))
        if reps.shape[0] != n:
            raise ShapeError(f"repeat_interleave: {reps.shape[0]} repeats for a dim of size {n}")
        if reps.size and int(reps.min()) < 0:
            raise ShapeError("repeat_interleave: repeats must be non-negative")
    else:
        if int(repeats) < 0:
            raise ShapeError(f"repeat_interleave: repeats must be non-negative, got {repeats}")
        reps = int(repeats)
    idx = xp.repeat(xp.arange(n, dtype=xp.int64), reps)
    if output_size is not None and idx.shape[0] != output_size:
        raise ShapeError(f"repeat_interleave: output_size {output_size} but the repeats give {idx.shape[0]}")
    if not x.ndim:
        x = reshape(x, 1)
    return GetItem.apply(x, (slice(None),) * d + (idx,))


def meshgrid(*tensors: Any, indexing: str = "ij") -> tuple[Tensor, ...]:
    """Coordinate grids from 1-d tensors: ``indexing='ij'`` (matrix, default) or ``'xy'`` (Cartesian)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ValueRangeError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    for t in tensors:
        if not isinstance(t, Tensor) or t.ndim > 1:
            raise ShapeError(f"meshgrid: expected 0-d or 1-d tensors, got {getattr(t, 'shape', type(t).__name__)}")
    if len({t._backend for t in tensors}) > 1:
        raise _device_error("meshgrid", tensors)
    if len({t.dtype for t in tensors}) > 1:
        raise DTypeError(f"meshgrid: expected tensors of one dtype, got {', '.join(str(t.dtype) for t in tensors)}")
    ts = [reshape(t, -1) for t in tensors]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.shape[0] for t in ts)
    out = []
    for i, t in enumerate(ts):
        view_shape = [1] * len(ts)
        view_shape[i] = shape[i]
        out.append(expand(reshape(t, tuple(view_shape)), *shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """All combinations of the elements of 1-d tensors, one per row (one tensor: itself)."""
    from ._indexing_join import stack

    if any(t.ndim != 1 for t in tensors):
        raise ShapeError(f"cartesian_prod: expected 1-d tensors, got shapes {[tuple(t.shape) for t in tensors]}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([reshape(g, -1) for g in grids], 1)


def rot90(input: Tensor, k: int = 1, dims: Any = (0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times in the plane of ``dims`` (from the first towards the second)."""
    if len(dims) != 2:
        raise ShapeError(f"rot90: expected 2 dims, got {tuple(dims)}")
    d0, d1 = (norm_dim(d, input.ndim, "rot90") for d in dims)
    if d0 == d1:
        raise ShapeError(f"rot90: dims must differ, got {tuple(dims)}")
    k %= 4
    if k == 1:
        return _transpose(flip(input, (d1,)), d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return flip(_transpose(input, d0, d1), (d1,))
    return input.clone()

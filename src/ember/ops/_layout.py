"""Rearranging operators: movedim, unflatten, repeat/tile, flip, roll, narrow, tril/triu, diagonal/diag."""

from __future__ import annotations

from typing import Any

from .._errors import OutOfRangeError, ShapeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._function import Op
from ._shape import ViewOp, _permute, reshape
from ._util import as_shape, norm_dim, norm_dims

__all__ = ["diag", "diag_embed", "diagonal", "flip", "fliplr", "flipud", "movedim", "moveaxis", "narrow", "pad",
           "repeat", "roll", "tile", "tril", "triu", "unflatten"]  # fmt: skip
METHODS = [n for n in __all__ if n != "pad"]


def movedim(input: Tensor, source: Any, destination: Any) -> Tensor:
    """Move dims ``source`` to positions ``destination`` (a view)."""
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise ShapeError(f"movedim: source {src} and destination {dst} differ in length")
    n = input.ndim
    src = tuple(norm_dim(d, n, "movedim") for d in src)
    dst = tuple(norm_dim(d, n, "movedim") for d in dst)
    order = [d for d in range(n) if d not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return _permute(input, tuple(order)) if order != list(range(n)) else input


moveaxis = movedim


def unflatten(input: Tensor, dim: int, sizes: Any) -> Tensor:
    """Split dim ``dim`` into ``sizes`` (one entry may be -1)."""
    d = norm_dim(dim, input.ndim, "unflatten")
    sizes = tuple(int(s) for s in sizes)
    shape = input.shape
    known = 1
    for s in sizes:
        known *= s if s != -1 else 1
    if sizes.count(-1) > 1 or (-1 not in sizes and known != shape[d]) or (known == 0 or shape[d] % known):
        raise ShapeError(f"unflatten: sizes {sizes} do not multiply to dim {dim} of size {shape[d]}")
    sizes = tuple(shape[d] // known if s == -1 else s for s in sizes)
    return reshape(input, shape[:d] + sizes + shape[d + 1 :])


def repeat(input: Tensor, *sizes: Any) -> Tensor:
    """Tile the tensor ``sizes`` times along each dim (PyTorch's ``Tensor.repeat``)."""
    reps = as_shape(sizes)
    if len(reps) < input.ndim:
        raise ShapeError(f"repeat: got {len(reps)} repeats for a tensor of rank {input.ndim}; need at least that many")
    x = reshape(input, (1,) * (len(reps) - input.ndim) + input.shape)
    # expand a new axis before each dim, then merge: differentiable through expand's sum
    shape = x.shape
    inter = []
    for r, s in zip(reps, shape, strict=True):
        inter += [r, s]
    y = x.reshape(tuple(v for s in shape for v in (1, s))).expand(*inter)
    return y.reshape(tuple(r * s for r, s in zip(reps, shape, strict=True)))


def tile(input: Tensor, dims: Any) -> Tensor:
    """Like ``repeat``, but fewer ``dims`` than the rank are padded with ones on the left."""
    if isinstance(dims, int):
        dims = (dims,)
    if not isinstance(dims, (list, tuple)) or not all(isinstance(d, int) for d in dims):
        raise TypeError(f"tile: dims must be a sequence of ints, got {dims!r}")
    reps = tuple(dims)
    reps = (1,) * (input.ndim - len(reps)) + reps
    return repeat(input, reps)


class Flip(Op):
    saves_inputs = False

    def forward(self, x: Any, dims: tuple[int, ...]) -> Any:
        self.dims = dims
        return self.backend.xp.flip(x, axis=dims) if dims else self.backend.xp.copy(x)

    def backward(self, g: Tensor) -> tuple[Tensor, None]:
        return Flip.apply(g, self.dims), None


def flip(input: Tensor, dims: Any) -> Tensor:
    """Reverse the order of elements along ``dims`` (a copy, as in PyTorch)."""
    return Flip.apply(input, norm_dims(dims, input.ndim, "flip"))  # type: ignore[no-any-return]


def fliplr(input: Tensor) -> Tensor:
    return flip(input, (1,))


def flipud(input: Tensor) -> Tensor:
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
        return Roll.apply(input, sh[0], None)  # type: ignore[no-any-return]
    ds = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(sh) != len(ds):
        raise ShapeError(f"roll: {len(sh)} shifts for {len(ds)} dims; shifts and dims must align")
    return Roll.apply(input, sh, tuple(norm_dim(d, input.ndim, "roll") for d in ds))  # type: ignore[no-any-return]


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """The slice ``start:start+length`` of dim ``dim`` (a view)."""
    d = norm_dim(dim, input.ndim, "narrow")
    size = input.shape[d]
    if start < 0:
        start += size
    if not (0 <= start <= size and length >= 0 and start + length <= size):
        raise OutOfRangeError(f"narrow: start {start} + length {length} exceed dim {dim} of size {size}")
    idx = (slice(None),) * d + (slice(start, start + length),)
    return input[idx]


class _Tri(Op):
    saves_inputs = False

    def forward(self, x: Any, k: int, upper: bool) -> Any:
        self.k, self.upper = k, upper
        xp = self.backend.xp
        return xp.triu(x, k) if upper else xp.tril(x, k)

    def backward(self, g: Tensor) -> tuple[Tensor, None, None]:
        return _Tri.apply(g, self.k, self.upper), None, None


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims (elements above ``diagonal`` zeroed)."""
    if input.ndim < 2:
        raise ShapeError(f"tril: expected a tensor of rank >= 2, got shape {input.shape}")
    return _Tri.apply(input, diagonal, False)  # type: ignore[no-any-return]


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims."""
    if input.ndim < 2:
        raise ShapeError(f"triu: expected a tensor of rank >= 2, got shape {input.shape}")
    return _Tri.apply(input, diagonal, True)  # type: ignore[no-any-return]


class Diagonal(ViewOp):
    def forward(self, x: Any, offset: int, d1: int, d2: int) -> Any:
        self.args, self.shape = (offset, d1, d2), x.shape
        return self.backend.xp.diagonal(x, offset, d1, d2)

    def backward(self, g: Tensor) -> tuple[Tensor, None, None, None]:
        return DiagonalBackward.apply(g, self.shape, *self.args), None, None, None


class DiagonalBackward(Op):
    saves_inputs = False

    def forward(self, g: Any, shape: tuple[int, ...], offset: int, d1: int, d2: int) -> Any:
        self.args = (offset, d1, d2)
        xp = self.backend.xp
        z = xp.zeros(shape, dtype=g.dtype)
        zt = xp.moveaxis(z, (d1, d2), (-2, -1))  # a writable view
        i = xp.arange(g.shape[-1])
        zt[..., i + max(-offset, 0), i + max(offset, 0)] = g
        return z

    def backward(self, gg: Tensor) -> tuple[Tensor, None, None, None, None]:
        return Diagonal.apply(gg, *self.args), None, None, None, None


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of dims ``dim1``/``dim2`` as a new last dim (a view)."""
    d1, d2 = norm_dim(dim1, input.ndim, "diagonal"), norm_dim(dim2, input.ndim, "diagonal")
    if d1 == d2:
        raise ShapeError(f"diagonal: dim1 and dim2 are the same dim ({dim1})")
    return Diagonal.apply(input, offset, d1, d2)  # type: ignore[no-any-return]


def diag_embed(input: Tensor, offset: int = 0) -> Tensor:
    """Square matrices (last two dims) with ``input``'s last dim on their diagonal."""
    n = input.shape[-1] + (offset if offset >= 0 else -offset)
    shape = input.shape[:-1] + (n, n)
    return DiagonalBackward.apply(input, shape, offset, input.ndim - 1, input.ndim)  # type: ignore[no-any-return]


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A 1-d input gives a diagonal matrix; a 2-d input gives its diagonal."""
    if input.ndim == 1:
        return diag_embed(input, diagonal)
    if input.ndim == 2:
        return globals()["diagonal"](input, diagonal)  # type: ignore[no-any-return]
    raise ShapeError(f"diag: expected a 1-d or 2-d tensor, got shape {input.shape}")


class Pad(Op):
    """``pad`` in every mode: negative widths crop (PyTorch crops first), the backend's ``pad`` kernel adds the
    positive ones; the gradient is the kernel's adjoint ``pad_backward``, with zeros where the crop removed."""

    saves_inputs = False

    def forward(self, x: Any, widths: tuple[tuple[int, int], ...], mode: str, value: Any) -> Any:
        self.widths, self.mode = widths, mode
        crop = tuple(slice(max(-lo, 0), n - max(-hi, 0)) for n, (lo, hi) in zip(x.shape, widths, strict=True))
        grow = tuple((max(lo, 0), max(hi, 0)) for lo, hi in widths)
        return self.backend.pad(x[crop], grow, mode, value)

    def backward(self, g: Tensor) -> tuple[Tensor, None, None, None]:
        return PadBackward.apply(g, self.widths, self.mode), None, None, None


class PadBackward(Op):
    """The adjoint of ``Pad`` (linear in ``g``: its own gradient is ``Pad`` with zeros)."""

    saves_inputs = False

    def forward(self, g: Any, widths: tuple[tuple[int, int], ...], mode: str) -> Any:
        self.widths, self.mode = widths, mode
        gx = self.backend.pad_backward(g, tuple((max(lo, 0), max(hi, 0)) for lo, hi in widths), mode)
        cropped = tuple((max(-lo, 0), max(-hi, 0)) for lo, hi in widths)
        return self.backend.pad(gx, cropped, "constant", 0) if any(map(any, cropped)) else gx

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
    if mode == "constant":
        return Pad.apply(input, tuple(per_dim), mode, 0 if value is None else value)  # type: ignore[no-any-return]
    if k > max(input.ndim - 1, 1) or (k == input.ndim and input.ndim > 1):
        raise ValueRangeError(f"pad: {mode} padding of {k} dims needs a batched input, got shape {input.shape}")
    for d in range(input.ndim - k, input.ndim):
        lo, hi = per_dim[d]
        n = input.shape[d] - max(-lo, 0) - max(-hi, 0)  # what the crop leaves
        lo, hi = max(lo, 0), max(hi, 0)
        if n < 1:
            raise ShapeError(f"pad: widths {tuple(pad)} crop dim {d} of size {input.shape[d]} to nothing")
        if mode == "reflect" and max(lo, hi) >= n:
            raise ShapeError(f"pad: reflect padding {(lo, hi)} must be smaller than dim {d} of size {n}")
        if mode == "circular" and max(lo, hi) > n:
            raise ShapeError(f"pad: circular padding {(lo, hi)} must be at most dim {d} of size {n}")
    return Pad.apply(input, tuple(per_dim), mode, 0)  # type: ignore[no-any-return]

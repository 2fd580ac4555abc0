"""Creating tensors, and the random generator behind ``manual_seed``."""

from __future__ import annotations

import operator
import threading
from typing import Any

import numpy as np

from . import _device
from ._convert import _check_fits, _numpy_dtype, wrap_int
from ._dtype import as_dtype, get_default_dtype, int64, to_real
from ._errors import DTypeError, ShapeError, ValueRangeError
from ._tensor import Tensor, _to_array
from .autograd._capture import opaque
from .backends import get_backend

__all__ = [
    "tensor",
    "as_tensor",
    "from_numpy",
    "zeros",
    "ones",
    "full",
    "empty",
    "arange",
    "linspace",
    "eye",
    "rand",
    "randn",
    "randint",
    "randperm",
    "zeros_like",
    "ones_like",
    "full_like",
    "empty_like",
    "rand_like",
    "randn_like",
    "randint_like",
    "manual_seed",
    "seed",
    "initial_seed",
    "Generator",
    "default_generator",
    "get_rng_state",
    "set_rng_state",
]


def tensor(data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, numbers, arrays or tensors)."""
    t = Tensor._make(*_to_array(data, dtype, device))
    return t.requires_grad_(True) if requires_grad else t


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """Like ``tensor`` but shares memory with a NumPy array or tensor when dtype and device agree.

    A tensor comes back itself when its dtype and device are the ones asked for, else converted by ``.to``,
    which keeps its graph (PyTorch's rule: ``as_tensor`` of a tensor that requires grad stays differentiable).
    """
    if isinstance(data, Tensor):
        return data if dtype is None and device is None else data.to(device=device, dtype=dtype)
    if (
        isinstance(data, np.ndarray)
        and device is None
        and _device.current_default() is None  # the default device is the CPU: share the array
        and (dtype is None or as_dtype(dtype).name == data.dtype.name)
    ):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with a NumPy array (on the CPU whatever the default device, as PyTorch)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(array).__name__}")
    be = get_backend("cpu")
    _numpy_dtype(array)
    return Tensor._make(be.from_numpy(array), be)


class _Capsule:
    """A bare DLPack capsule (``to_dlpack``'s result) as an object with ``__dlpack__``; its memory is on the CPU."""

    def __init__(self, capsule: Any) -> None:
        self.capsule = capsule

    def __dlpack__(self, **_: Any) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


def from_dlpack(ext: Any) -> Tensor:
    """A tensor sharing memory with ``ext``: an object with ``__dlpack__`` (a NumPy or CuPy array, a torch or
    Ember tensor) or a DLPack capsule from ``to_dlpack``."""
    if type(ext).__name__ == "PyCapsule":
        ext = _Capsule(ext)
    if not hasattr(ext, "__dlpack__") or not hasattr(ext, "__dlpack_device__"):
        raise DTypeError(f"from_dlpack: expected an object with __dlpack__ (an array or tensor) or a DLPack capsule, "
                        f"got {type(ext).__name__}")  # fmt: skip
    kind, index = (int(v) for v in ext.__dlpack_device__())
    if kind not in (1, 2, 3):  # kDLCPU, kDLCUDA, kDLCUDAHost
        raise RuntimeError(f"from_dlpack: DLPack device type {kind} is not one Ember serves (CPU or CUDA)")
    be = get_backend(f"cuda:{index}" if kind == 2 else "cpu")
    t = Tensor._make(be.xp.from_dlpack(ext), be)
    try:
        _ = t.dtype
    except TypeError as e:
        raise DTypeError(f"from_dlpack: {e}") from None
    return t


def to_dlpack(tensor: Tensor) -> Any:
    """A DLPack capsule sharing ``tensor``'s memory (``tensor.__dlpack__()``), read once by ``from_dlpack``."""
    return tensor.__dlpack__()


def _int_arg(value: Any, op: str, name: str, low: int | None = 0) -> int:
    """An integer argument (Python or NumPy int, 0-d integer tensor), >= ``low``; TypeError/ShapeError naming it."""
    if isinstance(value, (bool, np.bool_)) or not hasattr(value, "__index__"):
        raise TypeError(f"{op}: {name} must be an integer, got {type(value).__name__} {value!r}")
    n = operator.index(value)
    if low is not None and n < low:
        raise ShapeError(f"{op}: {name} must be >= {low}, got {n}")
    return n


def _shape(size: tuple[Any, ...], op: str = "tensor") -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for i, s in enumerate(size):
        if isinstance(s, (bool, np.bool_)) or not hasattr(s, "__index__"):
            raise TypeError(f"{op}: size must be a tuple of ints, but element {i} is {type(s).__name__} {s!r}")
    shape = tuple(operator.index(s) for s in size)
    if any(s < 0 for s in shape):
        raise ShapeError(f"{op}: negative dimension in size {shape}")
    return shape


def _make(filler: str, size: tuple[Any, ...], dtype: Any, device: Any, requires_grad: bool, value: Any = 0) -> Tensor:
    be = get_backend(device)
    shape = _shape(size, filler)
    d = as_dtype(dtype) if dtype is not None else get_default_dtype()
    nd = be.native_dtype(d)
    xp = be.xp
    if filler == "full" and d.kind == "f" and d.itemsize == 1:  # float8: the value rounded as PyTorch casts
        arr = be.asarray(xp.full(shape, value), d)
    elif filler == "full":
        arr = xp.full(shape, value, dtype=nd)
    else:
        arr = getattr(xp, filler)(shape, dtype=nd)
    t = Tensor._make(arr, be)
    return t.requires_grad_(True) if requires_grad else t


def zeros(*args: Any, size: Any = None, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of ``size`` filled with zeros."""
    return _make("zeros", args if size is None else (size,), dtype, device, requires_grad)


def ones(*args: Any, size: Any = None, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of ``size`` filled with ones."""
    return _make("ones", args if size is None else (size,), dtype, device, requires_grad)


def empty(*args: Any, size: Any = None, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor of ``size`` (``ember.empty(2, 3)`` or ``size=(2, 3)``)."""
    return _make("empty", args if size is None else (size,), dtype, device, requires_grad)


def full(size: Any, fill_value: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value``."""
    if (isinstance(fill_value, Tensor) and fill_value.ndim == 0) or isinstance(fill_value, (np.number, np.bool_)):
        fill_value = fill_value.item()  # (a NumPy scalar counts as the Python number, as in PyTorch)
    if not isinstance(fill_value, (bool, int, float, complex, np.number, np.bool_)):
        raise TypeError(f"full: fill_value must be a number or bool, got {type(fill_value).__name__} {fill_value!r}")
    if dtype is None:
        dtype = as_dtype(type(fill_value)) if isinstance(fill_value, (bool, int, float, complex)) else None
    if dtype is not None:
        _check_fits(np.asarray(fill_value), as_dtype(dtype), "full")
        fill_value = wrap_int(fill_value, as_dtype(dtype))  # (-1 into uint8: 255, as PyTorch)
    return _make("full", (size,), dtype, device, requires_grad, fill_value)


def arange(
    start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """Values from ``start`` up to (not including) ``end``; int64 unless a bound or step is a float."""
    start, end = (0, start) if end is None else (start, end)
    start, end, step = (int(v) if isinstance(v, bool) else v for v in (start, end, step))  # (PyTorch: True is 1)
    for name, v in (("start", start), ("end", end), ("step", step)):
        if isinstance(v, Tensor) and v.ndim == 0:
            v = v.item()
        if not isinstance(v, (int, float, np.number)):
            raise TypeError(f"arange: {name} must be a number, got {type(v).__name__} {v!r}")
        if not np.isfinite(v):
            raise ValueRangeError(f"arange: {name} must be finite, got {v}")
    if dtype is None:
        dtype = get_default_dtype() if any(isinstance(v, float) for v in (start, end, step)) else int64
    d = as_dtype(dtype)
    if d.kind in "iu":  # PyTorch casts the bounds and the step to the integer dtype first (0, 3.5, 1.5: 0, 1, 2)
        start, end, step = (int(v.item() if isinstance(v, Tensor) else v) for v in (start, end, step))
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise ValueRangeError(f"arange: the bounds [{start}, {end}) and step {step} disagree in sign "
                              "(use a negative step to count down)")  # fmt: skip
    be = get_backend(device)
    t = Tensor._make(be.astype(be.xp.arange(start, end, step), d), be)
    return t.requires_grad_(True) if requires_grad else t


def _scalar_arg(v: Any, op: str) -> Any:
    """A 0-d tensor's value as a Python number (PyTorch's Tensor overloads of the ranges take 0-d tensors)."""
    if isinstance(v, Tensor):
        if v.ndim:
            raise ShapeError(f"{op}: a tensor start/end must be 0-dimensional, got shape {tuple(v.shape)}")
        return v.item()
    return v


def linspace(
    start: float, end: float, steps: int, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """``steps`` values evenly spaced from ``start`` to ``end`` inclusive."""
    steps = _int_arg(steps, "linspace", "steps")
    start, end = (_scalar_arg(v, "linspace") for v in (start, end))
    be = get_backend(device)
    d = as_dtype(dtype) if dtype is not None else get_default_dtype()
    if d.name == "bool":
        raise DTypeError("linspace: bool is not a supported dtype (PyTorch has no bool linspace)")
    t = Tensor._make(be.astype(be.xp.linspace(start, end, steps), d), be)
    return t.requires_grad_(True) if requires_grad else t


def eye(n: int, m: int | None = None, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """An ``n`` x ``m`` (default ``n`` x ``n``) tensor with ones on the diagonal."""
    n = _int_arg(n, "eye", "n")
    m = None if m is None else _int_arg(m, "eye", "m")
    be = get_backend(device)
    d = as_dtype(dtype) if dtype is not None else get_default_dtype()
    t = Tensor._make(be.astype(be.xp.eye(n, m), d), be)
    return t.requires_grad_(True) if requires_grad else t


# -- randomness -----------------------------------------------------------------------------------
class Generator:
    """A seeded random source (NumPy's PCG64), so runs reproduce on every backend."""

    def __init__(self, device: Any = "cpu") -> None:
        self._seed = int(np.random.SeedSequence().entropy % (2**63))  # type: ignore[operator]
        self._rng = np.random.Generator(np.random.PCG64(self._seed))
        self._lock = threading.Lock()

    @opaque  # (a live call under ember.compile: a step that seeds reseeds at each replay)
    def manual_seed(self, seed: int) -> Generator:
        """Seed with an integer in [-2**63, 2**64); negative seeds map to ``2**64 - 1 + seed`` as in PyTorch."""
        seed = _int_arg(seed, "manual_seed", "seed", low=None)
        if not -(2**63) <= seed < 2**64:
            raise ValueRangeError(f"manual_seed: seed must be in [-2**63, 2**64), got {seed}")
        self._seed = seed if seed >= 0 else 0xFFFF_FFFF_FFFF_FFFF + seed
        self._rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    @property
    def device(self) -> Any:
        """The device the generator serves (Ember draws on the host and places the numbers: always "cpu")."""
        from ._device import device

        return device("cpu")

    def seed(self) -> int:
        s = int(np.random.SeedSequence().entropy % (2**63))  # type: ignore[operator]
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> dict[str, Any]:
        """The generator state as plain data (JSON/MessagePack-safe)."""
        return {"seed": self._seed, "bit_generator": self._rng.bit_generator.state}

    @opaque
    def set_state(self, state: dict[str, Any]) -> None:
        self._seed = int(state["seed"])
        rng = np.random.Generator(np.random.PCG64())
        rng.bit_generator.state = state["bit_generator"]
        self._rng = rng

    def _capture_state(self) -> tuple[Any, ...]:
        """(what must match between two runs, nothing else): ``ember.compile`` puts it back around its checked
        replay."""
        return (self.get_state(),), None

    def _capture_restore(self, state: tuple[Any, ...]) -> None:
        self.set_state(state[0][0])

    @property
    def numpy(self) -> np.random.Generator:
        """The underlying NumPy generator (for data pipelines that draw NumPy values)."""
        return self._rng


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator: the same seed gives the same tensors, initialisations and shuffles."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the default generator with a non-deterministic seed; return it."""
    return default_generator.seed()


def initial_seed() -> int:
    """The seed the default generator was last seeded with."""
    return default_generator.initial_seed()


def get_rng_state() -> dict[str, Any]:
    """The state of Ember's default generator (restore it with ``set_rng_state``)."""
    return default_generator.get_state()


def set_rng_state(new_state: dict[str, Any]) -> None:
    """Restore the default generator's state from ``get_rng_state()``."""
    default_generator.set_state(new_state)


def _rand(kind: str, size: tuple[Any, ...], dtype: Any, device: Any, requires_grad: bool, generator: Any) -> Tensor:
    be = get_backend(device)
    gen = generator or default_generator
    d = as_dtype(dtype) if dtype is not None else get_default_dtype()
    if not (d.is_floating_point or d.is_complex):
        raise TypeError(f"{kind}: expected a floating or complex dtype, got {d}")
    shape = _shape(size, kind)
    with gen._lock:
        if d.is_complex:  # real and imaginary parts drawn apart; randn's parts have variance 1/2 (PyTorch)
            parts = (be.uniform if kind == "rand" else be.normal)(gen._rng, (*shape, 2), to_real(d))
            scale = 1.0 if kind == "rand" else 0.5**0.5
            arr = be.astype(parts[..., 0] * scale + 1j * (parts[..., 1] * scale), d)
        else:
            arr = (be.uniform if kind == "rand" else be.normal)(gen._rng, shape, d)
    t = Tensor._make(arr, be)
    return t.requires_grad_(True) if requires_grad else t


def rand(
    *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False, generator: Any = None
) -> Tensor:
    """Uniform samples in [0, 1)."""
    return _rand("rand", size, dtype, device, requires_grad, generator)


def randn(
    *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False, generator: Any = None
) -> Tensor:
    """Standard normal samples."""
    return _rand("randn", size, dtype, device, requires_grad, generator)


def randint(
    low: int,
    high: Any = None,
    size: Any = (),
    *,
    dtype: Any = None,
    device: Any = None,
    generator: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Integers drawn uniformly from [low, high) (``randint(high, size)`` draws from [0, high))."""
    if high is not None and not isinstance(high, int) and size == ():  # randint(high, size)
        high, size = None, high
    if high is None:
        low, high = 0, low
    if high <= low:
        raise ValueError(f"randint: empty range [{low}, {high})")
    if dtype is not None:
        _check_fits(np.asarray([low, high - 1]), as_dtype(dtype), "randint")
    be = get_backend(device)
    gen = generator or default_generator
    with gen._lock:
        arr = be.randint(
            gen._rng,
            low,
            high,
            _shape((size,) if isinstance(size, int) else tuple(size), "randint"),
            as_dtype(dtype) if dtype is not None else int64,
        )
    t = Tensor._make(arr, be)
    return t.requires_grad_(True) if requires_grad else t


def randperm(n: int, *, dtype: Any = None, device: Any = None, generator: Any = None) -> Tensor:
    """A random permutation of ``0 .. n - 1``."""
    be = get_backend(device)
    d = as_dtype(dtype) if dtype is not None else int64
    if be.device.type == "meta":  # a shape only: nothing drawn (PyTorch's generator does not move either)
        return Tensor._make(be.astype(be.xp.empty((int(n),)), d), be)
    gen = generator or default_generator
    with gen._lock:
        perm = gen._rng.permutation(int(n))
    return Tensor._make(be.asarray(perm, d), be)


def _like(x: Tensor, dtype: Any, device: Any) -> dict[str, Any]:
    return {"dtype": dtype if dtype is not None else x.dtype, "device": device if device is not None else x.device}


def zeros_like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros with ``input``'s shape."""
    return zeros(input.shape, requires_grad=requires_grad, **_like(input, dtype, device))


def ones_like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones with ``input``'s shape."""
    return ones(input.shape, requires_grad=requires_grad, **_like(input, dtype, device))


def empty_like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor with ``input``'s shape (and dtype and device unless given)."""
    return empty(input.shape, requires_grad=requires_grad, **_like(input, dtype, device))


def full_like(
    input: Tensor, fill_value: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A tensor with ``input``'s shape filled with ``fill_value``."""
    return full(input.shape, fill_value, requires_grad=requires_grad, **_like(input, dtype, device))


def rand_like(
    input: Tensor, *, dtype: Any = None, device: Any = None, generator: Any = None, requires_grad: bool = False
) -> Tensor:
    """Uniform [0, 1) samples with ``input``'s shape."""
    return rand(input.shape, generator=generator, requires_grad=requires_grad, **_like(input, dtype, device))


def randn_like(
    input: Tensor, *, dtype: Any = None, device: Any = None, generator: Any = None, requires_grad: bool = False
) -> Tensor:
    """Standard normal samples with ``input``'s shape."""
    return randn(input.shape, generator=generator, requires_grad=requires_grad, **_like(input, dtype, device))


def randint_like(
    input: Tensor,
    low: int,
    high: int | None = None,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Random integers in [``low``, ``high``) with ``input``'s shape (``high`` alone: [0, ``low``))."""
    return randint(low, high, input.shape, requires_grad=requires_grad, **_like(input, dtype, device))


# Tensor.new_* methods (PyTorch): same dtype and device as the tensor unless told otherwise.
def new_zeros(self: Tensor, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    return zeros(*size, requires_grad=requires_grad, **_like(self, dtype, device))


def new_ones(self: Tensor, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    return ones(*size, requires_grad=requires_grad, **_like(self, dtype, device))


def new_full(self: Tensor, size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Tensor:
    return full(size, fill_value, **_like(self, dtype, device))


def new_empty(self: Tensor, *size: Any, dtype: Any = None, device: Any = None) -> Tensor:
    return empty(*size, **_like(self, dtype, device))


def new_empty_strided(self: Tensor, size: Any, stride: Any, *, dtype: Any = None, device: Any = None,
                      requires_grad: bool = False) -> Tensor:  # fmt: skip
    """An uninitialised (zero) tensor of ``size`` laid out with ``stride`` (in elements) over fresh memory."""
    shape, st = tuple(int(n) for n in size), tuple(int(v) for v in stride)
    if len(shape) != len(st) or any(v < 0 for v in st):
        raise ShapeError(f"new_empty_strided: size {shape} and stride {st} must have one non-negative stride per dim")
    extent = 1 + sum((n - 1) * v for n, v in zip(shape, st, strict=True)) if all(shape) else 0
    base = empty(extent, **_like(self, dtype, device))
    out = Tensor._make(base._backend.as_strided(base._data, shape, st), base._backend)
    out.requires_grad = requires_grad
    return out


def new_tensor(
    self: Tensor, data: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    return tensor(data, requires_grad=requires_grad, **_like(self, dtype, device))

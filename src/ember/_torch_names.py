"""PyTorch's top-level names that Ember serves with what it already has: constants, ``finfo``/``iinfo``, ``Size``,
tensor predicates, and functions PyTorch also exposes as methods (``torch.clone(x)`` is ``x.clone()``)."""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from ._creation import arange, as_tensor, empty, full_like, tensor
from ._dtype import DType, as_dtype, get_default_dtype
from ._errors import ShapeError
from ._printing import set_printoptions
from ._size import Size
from ._tensor import Tensor
from .autograd._anomaly import is_anomaly_enabled, set_detect_anomaly
from .autograd._grad_mode import is_inference_mode_enabled
from .ops._util import _CATEGORY, promote
from .ops._util import broadcast_shapes as _broadcast_shapes

__all__ = [
    "Size",
    "asarray",
    "broadcast_shapes",
    "can_cast",
    "empty_permuted",
    "empty_strided",
    "fill",
    "fill_",
    "is_anomaly_enabled",
    "range",
    "result_type",
    "scalar_tensor",
    "set_anomaly_enabled",
    "set_printoptions",
    "zero_",
    "clone",
    "detach",
    "e",
    "finfo",
    "iinfo",
    "inf",
    "is_floating_point",
    "is_inference",
    "is_inference_mode_enabled",
    "is_nonzero",
    "is_same_size",
    "is_signed",
    "is_tensor",
    "nan",
    "newaxis",
    "numel",
    "pi",
    "typename",
    "_assert",  # torch._assert: a check that ember.fx records
]

e, pi, inf, nan = math.e, math.pi, math.inf, math.nan
newaxis = None


# bfloat16 has no NumPy type: its limits (8 exponent bits, 7 stored mantissa bits)
_BFLOAT16 = {"bits": 16, "eps": 2.0**-7, "max": 3.3895313892515355e38, "tiny": 2.0**-126, "resolution": 0.01}


# The 8-bit floats' limits, as PyTorch gives them (bits, eps, max, min, smallest normal, resolution)
_FLOAT8 = {
    "float8_e4m3fn": (8, 0.125, 448.0, -448.0, 2.0**-6, 1.0),
    "float8_e5m2": (8, 0.25, 57344.0, -57344.0, 2.0**-14, 1.0),
    "float8_e4m3fnuz": (8, 0.125, 240.0, -240.0, 2.0**-7, 1.0),
    "float8_e5m2fnuz": (8, 0.125, 57344.0, -57344.0, 2.0**-15, 1.0),
    "float8_e8m0fnu": (8, 1.0, 2.0**127, 2.0**-127, 2.0**-127, 1.0),
}


class finfo:  # noqa: N801 - PyTorch's name
    """The limits of a floating (or complex: its real part's) dtype, the default dtype when none is given."""

    def __init__(self, type: Any = None) -> None:
        d = get_default_dtype() if type is None else as_dtype(type)
        if d.kind not in "fc":
            raise TypeError(f"ember.finfo() needs a floating point dtype, got {d}; use ember.iinfo for integer dtypes")
        if d.kind == "c":
            d = as_dtype("float32" if d.name == "complex64" else "float64")
        if d.name in _FLOAT8:
            bits, eps, mx, _, tiny, res = _FLOAT8[d.name]
            lim = {"bits": bits, "eps": eps, "max": mx, "tiny": tiny, "resolution": res}
        elif d.name == "bfloat16":
            lim = _BFLOAT16
        else:
            f = np.finfo(np.dtype(d.name))
            lim = {
                "bits": f.bits,
                "eps": f.eps,
                "max": f.max,
                "tiny": f.smallest_normal,
                "resolution": 10.0**-f.precision,
            }
        self.dtype = d.name
        self.bits: int = int(lim["bits"])
        self.eps = builtins.float(lim["eps"])
        self.max = builtins.float(lim["max"])
        self.min = _FLOAT8[d.name][3] if d.name in _FLOAT8 else -self.max
        self.tiny = self.smallest_normal = builtins.float(lim["tiny"])
        self.resolution = builtins.float(lim["resolution"])

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
            f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})"
        )


class iinfo:  # noqa: N801 - PyTorch's name
    """The limits of an integer dtype."""

    def __init__(self, type: Any) -> None:
        d = as_dtype(type)
        if d.kind not in "iu":
            raise TypeError(f"ember.iinfo() needs an integer dtype, got {d}; use ember.finfo for floating dtypes")
        self.dtype = d.name
        i = np.iinfo(np.dtype(d.name))
        self.bits, self.min, self.max = int(i.bits), int(i.min), int(i.max)

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def is_tensor(obj: Any) -> bool:
    """Whether ``obj`` is an Ember tensor."""
    return isinstance(obj, Tensor)


def is_inference(input: Tensor) -> bool:
    """Whether ``input`` is an inference tensor: False, Ember makes none (see ``Tensor.is_inference``)."""
    return _tensor("is_inference", input).is_inference()


def _tensor(op: str, x: Any) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, not {type(x).__name__}")
    return x


def numel(input: Tensor) -> int:
    """The number of elements of ``input``."""
    return _tensor("numel", input).numel()


def clone(input: Tensor, *, memory_format: Any = None) -> Tensor:
    """A copy of ``input`` that gradients flow through (``input.clone()``)."""
    return _tensor("clone", input).clone()


def detach(input: Tensor) -> Tensor:
    """``input`` cut from the graph, sharing its storage (``input.detach()``)."""
    return _tensor("detach", input).detach()


def is_floating_point(input: Tensor) -> bool:
    """Whether ``input``'s dtype is a floating one."""
    return _tensor("is_floating_point", input).is_floating_point()


def is_nonzero(input: Tensor) -> bool:
    """The truth of a one-element tensor; any other size is refused."""
    return _tensor("is_nonzero", input).is_nonzero()


def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether the two tensors have the same shape."""
    return _tensor("is_same_size", input).is_same_size(other)


def is_signed(input: Tensor) -> bool:
    """Whether ``input``'s dtype holds negative values."""
    return _tensor("is_signed", input).is_signed()


def typename(obj: Any) -> str:
    """``"ember.FloatTensor"`` for a tensor (PyTorch's legacy type names), else the object's qualified type name."""
    if isinstance(obj, Tensor):
        return str(obj.type())
    t = type(obj)
    return t.__qualname__ if t.__module__ in {"builtins", "__builtin__", None} else f"{t.__module__}.{t.__qualname__}"


def fill_(input: Tensor, value: Any) -> Tensor:
    """Fill ``input`` with ``value`` in place."""
    return _tensor("fill_", input).fill_(value)


def zero_(input: Tensor) -> Tensor:
    """Fill ``input`` with zeros in place."""
    return _tensor("zero_", input).zero_()


def fill(input: Tensor, value: Any) -> Tensor:
    """A new tensor like ``input`` holding ``value`` (a number, or a 0-d tensor, whose gradient it passes on)."""
    x = _tensor("fill", input)
    if isinstance(value, Tensor):
        if value.ndim:
            raise ShapeError(f"fill: value must be a number or a 0-d tensor, got shape {tuple(value.shape)}")
        return value.to(x.dtype).expand(x.shape).clone()
    return full_like(x, value)


def broadcast_shapes(*shapes: Any) -> Size:
    """The shape that tensors of ``shapes`` broadcast to (an int is a 1-d shape); incompatible shapes raise."""
    return Size(_broadcast_shapes(*shapes))


def can_cast(from_: Any, to: Any) -> bool:
    """Whether PyTorch's in-place ops may write a ``from_`` result into a ``to`` tensor: never to a lower kind
    (complex > floating > integer > bool); any width within a kind."""
    return _CATEGORY[as_dtype(from_).kind] <= _CATEGORY[as_dtype(to).kind]


def result_type(tensor1: Any, tensor2: Any) -> DType:
    """The dtype of an arithmetic operation on the two (tensors or numbers), by Ember's (PyTorch's) promotion."""

    def probe(v: Any) -> Any:  # an empty stand-in: the same dtype, and 0-d or not
        return empty((0,) if v.ndim else (), dtype=v.dtype) if isinstance(v, Tensor) else v

    a, b = probe(tensor1), probe(tensor2)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = tensor(a)  # two numbers: the first as a 0-d tensor
    a, b = promote("result_type", a, b)
    return a.dtype if isinstance(a, Tensor) else b.dtype  # type: ignore[no-any-return]


def scalar_tensor(
    s: Any, *, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False, **_: Any
) -> Tensor:
    """A 0-d tensor of ``s``, in the default floating dtype unless ``dtype`` says otherwise."""
    return tensor(s, dtype=dtype or get_default_dtype(), device=device, requires_grad=requires_grad)


def empty_strided(
    size: Any, stride: Any, *, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False, **_: Any
) -> Tensor:
    """An uninitialised tensor of ``size`` laid out with ``stride`` (in elements) over fresh memory."""
    t = empty(0, dtype=dtype, device=device).new_empty_strided(tuple(size), tuple(stride))
    return t.requires_grad_(requires_grad) if requires_grad else t


def empty_permuted(
    size: Any, physical_layout: Any, *, dtype: Any = None, device: Any = None, requires_grad: builtins.bool = False,
    **_: Any,
) -> Tensor:  # fmt: skip
    """An uninitialised tensor of ``size`` whose dimensions lie in memory in the order ``physical_layout`` (outermost
    first): ``empty_permuted((2, 3, 4), (0, 2, 1))`` has strides (12, 1, 3)."""
    size, order = tuple(size), tuple(physical_layout)
    if sorted(order) != list(builtins.range(len(size))):
        raise RuntimeError(f"empty_permuted: physical_layout {order} is not a permutation of the {len(size)} dims")
    inverse = [0] * len(order)
    for i, d in enumerate(order):
        inverse[d] = i
    t = empty(*(size[d] for d in order), dtype=dtype, device=device).permute(*inverse)
    return t.requires_grad_(requires_grad) if requires_grad else t


def asarray(
    obj: Any, *, dtype: Any = None, device: Any = None, copy: builtins.bool | None = None,
    requires_grad: builtins.bool = False,
) -> Tensor:  # fmt: skip
    """``obj`` as a tensor, sharing its memory where it can (``copy=True``: never; NumPy arrays and tensors)."""
    t = as_tensor(obj, dtype=dtype, device=device)
    if copy and (t is obj or isinstance(obj, np.ndarray)):
        t = t.clone()
    return t.requires_grad_(requires_grad) if requires_grad else t


def range(
    start: float = 0, end: float | None = None, step: float = 1, *, dtype: Any = None, device: Any = None,
    requires_grad: builtins.bool = False,
) -> Tensor:  # fmt: skip
    """``start, start + step, ...`` up to and including ``end`` (PyTorch's deprecated ``torch.range``; the default
    floating dtype)."""
    if end is None:
        start, end = 0, start
    if step == 0 or (end - start) * step < 0:
        raise ValueError(f"range: step {step} does not lead from {start} to {end}")
    n = math.floor((end - start) / step + 1e-9) + 1
    d = dtype or get_default_dtype()
    t = (arange(n, dtype=as_dtype("float64")) * step + start).to(d)
    if device is not None:
        t = t.to(device)
    return t.requires_grad_(requires_grad) if requires_grad else t


def set_anomaly_enabled(enabled: builtins.bool, check_nan: builtins.bool = True) -> None:
    """Turn anomaly detection on or off for this thread (``ember.autograd.set_detect_anomaly`` as a call)."""
    set_detect_anomaly(enabled, check_nan)


def _assert(condition: Any, message: str = "") -> None:
    """PyTorch's ``torch._assert``: raise ``AssertionError(message)`` unless ``condition`` holds (a check that
    ``ember.fx`` records as a node instead of branching on a traced value)."""
    if not condition:
        raise AssertionError(message)

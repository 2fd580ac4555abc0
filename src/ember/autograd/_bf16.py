"""bfloat16 on a backend whose kernels would compute in it (NumPy through ml_dtypes): each operator computes in
float32 and rounds its result to bfloat16 once, as PyTorch's CPU kernels do.

ml_dtypes' ufuncs round every call (``np.sum`` accumulates in bfloat16, an operator made of several ufuncs
rounds between them), so ``Function.apply`` hands an operator with a bfloat16 NumPy input to :func:`widened`:
the bfloat16 inputs are cast to float32 (exactly), the operator runs on them, and its floating results are cast
back to bfloat16 (round to nearest even) where PyTorch's promotion gives bfloat16. The casts are graph nodes,
so the gradient flows back in bfloat16: the operator's backward runs in float32 on the widened gradient and its
input gradients are rounded once. Views, casts, copies across devices and the random in-place fills keep their
bfloat16 arrays (``Op.bf16_native``): a view of a widened copy would not share the input's memory.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from .._dtype import bfloat16, float32
from .._tensor import Tensor
from ..backends._base import REFUSED_DTYPES, WIDEN_BFLOAT16
from ._grad_mode import STATE

F = TypeVar("F", bound=Callable[..., Any])

#: ``[dtype]`` once a backend made a bfloat16 array dtype that needs widening (NumPy: ml_dtypes' dtype), else [None]
WIDEN = WIDEN_BFLOAT16
#: ``[Cast.apply]``, set by ``ops/_other_convert.py`` (the operator floor, above this one)
CAST: list[Any] = [None]


def _promoted_bf16(args: tuple[Any, ...]) -> bool:
    """Whether PyTorch's promotion of ``args`` gives bfloat16: the floating tensors with dims decide, else the
    zero-dim ones (every one of them bfloat16)."""
    dims: list[Any] = []
    zero: list[Any] = []
    for a in args:
        if isinstance(a, Tensor):
            d = a.dtype
            if d.is_floating_point or d.is_complex:
                (dims if a._data.ndim else zero).append(d)
    deciding = dims or zero
    return all(d is bfloat16 for d in deciding)


def _native_bf16(args: tuple[Any, ...], cls: Any = None) -> Any:
    """The widened bfloat16 array dtype when a tensor in ``args`` has it, else None (an identity test per argument:
    ``dtype.name`` costs ~1.5 µs)."""
    native = WIDEN[0]
    found = None
    for a in args:
        if isinstance(a, Tensor):
            dt = a._data.dtype
            if dt is native:
                found = native
            elif REFUSED_DTYPES and dt in REFUSED_DTYPES:
                op = getattr(cls, "__name__", "this operator")
                raise NotImplementedError(
                    f"{op} is not implemented for {a.dtype} on the CPU (as in PyTorch): cast to float32 first"
                )
    return found


def rounds_once(numbers: bool = False) -> Callable[[F], F]:
    """Mark a composite PyTorch computes as one kernel (``addcmul``, ``lerp``, ``add`` with ``alpha``): on bfloat16
    inputs (any backend: the torch backend's composite would round between its steps too) its body runs in float32
    and its result is rounded once (``numbers``: Python-number arguments rounded to bfloat16 first, as PyTorch's CPU
    kernel reads them; its CUDA kernel reads them in float32, unrounded: TensorIterator converts a CPU scalar to the
    common dtype only for an operation on the CPU)."""

    def deco(fn: F) -> F:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            first = next((a for a in args if isinstance(a, Tensor) and a.dtype is bfloat16), None)
            if first is None:
                return fn(*args, **kwargs)
            cast, native, be = CAST[0], first._data.dtype, first._backend
            rounded = numbers and be.device.type == "cpu"
            wide = tuple(_widen(cast, a, native, rounded, be) for a in args)
            out = fn(*wide, **kwargs)
            if not _promoted_bf16(args):
                return out
            return tuple(_round(cast, o) for o in out) if isinstance(out, tuple) else _round(cast, out)

        return run  # type: ignore[return-value]

    return deco


def _widen(cast: Any, a: Any, native: Any, numbers: bool, backend: Any = None) -> Any:
    if isinstance(a, Tensor) and a._data.dtype == native:
        return cast(a, float32)
    if numbers and a.__class__ in (float, int):
        return _round_number(a, native, backend)
    return a


def _round_number(v: Any, native: Any, backend: Any) -> float:
    """The Python number ``v`` rounded to bfloat16 (``native``: ``backend``'s bfloat16 dtype)."""
    t = getattr(native, "type", None)
    if t is not None:  # NumPy's (ml_dtypes) dtype: its scalar type converts
        return float(t(v))
    return float(backend.to_numpy(backend.asarray(v, bfloat16)))


def widened(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``cls.apply(*args, **kwargs)`` computed in float32 when an input is a widened bfloat16 array, else None."""
    native = _native_bf16(args, cls)
    if native is None:
        return None
    region = STATE.autocast  # (autocast already cast the inputs: the float32 call inside is not cast again)
    STATE.autocast = None
    try:
        return _widened(cls, args, kwargs, native)
    finally:
        STATE.autocast = region


def _widened(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], native: Any) -> Any:
    cast = CAST[0]
    numbers = cls.bf16_numbers
    wide = tuple(_widen(cast, a, native, numbers) for a in args)
    out = cls.apply(*wide, **kwargs)
    first = args[0] if args else None
    follows = cls.bf16_follows_input and isinstance(first, Tensor) and first._data.dtype == native
    if follows and isinstance(out, tuple):  # (the result follows; statistics stay float32, as PyTorch's)
        return (_round(cast, out[0]), *out[1:])
    if not follows and not _promoted_bf16(args):
        return out
    if isinstance(out, tuple):
        return tuple(_round(cast, o) for o in out)
    return _round(cast, out)


def _round(cast: Any, out: Any) -> Any:
    """A float32 result rounded to bfloat16; where its node kept the float32 result for backward, the node keeps
    the rounded values (PyTorch's backward reads the bfloat16 output)."""
    if not isinstance(out, Tensor) or out.dtype is not float32:
        return out
    r = cast(out, bfloat16)
    node = out._creator
    kept = getattr(node, "_outs", None) if node is not None else None
    if kept:
        wide = r._data.astype(out._data.dtype)
        node._outs = tuple(wide if k is out._data else k for k in kept)
    return r

"""``add``/``sub`` with an ``alpha`` other than the int 1: ``input (op) alpha * other`` as PyTorch's one kernel."""

from __future__ import annotations

import numbers
from typing import Any

from .._creation import full
from .._tensor import Tensor
from ..autograd._bf16 import rounds_once
from ._util import _binary, promote

__all__ = ["scaled"]


@rounds_once(numbers=True)
def scaled(op: Any, mul_op: Any, input: Any, other: Any, alpha: Any) -> Tensor:
    """``input (op) alpha * other`` (``op``: ``Add``/``Sub``, ``mul_op``: ``Mul``). ``alpha`` is checked against the
    result dtype as PyTorch's ``alpha_check`` (also an alpha equal to 1: ``1.0`` with integers, ``True`` with floats
    raise); a number ``other`` enters as PyTorch's wrapped scalar, a 0-d tensor of the result dtype, scaled in that
    dtype; bfloat16 rounds once (``rounds_once``: on the CPU the numbers are read rounded to bfloat16 first)."""
    a, b = promote(op.__name__.lower(), input, other)
    d = (a if isinstance(a, Tensor) else b).dtype
    boolean = isinstance(alpha, bool) or type(alpha).__name__ == "bool_"  # (NumPy's bool too)
    if boolean and d.kind != "b":
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if isinstance(alpha, numbers.Complex) and not isinstance(alpha, numbers.Real) and d.kind != "c":
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex number.")
    if d.kind in "biu" and not (boolean or isinstance(alpha, numbers.Integral)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    if alpha == 1:  # (1.0, True: checked, nothing to scale)
        return _binary(op, input, other)
    if not isinstance(other, Tensor) and isinstance(input, Tensor):
        other = full((), other, dtype=d, device=input.device)
    return _binary(op, input, _binary(mul_op, other, bool(alpha) if d.kind == "b" else alpha))  # (bool: truth)

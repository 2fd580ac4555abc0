"""Pointwise logical and bitwise operators (torch docs, "Pointwise Ops"); no gradient."""

from __future__ import annotations

from typing import Any

from .._errors import DTypeError
from .._tensor import Tensor
from ..autograd._function import Op
from ._util import _binary, promote

__all__ = [
    "bitwise_and",
    "bitwise_left_shift",
    "bitwise_not",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
]
METHODS = list(__all__)


# -- comparison and logic (no gradient) -----------------------------------------------------------
def _compare(ufunc: str) -> type[Op]:
    class Compare(Op):
        differentiable = False

        def forward(self, a: Any, b: Any) -> Any:
            return getattr(self.backend.xp, ufunc)(a, b)

    Compare.__name__ = Compare.__qualname__ = ufunc.title().replace("_", "")
    return Compare


LogicalAnd, LogicalOr, LogicalXor = (_compare(n) for n in ("logical_and", "logical_or", "logical_xor"))


def _cmp(cls: type[Op], a: Any, b: Any) -> Tensor:
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{cls.__name__.lower()}: expected at least one Tensor")
    return _binary(cls, a, b)


def logical_and(input: Any, other: Any) -> Tensor:
    """Element-wise logical AND (nonzero is true), a bool tensor."""
    return _cmp(LogicalAnd, input, other)


def logical_or(input: Any, other: Any) -> Tensor:
    """Element-wise logical OR (nonzero is true), a bool tensor."""
    return _cmp(LogicalOr, input, other)


def logical_xor(input: Any, other: Any) -> Tensor:
    """Element-wise logical XOR (nonzero is true), a bool tensor."""
    return _cmp(LogicalXor, input, other)


class LogicalNot(Op):
    differentiable = False

    def forward(self, a: Any) -> Any:
        return self.backend.xp.logical_not(a)


class BitwiseNot(Op):
    differentiable = False

    def forward(self, a: Any) -> Any:
        return self.backend.xp.invert(a)


def logical_not(input: Tensor) -> Tensor:
    """Element-wise logical NOT (nonzero is true), a bool tensor."""
    return LogicalNot.apply(input)


def bitwise_not(input: Tensor) -> Tensor:
    """Bitwise NOT of an integer or bool tensor."""
    if input.dtype.kind == "f":
        raise DTypeError(f"bitwise_not: expected an integer or bool tensor, got {input.dtype}")
    return BitwiseNot.apply(input)


def _bitwise_op(name: str, ufunc: str) -> type[Op]:
    class _Op(Op):
        differentiable = False

        def forward(self, a: Any, b: Any) -> Any:
            return getattr(self.backend.xp, ufunc)(a, b)

    _Op.__name__ = _Op.__qualname__ = "".join(p.capitalize() for p in name.split("_"))
    return _Op


BitwiseAnd = _bitwise_op("bitwise_and", "bitwise_and")


BitwiseOr = _bitwise_op("bitwise_or", "bitwise_or")


BitwiseXor = _bitwise_op("bitwise_xor", "bitwise_xor")


LeftShift = _bitwise_op("bitwise_left_shift", "left_shift")


RightShift = _bitwise_op("bitwise_right_shift", "right_shift")


def _check(name: str, x: Any) -> None:
    if isinstance(x, Tensor):
        if x.dtype.kind in "fc":
            raise DTypeError(f"{name}: expected integer or bool tensors, got {x.dtype}")
    elif isinstance(x, float):
        raise DTypeError(f"{name}: expected an integer or bool operand, got the float {x}")
    elif not isinstance(x, int):
        raise TypeError(f"{name}: expected a Tensor or a Python int, got {type(x).__name__}")


def _apply(cls: type[Op], name: str, a: Any, b: Any) -> Tensor:
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{name}: expected at least one Tensor")
    _check(name, a)
    _check(name, b)
    a, b = promote(name, a, b)
    if cls in (LeftShift, RightShift):  # shifting bools shifts 0/1 as int64 (PyTorch)
        a, b = (x.long() if isinstance(x, Tensor) and x.dtype.name == "bool" else x for x in (a, b))
    if not isinstance(a, Tensor):  # a Python int on the left: make it a tensor of b's dtype
        a = Tensor(a, dtype=b.dtype, device=b.device)
    return cls.apply(a, b)


def bitwise_and(input: Any, other: Any) -> Tensor:
    """Bitwise AND of integer tensors (logical AND of bool tensors): ``input & other``."""
    return _apply(BitwiseAnd, "bitwise_and", input, other)


def bitwise_or(input: Any, other: Any) -> Tensor:
    """Bitwise OR of integer tensors (logical OR of bool tensors): ``input | other``."""
    return _apply(BitwiseOr, "bitwise_or", input, other)


def bitwise_xor(input: Any, other: Any) -> Tensor:
    """Bitwise XOR of integer tensors (logical XOR of bool tensors): ``input ^ other``."""
    return _apply(BitwiseXor, "bitwise_xor", input, other)


def bitwise_left_shift(input: Any, other: Any) -> Tensor:
    """``input << other`` on integer tensors."""
    return _apply(LeftShift, "bitwise_left_shift", input, other)


def bitwise_right_shift(input: Any, other: Any) -> Tensor:
    """``input >> other`` on integer tensors (arithmetic shift for signed types)."""
    return _apply(RightShift, "bitwise_right_shift", input, other)

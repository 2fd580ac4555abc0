"""The operator layer: one ``Op`` per operator (forward and backward together), and thin functions.

``METHODS`` lists the operators that are also Tensor methods (``t.exp()``, ``t.sum(1)``); Tensor looks
them up there, so an operator is added in one place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import _creation
from ._elementwise import (
    abs,
    add,
    bitwise_not,
    clamp,
    clip,
    div,
    divide,
    eq,
    exp,
    floor,
    floor_divide,
    ge,
    gt,
    le,
    log,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    lt,
    maximum,
    minimum,
    mul,
    multiply,
    ne,
    neg,
    negative,
    pow,
    relu,
    remainder,
    sigmoid,
    sign,
    sqrt,
    sub,
    subtract,
    tanh,
    true_divide,
    trunc,
    where,
)
from ._index import getitem, nonzero
from ._join import cat, chunk, concat, concatenate, split, stack, unbind
from ._linalg import bmm, matmul, mm
from ._reduce import amax, amin, argmax, argmin, max, mean, min, sum
from ._shape import (
    broadcast_to,
    expand,
    expand_as,
    flatten,
    permute,
    reshape,
    squeeze,
    swapaxes,
    swapdims,
    t,
    transpose,
    unsqueeze,
    view,
)

__all__ = [
    "METHODS",
    "abs",
    "add",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "bitwise_not",
    "bmm",
    "broadcast_to",
    "cat",
    "chunk",
    "clamp",
    "clip",
    "concat",
    "concatenate",
    "div",
    "divide",
    "eq",
    "exp",
    "expand",
    "expand_as",
    "flatten",
    "floor",
    "floor_divide",
    "ge",
    "getitem",
    "gt",
    "le",
    "log",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "lt",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "mm",
    "mul",
    "multiply",
    "ne",
    "neg",
    "negative",
    "nonzero",
    "permute",
    "pow",
    "relu",
    "remainder",
    "reshape",
    "sigmoid",
    "sign",
    "split",
    "sqrt",
    "squeeze",
    "stack",
    "sub",
    "subtract",
    "sum",
    "swapaxes",
    "swapdims",
    "t",
    "tanh",
    "transpose",
    "true_divide",
    "trunc",
    "unbind",
    "unsqueeze",
    "view",
    "where",
]

#: Tensor methods served by operators: name -> function taking the tensor first.
METHODS: dict[str, Callable[..., Any]] = {
    name: globals()[name]
    for name in __all__
    if name not in ("METHODS", "cat", "concat", "concatenate", "stack", "getitem")
}
METHODS.update(
    {
        "new_zeros": _creation.new_zeros,
        "new_ones": _creation.new_ones,
        "new_full": _creation.new_full,
        "new_empty": _creation.new_empty,
        "new_tensor": _creation.new_tensor,
        "clamp_min": lambda x, min: clamp(x, min=min),
        "clamp_max": lambda x, max: clamp(x, max=max),
    }
)


def register_method(name: str, fn: Callable[..., Any]) -> None:
    """Expose ``fn(tensor, ...)`` as ``Tensor.<name>`` (used by ember.nn.functional and extensions)."""
    METHODS[name] = fn

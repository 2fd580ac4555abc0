"""PyTorch's control-flow operators, ``ember.cond`` and ``ember.while_loop``, run eagerly.

PyTorch traces both branches or the loop body into a graph; Ember runs them as Python runs an ``if`` or a
``while``: the predicate is read on the host, and gradients flow through the branch or the iterations that ran.
Under ``ember.compile`` that host read makes the step run eagerly, as any ``if`` on a tensor does. What PyTorch
refuses is refused with its words: a predicate of several elements, and a loop body whose outputs do not match the
carried values in number, shape or dtype.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ._tensor import Tensor

__all__ = ["cond", "while_loop"]


def _pred(value: Any, what: str) -> bool:
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise RuntimeError(f"Expected {what} to be bool or single-element tensor, but got {value}.")
        return bool(value.item())
    return bool(value)


def cond(
    pred: bool | int | float | Tensor,
    true_fn: Callable[..., Any],
    false_fn: Callable[..., Any],
    operands: tuple[Any, ...] | list[Any] = (),
) -> Any:
    """``true_fn(*operands)`` if ``pred`` holds, else ``false_fn(*operands)``."""
    return (true_fn if _pred(pred, "pred") else false_fn)(*operands)


def _check_carried(out: Sequence[Any], carried: Sequence[Any]) -> None:
    if len(out) != len(carried):
        raise RuntimeError(
            "Expected body_fn_output and carried_inputs to have same number of outputs but got "
            f"{len(out)} and {len(carried)}"
        )
    for i, (a, b) in enumerate(zip(out, carried)):
        if isinstance(a, Tensor) and isinstance(b, Tensor):
            for field, x, y in (
                ("shape", a.shape, b.shape),
                ("dtype", a.dtype, b.dtype),
                ("device", a.device, b.device),
            ):
                if x != y:
                    raise RuntimeError(
                        "Expected body_fn_output and carried_inputs to have same metadata but found: "
                        f"pair[{i}] differ in '{field}: {x} vs {y}'"
                    )


def while_loop(
    cond_fn: Callable[..., Any], body_fn: Callable[..., Any], carried_inputs: tuple[Any, ...] | list[Any]
) -> Any:
    """Run ``carried = body_fn(*carried)`` while ``cond_fn(*carried)`` holds; return the last ``carried``."""
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(f"while_loop: carried_inputs must be a tuple or list, got {type(carried_inputs).__name__}")
    carried = tuple(carried_inputs)
    result: Any = carried
    while _pred(cond_fn(*carried), "cond_fn's output"):
        result = body_fn(*carried)
        out = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        _check_carried(out, carried)
        carried = out
    return result

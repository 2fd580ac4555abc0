"""Checks the autograd engine makes per node: saved inputs unchanged since forward, and each gradient's shape and
dtype against its input."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor

__all__: list[str] = []


def _unchanged(inputs: tuple[Any, ...], vs: tuple[int, ...]) -> bool:
    """Whether every Tensor input is still at the version recorded with its node (``-1``: not a Tensor)."""
    for a, v in zip(inputs, vs):  # noqa: SIM110  (a loop: no generator per node)
        if v >= 0 and (a._vcl[0] if a._vcl is not None else 0) != v:
            return False
    return True


def _complex_to_input(g: Tensor, inp: Tensor) -> Tensor:
    """A gradient whose dtype is not its input's, in the input's dtype (complex where the input is real, or the
    reverse; or another precision).

    PyTorch's engine does the same: the gradient of a real input that met complex values is the real part of
    the complex gradient (a real perturbation sees only it). Operators meet real and complex operands through
    a cast (type promotion), whose backward takes the real part already; this is the safety net of the Tensor
    path (``create_graph``, user Functions); the array path leaves it out to keep the float path as it was.
    """
    be = inp._backend
    cg, ci = g._data.dtype in be.complex_dtypes, inp._data.dtype in be.complex_dtypes
    if cg == ci:  # another precision (a user Function's backward under autocast): the input's, as PyTorch's engine
        return g.to(inp.dtype) if g._data.dtype in be.grad_dtypes and inp._data.dtype in be.grad_dtypes else g
    return g.real if cg else g.to(inp.dtype)  # (the property: the engine sits under the operators)


def _shape_error(node: Any, shape: Any, inp: Tensor) -> RuntimeError:
    return RuntimeError(
        f"{node.name}: backward returned a gradient of shape {tuple(shape)} for an input of shape {tuple(inp.shape)}"
    )

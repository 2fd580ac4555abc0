"""``Tensor.resize_`` / ``resize_as_``: give a tensor a new shape in place (PyTorch's storage resize).

The elements that fit, in row-major order, are kept; new elements are uninitialised in PyTorch and zero here.
A tensor that requires grad cannot be resized (as in PyTorch). The tensor's version is bumped; views taken
before the resize keep the old memory (Ember tensors own arrays, not shared storages).
"""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ._util import as_shape

__all__: list[str] = []
METHODS = ["resize_", "resize_as_"]


def resize_(input: Tensor, *sizes: Any, memory_format: Any = None) -> Tensor:
    """Resize ``input`` in place to ``sizes``; returns ``input``."""
    shape = as_shape(sizes)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"resize_: negative size in {shape}")
    if input.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if shape == input.shape:
        return input
    xp = input._backend.xp
    n = 1
    for s in shape:
        n *= s
    flat = xp.reshape(input._data, (-1,))
    keep = min(n, flat.shape[0])
    new = xp.zeros((n,), dtype=input._data.dtype)
    if keep:
        new[:keep] = flat[:keep]
    input._data = xp.reshape(new, shape)
    input._vc[0] += 1
    return input


def resize_as_(input: Tensor, the_template: Tensor, memory_format: Any = None) -> Tensor:
    """``input.resize_(the_template.shape)``."""
    return resize_(input, *the_template.shape)

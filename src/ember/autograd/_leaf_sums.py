"""The engine's per-leaf gradient sums (first order, leaves without hooks), as PyTorch sums before AccumulateGrad.

Each path's gradient goes into the leaf's entry ``[leaf, sum, owned]``: the first is kept as it came; the
second is added out of place, into a new array the engine owns; from the third on, they are added in place into
that array. A ``WeightGrad`` (``backends/_weight_grad.py``) is added by one accumulating product; one left alone
is computed when the sum is delivered. Nothing ever writes into an array that the caller, a node or ``.grad``
holds.
"""

from __future__ import annotations

import operator
from typing import Any

from .._tensor import Tensor
from ..backends._weight_grad import WeightGrad, grad_array

__all__: list[str] = []


def add_leaf_grad(sums: dict[int, list[Any]], leaf: Tensor, g: Any) -> None:
    """Add one path's gradient ``g`` (an array, or a ``WeightGrad``) to ``leaf``'s entry in ``sums``."""
    be = leaf._backend
    if g.__class__ is not be.array_type and g.__class__ is not WeightGrad:
        g = be.asarray(g)  # (ToDevice)
    acc = sums.get(id(leaf))
    if acc is None:
        sums[id(leaf)] = [leaf, g, False]
        return
    s = acc[1]
    if not acc[2]:  # the first sum: a new array, the engine's own
        acc[2] = True
        if s.__class__ is WeightGrad:
            s = s.value()
        else:
            acc[1] = s + grad_array(g)
            return
    acc[1] = g.add_to(s) if g.__class__ is WeightGrad else operator.iadd(s, g)


def leaf_sum(acc: list[Any]) -> Tensor:
    """The entry's total as a Tensor of its leaf's backend."""
    be = acc[0]._backend
    g = grad_array(acc[1])
    return Tensor._make(g if g.__class__ is be.array_type else be.asarray(g), be)  # (a NumPy sum of 0-d arrays)

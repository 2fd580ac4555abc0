"""``WeightGrad``: a weight's gradient ``dz^T x`` from one use of ``z = x w^T``, computed only when needed.

A recurrent cell's weights get one such gradient per time step. Computed at once, each is a product and
then an addition into the weight's running sum (``autograd/_leaf_sums.py``); handed over as a ``WeightGrad``,
the sum takes it as one accumulating product instead (``beta = 1`` of BLAS's GEMM: no temporary, no separate
pass over the sum). The step kernels return one only when asked (``lazy=True``, which the cells' array rule
passes; only the torch backend's cells make them), and every other consumer turns it into an array
(:func:`grad_array`): the engine routes an array to any node, hook or leaf with hooks.
"""

from __future__ import annotations

from typing import Any

__all__ = ["WeightGrad", "grad_array"]


class WeightGrad:
    """``dz^T x`` (``dz`` (N, O), ``x`` (N, I): the gradient of the (O, I) weight of ``z = x w^T``), not yet
    computed: ``value()`` computes it (a new array), ``add_to(s)`` adds it into the array ``s`` in place
    (through ``backend.weight_grad`` and ``backend.weight_grad_add_``)."""

    __slots__ = ("backend", "dz", "shape", "x")

    def __init__(self, dz: Any, x: Any, backend: Any) -> None:
        self.dz, self.x, self.backend = dz, x, backend
        self.shape = (dz.shape[1], x.shape[1])

    def value(self) -> Any:
        return self.backend.weight_grad(self.dz, self.x)

    def add_to(self, s: Any) -> Any:
        return self.backend.weight_grad_add_(s, self.dz, self.x)


def grad_array(g: Any) -> Any:
    """``g`` as an array (a ``WeightGrad`` computed; anything else as it is)."""
    return g.value() if g.__class__ is WeightGrad else g

"""``ember.autograd.grad`` with PyTorch's whole signature: ``only_inputs`` (deprecated, ignored), ``allow_unused``
(None: ``materialize_grads``), ``is_grads_batched`` (one backward per row of the seed gradients, results stacked),
``materialize_grads`` (zeros for unused inputs) and a dict of inputs (a dict of gradients back)."""

from __future__ import annotations

import warnings
from typing import Any

from .._tensor import Tensor
from ._engine import grad as _grad

__all__ = ["grad"]


def grad(
    outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None, create_graph: bool = False,
    only_inputs: bool = True, allow_unused: bool | None = None, is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> Any:  # fmt: skip
    """Gradients of ``outputs`` with respect to ``inputs``, returned (``.grad`` is left untouched)."""
    if not only_inputs:
        warnings.warn("grad: only_inputs is deprecated and ignored (it defaults to True); to accumulate gradients "
                      "elsewhere in the graph use ember.autograd.backward", FutureWarning, stacklevel=2)  # fmt: skip
    if materialize_grads and allow_unused is False:
        raise ValueError("grad: allow_unused must be True or not given when materialize_grads=True")
    unused = materialize_grads if allow_unused is None else allow_unused
    names = list(inputs) if isinstance(inputs, dict) else None
    ins = list(inputs.values()) if names is not None else inputs
    if is_grads_batched:
        from ..ops import stack  # (here: ``ember.autograd`` is imported before the operators)

        seeds = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
        rows = seeds[0].shape[0]
        per = [_grad(outputs, ins, [None if s is None else s[b] for s in seeds], retain_graph=True,
                     create_graph=create_graph, allow_unused=unused) for b in range(rows)]  # fmt: skip
        listed = [ins] if isinstance(ins, Tensor) else list(ins)
        res = tuple(
            None if all(p[k] is None for p in per)
            else stack([_or_zeros(p[k], t) for p in per])
            for k, t in enumerate(listed)
        )  # fmt: skip
    else:
        res = _grad(outputs, ins, grad_outputs, retain_graph, create_graph, unused)
    if materialize_grads:
        listed = [ins] if isinstance(ins, Tensor) else list(ins)
        res = tuple(_or_zeros(g, t) for g, t in zip(res, listed, strict=True))
    return dict(zip(names, res, strict=True)) if names is not None else res


def _or_zeros(g: Tensor | None, like: Tensor) -> Tensor:
    from .._creation import zeros_like

    return zeros_like(like) if g is None else g

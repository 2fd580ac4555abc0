"""Finite-difference gradient checks (float64)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._tensor import Tensor
from ._engine import grad

__all__ = ["gradcheck", "gradgradcheck"]


def _outputs(fn: Callable[..., Any], inputs: Sequence[Any]) -> list[Tensor]:
    out = fn(*inputs)
    outs = [out] if isinstance(out, Tensor) else [o for o in out if isinstance(o, Tensor)]
    return [o for o in outs if o.dtype.is_floating_point]


def gradcheck(
    fn: Callable[..., Any],
    inputs: Any,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
) -> bool:
    """Compare autograd's vector-Jacobian products with central finite differences.

    Inputs that require grad must be float64. For each output, a random direction ``v`` is drawn and
    ``v . dout/dx`` from backward is checked against ``(v . out(x + eps e_i) - v . out(x - eps e_i)) / 2eps``
    for every element ``i`` of every input.
    """
    inputs = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
    diff = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    for t in diff:
        if t.dtype.name != "float64":
            raise TypeError(f"gradcheck: inputs that require grad must be float64, got {t.dtype}")
    rng = np.random.default_rng(0)
    outs = _outputs(fn, inputs)
    for k, out in enumerate(outs):
        if not out.requires_grad:
            continue
        v = Tensor(rng.standard_normal(out.shape), dtype="float64", device=out.device)
        analytic = grad([out], diff, [v], retain_graph=True, allow_unused=True)
        for j, t in enumerate(diff):
            arr = t._data
            numeric = np.zeros(arr.shape)
            for i in np.ndindex(*arr.shape):
                old = float(arr[i])  # a number: torch's arr[i] is a view that the writes below would change
                arr[i] = old + eps
                plus = float((_outputs(fn, inputs)[k].detach().numpy() * v.numpy()).sum())
                arr[i] = old - eps
                minus = float((_outputs(fn, inputs)[k].detach().numpy() * v.numpy()).sum())
                arr[i] = old
                numeric[i] = (plus - minus) / (2 * eps)
            a = analytic[j]
            a_np = np.zeros(arr.shape) if a is None else a.detach().numpy()
            if not np.allclose(a_np, numeric, atol=atol, rtol=rtol):
                if raise_exception:
                    err = np.abs(a_np - numeric).max()
                    raise AssertionError(
                        f"gradcheck: output {k}, input {j} (shape {t.shape}): analytic and numerical "
                        f"gradients differ by up to {err:.3g}\nanalytic:\n{a_np}\nnumerical:\n{numeric}"
                    )
                return False
    return True


def gradgradcheck(
    fn: Callable[..., Any],
    inputs: Any,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
) -> bool:
    """Second order: gradcheck the function ``x -> d(v . fn(x))/dx`` built with ``create_graph=True``."""
    inputs = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
    diff_idx = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    rng = np.random.default_rng(1)
    first = _outputs(fn, inputs)[0]
    v = Tensor(rng.standard_normal(first.shape), dtype="float64", device=first.device)

    def first_grads(*xs: Any) -> tuple[Tensor, ...]:
        out = _outputs(fn, xs)[0]
        gs = grad([out], [xs[i] for i in diff_idx], [v], create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_grads, inputs, eps=eps, atol=atol, rtol=rtol)

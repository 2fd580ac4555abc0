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
    return [o for o in outs if o.dtype.kind in "fc"]


def _direction(rng: np.random.Generator, out: Tensor) -> Tensor:
    """A random upstream gradient ``v`` for ``out`` (complex for a complex output)."""
    v = rng.standard_normal(out.shape)
    if out.dtype.is_complex:
        v = v + 1j * rng.standard_normal(out.shape)
    return Tensor(v, dtype="complex128" if out.dtype.is_complex else "float64", device=out._backend)  # out's backend


def _loss(fn: Callable[..., Any], inputs: Sequence[Any], k: int, v: np.ndarray) -> float:
    """``sum(Re(conj(v) * out_k))``: the real function whose gradient ``grad(out_k, x, v)`` is (PyTorch's)."""
    out = _outputs(fn, inputs)[k].detach().numpy()
    return float(np.real(np.conj(v) * out).sum())


#: PyTorch's gradcheck/gradgradcheck switches Ember accepts (its check is the full backward comparison)
_GRADCHECK_SWITCHES = frozenset({
    "nondet_tol", "check_undefined_grad", "check_grad_dtypes", "check_batched_grad", "check_batched_forward_grad",
    "check_forward_ad", "fast_mode", "masked",
})  # fmt: skip
_GRADGRADCHECK_SWITCHES = frozenset({
    "gen_non_contig_grad_outputs", "nondet_tol", "check_undefined_grad", "check_grad_dtypes", "check_batched_grad",
    "check_fwd_over_rev", "check_rev_over_rev", "fast_mode", "masked",
})  # fmt: skip


def _known_switches(name: str, given: dict[str, Any], known: frozenset[str]) -> None:
    unknown = sorted(set(given) - known)
    if unknown:
        raise TypeError(f"{name}() got an unexpected keyword argument {unknown[0]!r}")


def gradcheck(
    func: Callable[..., Any],
    inputs: Any,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    check_backward_ad: bool = True,
    **pytorch_checks: Any,
) -> bool:
    """Compare autograd's vector-Jacobian products with central finite differences.

    Inputs that require grad must be float64 or complex128. For each output a random direction ``v`` is
    drawn, and the gradient of the real function ``L = sum(Re(conj(v) * out))`` from backward
    (``grad(out, x, v)``) is checked against central differences of ``L`` in every element of every input;
    a complex input's real and imaginary parts are perturbed apart, and its gradient is ``dL/dre + i dL/dim``
    (PyTorch's convention: the conjugate Wirtinger derivative, times 2).

    PyTorch's other switches (``fast_mode``, ``nondet_tol``, ``check_undefined_grad``, ``check_batched_grad``,
    ``check_forward_ad`` ...) are accepted; this check is the full backward comparison whatever they say
    (``check_backward_ad=False`` skips it).
    """
    _known_switches("gradcheck", pytorch_checks, _GRADCHECK_SWITCHES)
    if not check_backward_ad:
        return True
    fn = func
    inputs = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
    diff = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    for t in diff:
        if t.dtype.name not in ("float64", "complex128"):
            raise TypeError(f"gradcheck: inputs that require grad must be float64 or complex128, got {t.dtype}")
    rng = np.random.default_rng(0)
    outs = _outputs(fn, inputs)
    for k, out in enumerate(outs):
        if not out.requires_grad:
            continue
        v = _direction(rng, out)
        analytic = grad([out], diff, [v], retain_graph=True, allow_unused=True)
        vn = v.numpy()
        for j, t in enumerate(diff):
            arr = t._data
            numeric = np.zeros(arr.shape, dtype=np.complex128 if t.dtype.is_complex else np.float64)
            steps = (eps, 1j * eps) if t.dtype.is_complex else (eps,)
            for i in np.ndindex(*arr.shape):
                old = complex(arr[i]) if t.dtype.is_complex else float(arr[i])  # a number, not a torch view
                for step in steps:
                    arr[i] = old + step
                    plus = _loss(fn, inputs, k, vn)
                    arr[i] = old - step
                    minus = _loss(fn, inputs, k, vn)
                    arr[i] = old
                    numeric[i] += (plus - minus) / (2 * eps) * (step / eps)
            a = analytic[j]
            a_np = np.zeros(arr.shape) if a is None else a.detach().numpy()
            if not np.allclose(a_np, numeric, atol=atol, rtol=rtol):
                if raise_exception:
                    err = np.abs(a_np - numeric).max()
                    raise AssertionError(
                        f"gradcheck: output {k}, input {j} (shape {tuple(t.shape)}): analytic and numerical "
                        f"gradients differ by up to {err:.3g}\nanalytic:\n{a_np}\nnumerical:\n{numeric}"
                    )
                return False
    return True


def gradgradcheck(
    func: Callable[..., Any],
    inputs: Any,
    grad_outputs: Any = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    **pytorch_checks: Any,
) -> bool:
    """Second order: gradcheck the function ``x -> d(v . fn(x))/dx`` built with ``create_graph=True`` (``v``:
    ``grad_outputs``, else a random direction). PyTorch's other switches are accepted, as in ``gradcheck``."""
    _known_switches("gradgradcheck", pytorch_checks, _GRADGRADCHECK_SWITCHES)
    fn = func
    inputs = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
    diff_idx = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    rng = np.random.default_rng(1)
    first = _outputs(fn, inputs)[0]
    if grad_outputs is not None:
        v = grad_outputs[0] if isinstance(grad_outputs, (list, tuple)) else grad_outputs
    else:
        v = _direction(rng, first)

    def first_grads(*xs: Any) -> tuple[Tensor, ...]:
        out = _outputs(fn, xs)[0]
        gs = grad([out], [xs[i] for i in diff_idx], [v], create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_grads, inputs, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception)

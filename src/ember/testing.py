"""Testing helpers: compare an operator with PyTorch and check its gradients (like ``torch.testing``).

``check_op(fn, *args, torch_fn=...)`` runs the three checks every differentiable operator needs:

1. a float64 finite-difference gradcheck (and ``second_order=True``: a gradgradcheck);
2. forward parity with PyTorch in float32 and float64, when torch is installed;
3. backward parity with PyTorch (gradients of every float input for a random upstream gradient).

Positional ``args`` that are NumPy float or complex arrays become differentiable tensors (complex ones as
complex64 in the float32 run and complex128 in the float64 run; their gradcheck perturbs real and imaginary
parts); integer and bool arrays become tensors without grad; anything else (ints, tuples, strings) is passed
through unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._tensor import Tensor
from ._testing_make import assert_allclose, make_tensor  # (PyTorch's torch.testing helpers)
from .autograd import grad as _grad
from .autograd import gradcheck, gradgradcheck

__all__ = [
    "assert_allclose",
    "assert_close",
    "check_op",
    "make_tensor",
    "torch_differentiates",
    "torch_or_none",
    "TOLERANCES",
]

#: (rtol, atol) for forward/backward parity by dtype.
TOLERANCES = {"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12)}


def torch_or_none() -> Any:
    """The torch module, or None when it is not installed (or ``torch`` names Ember itself here)."""
    from .backends import real_torch

    return real_torch()


def torch_differentiates(fn: Callable[[Any, Any], Any]) -> bool:
    """Whether the installed torch can differentiate ``fn(torch, x)`` for a float64 ``x`` of shape (2, 3).

    Older releases lack some derivatives (torch 2.11 has none for ``aminmax``, ``narrow_copy`` or
    ``nextafter``; 2.13 has them): parity tests then compare forward values only.
    """
    torch = torch_or_none()
    if torch is None:
        return False
    x = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
    try:
        out = _outputs(fn(torch, x))[0]
        torch.autograd.grad(out.sum(), [x])
    except (RuntimeError, NotImplementedError):
        return False
    return True


def _np(x: Any) -> np.ndarray:
    if isinstance(x, Tensor):
        return x.detach().numpy()
    if hasattr(x, "detach"):
        if getattr(x, "_is_zerotensor", lambda: False)():  # torch's lazily zero gradients (sgn, ...)
            return np.zeros(tuple(x.shape))
        x = x.detach()
        if getattr(x, "is_conj", lambda: False)() or getattr(x, "is_neg", lambda: False)():
            x = x.resolve_conj().resolve_neg()  # torch's lazy conjugate/negative views
        return x.cpu().numpy()
    return np.asarray(x)


def assert_close(actual: Any, expected: Any, rtol: float = 1e-5, atol: float = 1e-8, msg: str = "") -> None:
    """Values (Tensors, torch tensors, arrays, numbers) equal within tolerance, with equal shapes."""
    a, e = _np(actual), _np(expected)
    if a.shape != e.shape:
        raise AssertionError(f"{msg}: shape {tuple(a.shape)} != expected {tuple(e.shape)}")
    np.testing.assert_allclose(
        a.astype(np.float64) if a.dtype.kind == "b" else a,
        e.astype(np.float64) if e.dtype.kind == "b" else e,
        rtol=rtol,
        atol=atol,
        err_msg=msg,
        equal_nan=True,
    )


def _outputs(out: Any) -> list[Any]:
    if isinstance(out, (tuple, list)):
        return list(out)
    return [out]


_COMPLEX = {"float32": "complex64", "float64": "complex128"}


def _as(a: np.ndarray, dtype: str | None) -> np.ndarray:
    """``a`` in the run's dtype: complex arrays in the complex dtype of the run's precision."""
    if not dtype:
        return a
    return a.astype(_COMPLEX.get(dtype, dtype) if a.dtype.kind == "c" else dtype)


def _to_ember(args: Sequence[Any], dtype: str | None, requires_grad: bool) -> list[Any]:
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            if a.dtype.kind in "fc":
                t = Tensor(_as(a, dtype))
                out.append(t.requires_grad_(True) if requires_grad else t)
            else:
                out.append(Tensor(a))
        else:
            out.append(a)
    return out


def _to_torch(torch: Any, args: Sequence[Any], dtype: str) -> list[Any]:
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            t = torch.from_numpy(np.array(_as(a, dtype) if a.dtype.kind in "fc" else a))
            out.append(t.requires_grad_(True) if a.dtype.kind in "fc" else t)
        else:
            out.append(a)
    return out


def _upstream(rng: np.random.Generator, out: Tensor, dtype: str) -> np.ndarray:
    """A random upstream gradient for ``out`` (complex for a complex output)."""
    v = rng.standard_normal(out.shape)
    if out.dtype.is_complex:
        return np.asarray((v + 1j * rng.standard_normal(out.shape)).astype(_COMPLEX[dtype]))
    return np.asarray(v.astype(dtype))


def check_op(
    fn: Callable[..., Any],
    *args: Any,
    torch_fn: Callable[..., Any] | None = None,
    grad: bool = True,
    second_order: bool = False,
    dtypes: Sequence[str] = ("float32", "float64"),
    rtol: float | None = None,
    atol: float | None = None,
    gradcheck_atol: float = 1e-5,
    gradcheck_rtol: float = 1e-3,
    name: str = "",
    finite_differences: bool = True,
) -> None:
    """Gradcheck ``fn`` in float64 and compare forward and backward with ``torch_fn`` (see module doc).

    ``finite_differences=False`` skips the gradcheck (for inputs holding NaN or infinities, where finite
    differences mean nothing) but still compares the gradients with PyTorch's.
    """
    label = name or getattr(fn, "__name__", "op")
    float_idx = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype.kind in "fc"]
    if grad and float_idx and finite_differences:
        xs = _to_ember(args, "float64", True)
        gradcheck(fn, xs, atol=gradcheck_atol, rtol=gradcheck_rtol)
        if second_order:
            gradgradcheck(fn, _to_ember(args, "float64", True), atol=gradcheck_atol, rtol=gradcheck_rtol)
    torch = torch_or_none()
    if torch is None or torch_fn is None:
        return
    rng = np.random.default_rng(123)
    for dtype in dtypes:
        r, a = TOLERANCES[dtype]
        r, a = rtol if rtol is not None else r, atol if atol is not None else a
        e_args = _to_ember(args, dtype, grad)
        t_args = _to_torch(torch, args, dtype)
        e_out = _outputs(fn(*e_args))
        t_out = _outputs(torch_fn(*t_args))
        if len(e_out) != len(t_out):
            raise AssertionError(f"{label}: {len(e_out)} outputs, torch gives {len(t_out)}")
        for k, (eo, to) in enumerate(zip(e_out, t_out, strict=True)):
            assert_close(eo, to, rtol=r, atol=a, msg=f"{label} forward output {k} ({dtype})")
            if isinstance(eo, Tensor) and hasattr(to, "dtype"):
                tname = str(to.dtype).replace("torch.", "")
                if eo.dtype.name != tname:
                    raise AssertionError(f"{label} output {k} ({dtype}): dtype {eo.dtype} != torch {tname}")
        if not grad or not float_idx:
            continue
        pairs = [
            (eo, to)
            for eo, to in zip(e_out, t_out, strict=True)
            if isinstance(eo, Tensor) and eo.requires_grad and to.requires_grad
        ]
        if not pairs:
            continue
        vs = [_upstream(rng, eo, dtype) for eo, _ in pairs]
        e_inputs = [e_args[i] for i in float_idx]
        t_inputs = [t_args[i] for i in float_idx]
        e_vs = [Tensor(v, device=eo._backend) for v, (eo, _) in zip(vs, pairs, strict=True)]  # on each output's backend
        e_g = _grad([eo for eo, _ in pairs], e_inputs, e_vs, allow_unused=True)
        t_g = torch.autograd.grad(
            [to for _, to in pairs], t_inputs, [torch.from_numpy(v) for v in vs], allow_unused=True
        )
        for j, (eg, tg) in enumerate(zip(e_g, t_g, strict=True)):
            if tg is None and eg is None:
                continue
            shape = args[float_idx[j]].shape
            eg_np = np.zeros(shape) if eg is None else _np(eg)
            tg_np = np.zeros(shape) if tg is None else _np(tg)
            assert_close(eg_np, tg_np, rtol=r * 10, atol=a * 10, msg=f"{label} grad of input {float_idx[j]} ({dtype})")

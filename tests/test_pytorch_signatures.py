"""Every parameter name PyTorch's function takes is one Ember's takes, for the functions whose names differed
(``gradcheck(func=...)``, ``set_default_dtype(d=...)``, ``clip_grad_norm_(foreach=...)``, ``jacrev(has_aux=...)``,
``torch.compile(name=...)`` ...); and the ones with a meaning do what PyTorch's do, run beside torch."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

PAIRS = [
    "autograd.gradcheck", "autograd.gradgradcheck", "nn.utils.clip_grad_norm_", "nn.utils.clip_grad_value_",
    "func.jacrev", "func.jacfwd", "func.jvp", "set_default_device", "set_default_dtype", "set_rng_state", "compile",
    "autograd.functional.jacobian", "autograd.functional.hessian", "autograd.functional.vjp",
    "autograd.functional.jvp", "autograd.functional.hvp", "autograd.functional.vhp", "nn.functional.relu",
    "nn.functional.softmax", "nn.functional.log_softmax", "nn.functional.softmin",
]  # fmt: skip


def _get(lib: Any, path: str) -> Any:
    obj = lib
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("path", PAIRS)
def test_pytorch_parameter_names_are_accepted(path: str) -> None:
    ours, theirs = inspect.signature(_get(ember, path)), inspect.signature(_get(torch, path))
    takes_more = any(p.kind == p.VAR_KEYWORD for p in ours.parameters.values())
    for name, p in theirs.parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or name.startswith("_"):
            continue
        assert name in ours.parameters or takes_more, f"{path}: PyTorch's {name!r} is missing"
        if name in ours.parameters and p.kind == p.POSITIONAL_OR_KEYWORD:
            t_pos = [n for n, q in theirs.parameters.items() if q.kind == q.POSITIONAL_OR_KEYWORD]
            o_pos = [n for n, q in ours.parameters.items() if q.kind == q.POSITIONAL_OR_KEYWORD]
            assert o_pos.index(name) == t_pos.index(name), f"{path}: {name!r} at another position"


def _with_meaning(lib: Any) -> list[Any]:
    f = lib.func
    x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)
    out: list[Any] = []
    jac, aux = f.jacrev(lambda v: ((v**2).sum() * v, v.mean()), has_aux=True)(x)
    out.append((np.round(np.asarray(jac.tolist()), 10).tolist(), float(aux)))
    jac, aux = f.jacfwd(lambda v: (v.sin(), {"n": v.norm()}), has_aux=True)(x)
    out.append((np.round(np.asarray(jac.tolist()), 10).tolist(), round(float(aux["n"]), 10)))
    _, t, aux = f.jvp(lambda v: (v.exp(), v.sum()), (x,), (lib.ones(3, dtype=lib.float64),), has_aux=True)
    out.append((np.round(np.asarray(t.tolist()), 10).tolist(), float(aux)))
    a = lib.tensor([0.5, -1.0], dtype=lib.float64, requires_grad=True)
    out.append(lib.autograd.gradgradcheck(lambda v: (v**3).sin(), (a,), (lib.tensor([1.0, 2.0], dtype=lib.float64),),
                                          fast_mode=True, raise_exception=True))  # fmt: skip
    out.append(lib.autograd.gradcheck(func=lambda v: v.tanh(), inputs=(a,), check_undefined_grad=False, nondet_tol=0.0))
    p = lib.nn.Parameter(lib.tensor([3.0, 4.0]))
    p.grad = lib.tensor([3.0, 4.0])
    out.append((float(lib.nn.utils.clip_grad_norm_([p], 1.0, foreach=True)), np.round(p.grad.tolist(), 6).tolist()))
    lib.nn.utils.clip_grad_value_([p], 0.5, foreach=False)
    out.append(np.round(p.grad.tolist(), 6).tolist())
    lib.set_default_dtype(lib.float64)
    out.append(str(lib.ones(1).dtype).split(".")[1])
    lib.set_default_dtype(lib.float32)
    before = ember.get_default_device()
    lib.set_default_device(device=None)
    out.append(str(lib.ones(1).device))
    ember.set_default_device(before)  # (make test-cuda's cuda, for the later tests; torch's: left off, as it was)
    # torch.compile's ``name=`` and ``recompile_limit=`` are newer than PyTorch 2.11 (TypeError there): Ember's is
    # passed them in any case
    params = inspect.signature(lib.compile).parameters
    named = {k: v for k, v in (("name", "double"), ("recompile_limit", 4)) if lib is ember or k in params}
    out.append(lib.compile(lambda v: v * 2, **named, backend="eager")(x).tolist())
    return out


def test_parameters_with_a_meaning_as_pytorch() -> None:
    assert _with_meaning(ember) == _with_meaning(torch)


def _tensor_forms(lib: Any) -> list[Any]:
    x = lib.arange(6.0).reshape(2, 3)
    out: list[Any] = [str(x.type(f"{lib.__name__}.IntTensor").dtype).split(".")[1]]
    out.append(str(x.type(lib.LongTensor).dtype).split(".")[1])
    try:
        x.type(f"{lib.__name__}.NoSuchTensor")
    except ValueError as e:
        out.append(str(e).replace(lib.__name__, "LIB"))
    w = lib.ones(2, requires_grad=True) * 3
    out.append(w.numpy(force=True).tolist())
    return out


def test_type_strings_and_numpy_force_as_pytorch() -> None:
    assert _tensor_forms(ember) == _tensor_forms(torch)


def test_comparing_with_none_a_string_or_a_list_is_pythons_as_in_pytorch() -> None:
    answers = []
    for lib in (ember, torch):
        x = lib.tensor([1.0, 2.0])
        answers.append((x == None, x != None, x == "a", x != "a", None == x, x == [1.0, 3.0], x != [1.0, 2.0]))  # noqa: E711, SIM300
        assert (x == 1.0).tolist() == [True, False]
    assert answers[0] == answers[1] == [(False, True, False, True, False, False, True)][0]

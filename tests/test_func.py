"""``ember.func`` beside ``torch.func``: the same calls under both libraries give the same values (grad, nested grad,
trees of parameters, argnums, has_aux, vjp, jacrev, hessian, vmap with in_dims/out_dims and over grad,
functional_call with gradients to the given tensors)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _transforms(lib):
    F = importlib.import_module(lib.__name__ + ".func")
    x = lib.tensor(np.array([0.3, -1.2, 2.0]))
    out = [F.grad(lambda v: (v.sin() * v**2).sum())(x)]
    nested = F.grad(lambda v: F.grad(lambda u: (u**3).sum())(v).sum())(x)
    out += [nested, np.array(nested.requires_grad)]
    params = {"w": lib.tensor(np.array([[1.0, 2.0], [0.5, -1.0]])), "b": lib.tensor(np.array([0.1, 0.2]))}
    gp, val = F.grad_and_value(lambda p, inp: ((inp @ p["w"] + p["b"]) ** 2).sum())(
        params, lib.tensor(np.array([[1.0, 3.0]]))
    )
    out += [gp["w"], gp["b"], val]
    out += list(F.grad(lambda a, b: (a * b).sum(), argnums=(0, 1))(x, x * 2))
    gx, aux = F.grad(lambda v: ((v**2).sum(), v.mean()), has_aux=True)(x)
    out += [gx, aux]
    value, fn = F.vjp(lambda a: a.exp() * 2, x)
    out += [value, fn(lib.ones(3, dtype=lib.float64))[0]]
    out += [F.jacrev(lambda a: a.sin() * a.sum())(x), F.hessian(lambda a: (a**3).sum() * a[0])(x)]
    xb = lib.tensor(np.arange(12.0).reshape(4, 3))
    out += [F.vmap(lambda r, s: (r * s).sum())(xb, xb)]
    out += [F.vmap(lambda r, c: r + c, in_dims=(1, None))(xb, lib.tensor(np.array([1.0, 2.0, 3.0, 4.0])))]
    out += list(F.vmap(lambda r: (r.sum(), r * 2), out_dims=(0, 1))(xb))
    out += [F.vmap(F.grad(lambda r: (r**2).sum()))(xb)]
    m = lib.nn.Linear(2, 2).double()
    new = {"weight": lib.tensor(np.array([[1.0, 0.0], [2.0, 1.0]]), requires_grad=True)}
    y = F.functional_call(m, new, (lib.tensor(np.array([[1.0, 2.0]])),))
    y.sum().backward()
    out += [y - m.bias, new["weight"].grad, np.array(m.weight is not new["weight"])]
    return [np.asarray(o.detach().numpy() if hasattr(o, "detach") else o) for o in out]


def test_transforms_match_torch_func():
    got, want = _transforms(ember), _transforms(torch)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=f"item {k}")


def test_functional_call_replaces_tied_weights_and_restores_them():
    emb = ember.nn.Embedding(3, 2)
    head = ember.nn.Linear(2, 3, bias=False)
    head.weight = emb.weight  # tied
    model = ember.nn.Sequential(emb, head)
    w = ember.ones(3, 2)
    out = ember.func.functional_call(model, {"0.weight": w}, (ember.tensor([1]),))
    np.testing.assert_allclose(out.numpy(), [[2.0, 2.0, 2.0]])  # both places read the given weight
    assert model[1].weight is emb.weight
    with pytest.raises(ValueError, match="no parameter"):
        ember.func.functional_call(model, {"nope": w}, (ember.tensor([1]),))
    assert ember.vmap is ember.func.vmap


def test_stack_module_state_vmap_over_dicts_and_linearize_like_pytorch() -> None:
    """The ensembling tutorial's pieces beside torch.func: stacked state (leaves that require grad, buffers
    without), vmap over a dict of stacked parameters, linearize's jvp."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    ws = [rng.standard_normal((3, 4)) for _ in range(2)]
    x = rng.standard_normal((5, 4))
    out = {}
    for t in (torch, ember):
        models = [t.nn.Linear(4, 3).double() for _ in ws]
        for m, w in zip(models, ws, strict=True):
            with t.no_grad():
                m.weight.copy_(t.tensor(w))
                m.bias.zero_()
        params, buffers = t.func.stack_module_state(models)
        assert sorted(params) == ["bias", "weight"] and buffers == {}
        assert params["weight"].requires_grad and params["weight"].grad_fn is None
        base = models[0]
        call = t.func.functional_call
        y = t.func.vmap(lambda p, b, v, m=base, c=call: c(m, (p, b), (v,)), in_dims=(0, 0, None))(
            params, buffers, t.tensor(x)
        )
        f = lambda v: (v**3).sum(-1)
        value, jvp_fn = t.func.linearize(f, t.tensor(x))
        out[t.__name__] = (y.detach().numpy(), value.detach().numpy(), jvp_fn(t.ones(5, 4, dtype=t.float64)).numpy())
    for a, b in zip(out["ember"], out["torch"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    with pytest.raises(RuntimeError, match="same class"):
        ember.func.stack_module_state([ember.nn.Linear(2, 2), ember.nn.Conv1d(2, 2, 1)])

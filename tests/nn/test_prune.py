"""``nn.utils.prune`` run the same way under PyTorch and Ember: masks, the re-parametrisation, iterative and
global pruning, ``remove``, gradients and errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
pytest.importorskip("torch.nn.utils.prune")  # a submodule PyTorch does not import itself


def _model(t: Any) -> Any:
    rng = np.random.default_rng(0)
    m = t.nn.Sequential(t.nn.Conv2d(2, 4, 3), t.nn.Flatten(), t.nn.Linear(4 * 4 * 4, 5)).double()
    with t.no_grad():
        for p in m.parameters():
            p.copy_(t.tensor(rng.standard_normal(tuple(p.shape))))
    return m


def _run(t: Any, how: str) -> tuple[dict[str, np.ndarray], list[str], np.ndarray]:
    """Prune a fresh model ``how``, train it two steps: (state, parameter names, the conv output)."""
    prune = t.nn.utils.prune
    m = _model(t)
    conv, lin = m[0], m[2]
    if how == "l1":
        prune.l1_unstructured(conv, "weight", amount=0.3)
        prune.l1_unstructured(lin, "bias", amount=2)
    elif how == "ln":
        prune.ln_structured(conv, "weight", amount=0.5, n=2, dim=0)
        prune.ln_structured(lin, "weight", amount=2, n=1, dim=1)
    elif how == "iterative":  # a container: the second method acts on what the first left
        prune.l1_unstructured(conv, "weight", amount=0.2)
        prune.ln_structured(conv, "weight", amount=0.25, n=float("inf"), dim=1)
        prune.l1_unstructured(conv, "weight", amount=5)
    elif how == "global":
        prune.global_unstructured([(conv, "weight"), (lin, "weight")], pruning_method=prune.L1Unstructured,
                                  amount=0.4)  # fmt: skip
    elif how == "custom+remove":
        mask = t.tensor((np.arange(5) % 2).astype(np.float64))
        prune.custom_from_mask(lin, "bias", mask)
        prune.l1_unstructured(conv, "weight", amount=0.5)
        prune.remove(conv, "weight")
    elif how == "importance":
        scores = t.tensor(np.arange(4 * 2 * 3 * 3, dtype=np.float64)[::-1].copy().reshape(4, 2, 3, 3))
        prune.l1_unstructured(conv, "weight", amount=10, importance_scores=scores)
    opt = t.optim.SGD(m.parameters(), lr=0.01)
    x = t.tensor(np.random.default_rng(1).standard_normal((3, 2, 6, 6)))
    for _ in range(2):
        loss = m(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    state = {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}
    names = [n for n, _ in m.named_parameters()]
    return state, names, conv(x).detach().numpy()


@pytest.mark.parametrize("how", ["l1", "ln", "iterative", "global", "custom+remove", "importance"])
def test_pruning_matches_pytorch(how: str) -> None:
    want, want_names, want_y = _run(torch, how)
    got, got_names, got_y = _run(ember, how)
    assert list(got) == list(want) and got_names == want_names
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-10, atol=1e-12, err_msg=k)
        if k.endswith("_mask"):
            assert (got[k] == want[k]).all(), k
    np.testing.assert_allclose(got_y, want_y, rtol=1e-10, atol=1e-12)


def test_pruned_weight_is_recomputed_and_gradients_are_masked() -> None:
    prune = ember.nn.utils.prune
    lin = ember.nn.Linear(4, 3)
    prune.l1_unstructured(lin, "weight", amount=6)
    assert prune.is_pruned(lin) and not isinstance(lin.weight, ember.nn.Parameter)
    assert [type(h).__name__ for h in lin._forward_pre_hooks.values()] == ["L1Unstructured"]
    lin(ember.ones(2, 4)).sum().backward()
    mask = lin.weight_mask.numpy()
    assert int((mask == 0).sum()) == 6
    assert (lin.weight_orig.grad.numpy()[mask == 0] == 0).all() and (lin.weight_orig.grad.numpy() != 0).any()
    with ember.no_grad():
        lin.weight_orig.add_(1.0)
    lin(ember.ones(1, 4))  # the hook recomputes weight from weight_orig
    np.testing.assert_array_equal(lin.weight.detach().numpy(), lin.weight_orig.detach().numpy() * mask)
    prune.remove(lin, "weight")
    assert isinstance(lin.weight, ember.nn.Parameter) and not prune.is_pruned(lin)
    assert sorted(n for n, _ in lin.named_parameters()) == ["bias", "weight"] and not list(lin.named_buffers())


@pytest.mark.parametrize("lib", ["torch", "ember"])
def test_pruning_errors(lib: str) -> None:
    t = torch if lib == "torch" else ember
    prune = t.nn.utils.prune
    lin = t.nn.Linear(3, 2)
    with pytest.raises(ValueError):
        prune.l1_unstructured(lin, "weight", amount=1.5)
    with pytest.raises(ValueError):
        prune.l1_unstructured(lin, "weight", amount=7)
    assert sorted(n for n, _ in lin.named_parameters()) == ["bias", "weight"]  # put back after the failure
    assert not list(lin.named_buffers()) and not prune.is_pruned(lin)
    with pytest.raises(TypeError):
        prune.l1_unstructured(lin, "weight", amount="half")
    with pytest.raises(ValueError):
        prune.ln_structured(lin, "bias", amount=1, n=2, dim=0)  # a 1-d tensor has no channels
    with pytest.raises(ValueError):
        prune.remove(lin, "weight")
    with pytest.raises(TypeError):
        prune.global_unstructured([(lin, "weight")], pruning_method=prune.LnStructured, amount=1, n=2, dim=0)


def test_parameters_and_buffers_dicts_like_pytorch() -> None:
    for t in (torch, ember):
        bn = t.nn.BatchNorm1d(3)
        assert list(bn._parameters) == ["weight", "bias"]
        assert list(bn._buffers) == ["running_mean", "running_var", "num_batches_tracked"]
        bn._parameters["weight"] = t.nn.Parameter(t.full((3,), 2.0))
        assert list(bn._parameters) == ["weight", "bias"] and float(bn.weight.detach()[0]) == 2.0
        del bn._parameters["bias"]
        bn._parameters["scale"] = t.nn.Parameter(t.ones(3))
        bn._buffers["extra"] = t.zeros(1)
        assert [n for n, _ in bn.named_parameters()] == ["weight", "scale"]
        assert "extra" in dict(bn.named_buffers()) and "bias" not in bn._parameters
        with pytest.raises(KeyError):
            bn._buffers["weight"]
